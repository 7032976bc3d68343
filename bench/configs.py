"""One benchmark configuration, run in a child process of `bench.perf.run`.

    python -m bench.configs --runner=harness --model=mlp --batch_size=32 \\
        --warmup_steps=100 --timed_steps=2000 --t0=$(date +%s.%N)

prints one JSON line: examples/s over the timed steps (after the warm-up
steps), seconds from `--t0` (the parent's clock just before it started this
process) to the end of the first training step, and the peak RSS. Runners:

* ``harness``: `harness.Estimator.train` with a default-ish RunConfig.
* ``bare``: the same graph driven by a hand-written
  ``session.run(train_op)`` loop (the floor of graph mode).
* ``keras3``: Keras 3 ``model.fit`` (``import keras``; the parent leaves
  TF_USE_LEGACY_KERAS unset for this child).
* ``tf_keras``: tf_keras (Keras 2) ``model.fit``.

All runners train the same network with Adam(1e-3) and a mean sparse softmax
cross entropy on the same in-memory data (fixed seed),
``tf.data.Dataset.from_tensor_slices(...).repeat().batch(batch_size)``.
TensorFlow is imported inside the runner, so the environment the parent set
(TF_USE_LEGACY_KERAS) decides which Keras `tf.keras` is.
"""

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

__all__ = ["MODELS", "RUNNERS", "NUM_EXAMPLES", "LEARNING_RATE", "SEED",
           "Clock", "data", "v1_train_op", "compiled_keras_model", "fit_timed",
           "main"]

NUM_EXAMPLES = 8192
LEARNING_RATE = 1e-3
MODELS = ("mlp", "cnn")
SEED = 1234


def data(model):
  """Fixed-seed MNIST-shaped arrays: (images float32, labels int64)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(SEED)
  shape = (NUM_EXAMPLES, 784) if model == "mlp" else (NUM_EXAMPLES, 28, 28, 1)
  images = rng.random(shape, dtype=np.float32)
  labels = rng.integers(0, 10, size=NUM_EXAMPLES).astype(np.int64)
  return images, labels


def _v1_logits(tf, model, images):
  """The network in tf.compat.v1.layers (harness and bare runners)."""
  layers = tf.compat.v1.layers
  if model == "mlp":
    net = layers.dense(images, 256, activation=tf.nn.relu, name="dense1")
    net = layers.dense(net, 256, activation=tf.nn.relu, name="dense2")
  else:
    net = layers.conv2d(images, 32, 3, activation=tf.nn.relu, name="conv1")
    net = layers.max_pooling2d(net, 2, 2, name="pool1")
    net = layers.flatten(net, name="flatten")
    net = layers.dense(net, 64, activation=tf.nn.relu, name="dense1")
  return layers.dense(net, 10, name="logits")


def v1_train_op(tf, model, images, labels):
  logits = _v1_logits(tf, model, images)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.AdamOptimizer(LEARNING_RATE).minimize(
      loss, global_step=tf.compat.v1.train.get_or_create_global_step())
  return loss, train_op


class Clock:
  """Marks the first step, the end of the warm-up and the last timed step.

  With `steps_per_loop=K` one `session.run` trains K steps, so the clock
  is told K steps at a time; the warm-up and timed step counts must then be
  multiples of K (else the timed window would start or end mid-run).
  """

  def __init__(self, t0, warmup_steps, timed_steps, steps_per_loop=1):
    for name, value in (("warmup_steps", warmup_steps),
                        ("timed_steps", timed_steps)):
      assert value % steps_per_loop == 0, (
          f"--{name}={value} is not a multiple of --steps_per_loop="
          f"{steps_per_loop}: one session.run trains {steps_per_loop} steps, "
          f"so the timed window must start and end on a run boundary. Fix: "
          f"use a multiple of {steps_per_loop}.")
    self.t0 = t0
    self.warmup_steps = warmup_steps
    self.total_steps = warmup_steps + timed_steps
    self.steps = 0
    self.first_step_end = None
    self.timed_start = None
    self.timed_end = None

  def step_done(self, count=1):
    """Records that `count` more steps (one run) have just ended."""
    now = time.time()
    before = self.steps
    self.steps += count
    if before == 0:
      self.first_step_end = now
    if before < self.warmup_steps <= self.steps:
      self.timed_start = now
    if before < self.total_steps <= self.steps:
      self.timed_end = now


def _run_harness(args, clock):
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  import harness  # pylint: disable=g-import-not-at-top
  images, labels = data(args.model)

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(
        ({"x": images}, labels)).repeat().batch(args.batch_size)

  def model_fn(features, labels, mode):
    loss, train_op = v1_train_op(tf, args.model, features["x"], labels)
    return harness.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

  class ClockHook(tf.compat.v1.train.SessionRunHook):

    def after_run(self, run_context, run_values):
      # One session.run is steps_per_loop steps (the loop ends early only
      # at max_steps or a step-based checkpoint; there are neither here
      # before the last timed step).
      clock.step_done(args.steps_per_loop)

  model_dir = tempfile.mkdtemp(prefix="bench_harness_")
  # Defaults except log/summary cadence spelled out (both are 2.15's
  # defaults): a checkpoint every 600 s (so one at step 0 and one at the
  # end), summaries and steps/s every 100 steps.
  config = harness.RunConfig(
      model_dir=model_dir, log_step_count_steps=100, save_summary_steps=100,
      steps_per_loop=args.steps_per_loop)
  estimator = harness.Estimator(model_fn=model_fn, config=config)
  try:
    estimator.train(input_fn, hooks=[ClockHook()],
                    max_steps=clock.total_steps)
    # Each run counted steps_per_loop steps: true only if no run ended early.
    final_step = int(estimator.get_variable_value("global_step"))
    if final_step != clock.steps:
      raise RuntimeError(
          f"the clock counted {clock.steps} steps but training ended at "
          f"global step {final_step}: some session.run made fewer than "
          f"steps_per_loop={args.steps_per_loop} steps.")
  finally:
    # ~200 MB a run: the in-memory data is a graph constant, written into
    # graph.pbtxt, the events file and each .meta.
    shutil.rmtree(model_dir, ignore_errors=True)


def _run_bare(args, clock):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  images, labels = data(args.model)
  with tf.Graph().as_default():
    tf.compat.v1.random.set_random_seed(SEED)
    dataset = tf.data.Dataset.from_tensor_slices(
        (images, labels)).repeat().batch(args.batch_size)
    x, y = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    _, train_op = v1_train_op(tf, args.model, x, y)
    # The session options harness uses (get_default_session_config), so the
    # ratio measures the loop, not grappler settings.
    graph_options = tf.compat.v1.GraphOptions()
    rewrite = graph_options.rewrite_options
    rewrite.meta_optimizer_iterations = rewrite.ONE
    config = tf.compat.v1.ConfigProto(
        allow_soft_placement=True, graph_options=graph_options)
    with tf.compat.v1.Session(config=config) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      for _ in range(clock.total_steps):
        session.run(train_op)
        clock.step_done()


def _keras_model(keras, model):
  layers = keras.layers
  if model == "mlp":
    stack = [keras.Input((784,)), layers.Dense(256, activation="relu"),
             layers.Dense(256, activation="relu")]
  else:
    stack = [keras.Input((28, 28, 1)),
             layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
             layers.Flatten(), layers.Dense(64, activation="relu")]
  return keras.Sequential(stack + [layers.Dense(10)])


def compiled_keras_model(keras, model):
  """The bench `model` as a tf-keras model, compiled with the bench's Adam."""
  compiled = _keras_model(keras, model)
  compiled.compile(
      optimizer=keras.optimizers.Adam(LEARNING_RATE),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  return compiled


def fit_timed(keras, model, dataset, clock):
  """`model.fit` for `clock.total_steps` steps, each step told to `clock`."""

  class ClockCallback(keras.callbacks.Callback):

    def on_train_batch_end(self, batch, logs=None):
      clock.step_done()

  model.fit(dataset, epochs=1, steps_per_epoch=clock.total_steps, verbose=0,
            callbacks=[ClockCallback()])


def _run_keras(args, clock, keras):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  images, labels = data(args.model)
  keras.utils.set_random_seed(SEED)
  dataset = tf.data.Dataset.from_tensor_slices(
      (images, labels)).repeat().batch(args.batch_size)
  fit_timed(keras, compiled_keras_model(keras, args.model), dataset, clock)


def _run_keras3(args, clock):
  if os.environ.get("TF_USE_LEGACY_KERAS"):
    raise RuntimeError("keras3 runner needs TF_USE_LEGACY_KERAS unset.")
  import keras  # pylint: disable=g-import-not-at-top
  if not keras.__version__.startswith("3"):
    raise RuntimeError(f"expected Keras 3, got {keras.__version__}.")
  _run_keras(args, clock, keras)


def _run_tf_keras(args, clock):
  import tf_keras  # pylint: disable=g-import-not-at-top
  _run_keras(args, clock, tf_keras)


RUNNERS = {
    "harness": _run_harness,
    "bare": _run_bare,
    "keras3": _run_keras3,
    "tf_keras": _run_tf_keras,
}


def _parse(argv):
  parser = argparse.ArgumentParser(prog="python -m bench.configs")
  parser.add_argument("--runner", choices=sorted(RUNNERS), required=True)
  parser.add_argument("--model", choices=MODELS, required=True)
  parser.add_argument("--batch_size", type=int, required=True)
  parser.add_argument("--warmup_steps", type=int, required=True)
  parser.add_argument("--timed_steps", type=int, required=True)
  parser.add_argument("--steps_per_loop", type=int, default=1)
  parser.add_argument("--t0", type=float, default=None,
                      help="parent's time.time() before starting us")
  return parser.parse_args(argv)


def main(argv):
  """Runs one configuration; prints its result as one JSON line."""
  args = _parse(argv)
  t0 = args.t0 if args.t0 is not None else time.time()
  if args.steps_per_loop != 1 and args.runner != "harness":
    raise SystemExit(f"--steps_per_loop={args.steps_per_loop} applies to "
                     "--runner=harness only.")
  # At least one run of warm-up (the first run builds and warms up).
  warmup_steps = args.warmup_steps or args.steps_per_loop
  clock = Clock(t0, warmup_steps, args.timed_steps, args.steps_per_loop)
  result = {"runner": args.runner, "model": args.model,
            "batch_size": args.batch_size,
            "steps_per_loop": args.steps_per_loop}
  try:
    RUNNERS[args.runner](args, clock)
  except Exception as e:  # pylint: disable=broad-except
    # Reported as data: e.g. NotSupportedError for steps_per_loop > 1.
    result["error"] = f"{type(e).__name__}: {e}"
  else:
    if clock.timed_end is None:
      result["error"] = (f"ran {clock.steps} steps, expected "
                         f"{clock.total_steps}")
    else:
      seconds = clock.timed_end - clock.timed_start
      result["examples_per_sec"] = (
          args.timed_steps * args.batch_size / seconds)
      result["step_ms"] = 1000.0 * seconds / args.timed_steps
      result["first_step_secs"] = clock.first_step_end - t0
  # ru_maxrss is in KiB on Linux.
  result["peak_rss_mib"] = (
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
  print("BENCH_RESULT " + json.dumps(result), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
