"""A learnable MNIST-shaped data set made on the fly (no files, no network).

Each of the 10 classes has a fixed random 28x28 prototype (about 30% of its
pixels on); an example is its class prototype plus Gaussian noise, clipped to
[0, 1]. Everything is drawn with stateless random ops from `seed`, so every
process and every run sees the same examples, and nothing is embedded in the
graph. TRAIN and EVAL draw disjoint example indices::

    python -m harness.main --model_fn=mnist_cnn --input_fn=synthetic \\
        --model_dir=/tmp/synthetic --params=train_examples=4000
"""

from harness import errors
from harness._tf import tf
import input_fns

__all__ = ["DEFAULT_PARAMS", "DEFAULT_BATCH_SIZE", "make_input_fn"]

DEFAULT_BATCH_SIZE = 64
DEFAULT_PARAMS = {
    "train_examples": 8000,
    "eval_examples": 2000,
    "seed": 42,
    "noise_stddev": 0.3,
    "shuffle_buffer": 10000,  # examples; TRAIN only
}

_NUM_CLASSES = 10
_SOURCE = "input_fns.synthetic"


def _example_fn(seed, noise_stddev):
  """Returns a function mapping an example index to (features, label)."""
  prototypes = tf.cast(
      tf.random.stateless_uniform(
          [_NUM_CLASSES, 28, 28, 1], seed=[seed, 0]) < 0.3, tf.float32)

  def example(index):
    seed_t = tf.constant(seed, tf.int64)
    label = tf.random.stateless_uniform(
        [], seed=tf.stack([seed_t, 1 + 2 * index]), maxval=_NUM_CLASSES,
        dtype=tf.int64)
    noise = tf.random.stateless_normal(
        [28, 28, 1], seed=tf.stack([seed_t, 2 + 2 * index]),
        stddev=noise_stddev)
    image = tf.clip_by_value(
        tf.gather(prototypes, label) * 0.8 + noise, 0.0, 1.0)
    return {"image": image}, label

  return example


def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  """Returns an input_fn over the synthetic digits.

  Args:
    mode: ModeKeys.TRAIN (shuffled, repeated), EVAL or PREDICT (one pass).
    data_dir: ignored (accepted for the common contract).
    batch_size: global batch size (default `DEFAULT_BATCH_SIZE`).
    params: overrides of `DEFAULT_PARAMS`: train_examples / eval_examples
      (set sizes), seed, noise_stddev, shuffle_buffer.

  Returns:
    `input_fn(input_context=None)` -> Dataset of
    ({"image": float32 [b, 28, 28, 1]}, int64 [b]).

  Raises:
    InputFnError: a non-positive size or negative noise.
  """
  del data_dir  # Unused: the data is generated.
  input_fns.check_mode(mode, _SOURCE)
  batch_size = input_fns.check_batch_size(
      batch_size, DEFAULT_BATCH_SIZE, _SOURCE)
  params = input_fns.merge_params(DEFAULT_PARAMS, params)
  train_examples = int(params["train_examples"])
  eval_examples = int(params["eval_examples"])
  noise_stddev = float(params["noise_stddev"])
  if train_examples <= 0 or eval_examples <= 0 or noise_stddev < 0:
    raise errors.InputFnError(
        f"{_SOURCE}: params train_examples={train_examples}, "
        f"eval_examples={eval_examples} must be > 0 and "
        f"noise_stddev={noise_stddev} >= 0.")
  if mode == input_fns.TRAIN:
    start, count = 0, train_examples
  else:
    start, count = train_examples, eval_examples
  seed = int(params["seed"])
  shuffle_buffer = int(params["shuffle_buffer"])

  def input_fn(input_context=None):
    dataset = tf.data.Dataset.range(start, start + count)
    dataset, per_replica_batch = input_fns.distribute(
        dataset, batch_size, input_context)
    dataset = dataset.map(_example_fn(seed, noise_stddev),
                          num_parallel_calls=tf.data.AUTOTUNE).cache()
    if mode == input_fns.TRAIN:
      if shuffle_buffer > 1:
        dataset = dataset.shuffle(shuffle_buffer)
      dataset = dataset.repeat()
    return dataset.batch(per_replica_batch).prefetch(tf.data.AUTOTUNE)

  return input_fn
