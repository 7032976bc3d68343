"""The seeds' data set: x = 1 -> y = 1, ten thousand times, in batches of 10.

``Dataset.from_tensors(([1.], [1.])).repeat(10000).batch(10)`` shaped as
``({"x": [batch, 1]}, [batch, 1])``; what the `linear` model_fn learns::

    python -m harness.main --model_fn=linear --input_fn=constant \\
        --model_dir=/tmp/linear --train_steps=100
"""

from harness import errors
from harness._tf import tf
import input_fns

__all__ = ["DEFAULT_PARAMS", "DEFAULT_BATCH_SIZE", "make_input_fn"]

DEFAULT_BATCH_SIZE = 10
DEFAULT_PARAMS = {
    "num_examples": 10000,  # per pass; TRAIN repeats the pass forever
}

_SOURCE = "input_fns.constant"


def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  """Returns an input_fn of constant (x=1, y=1) examples.

  Args:
    mode: ModeKeys.TRAIN (repeated forever), EVAL or PREDICT (one pass of
      `num_examples`).
    data_dir: ignored (accepted for the common contract).
    batch_size: global batch size (default 10).
    params: overrides of `DEFAULT_PARAMS`.

  Returns:
    `input_fn(input_context=None)` -> Dataset of
    ({"x": float32 [b, 1]}, float32 [b, 1]).

  Raises:
    InputFnError: num_examples is not positive.
  """
  del data_dir  # Unused: the data is constant.
  input_fns.check_mode(mode, _SOURCE)
  batch_size = input_fns.check_batch_size(
      batch_size, DEFAULT_BATCH_SIZE, _SOURCE)
  num_examples = int(
      input_fns.merge_params(DEFAULT_PARAMS, params)["num_examples"])
  if num_examples <= 0:
    raise errors.InputFnError(
        f"{_SOURCE}: params num_examples={num_examples} must be > 0.")

  def input_fn(input_context=None):
    dataset = tf.data.Dataset.from_tensors(([1.0], [1.0])).repeat(num_examples)
    dataset, per_replica_batch = input_fns.distribute(
        dataset, batch_size, input_context)
    if mode == input_fns.TRAIN:
      dataset = dataset.repeat()
    return dataset.batch(per_replica_batch).map(lambda x, y: ({"x": x}, y))

  return input_fn
