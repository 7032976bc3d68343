"""A model_fn whose checkpoint save is slow and an input_fn whose
evaluation is slow, for tests/test_stop_stages.py: a stop signal during a
save or an evaluation, e.g.::

    python -m harness.main \\
        --model_fn=tests.programs.slow_stages:slow_save_linear \\
        --input_fn=tests.programs.slow_stages:make_slow_eval_input_fn \\
        --mode=train --max_steps=100000 --stop_timeout_secs=1 --model_dir=/tmp/m

Each slow stage logs `slow | ... begins` when it starts, so a test can
send its signal at that moment.
"""

import time

from absl import logging

from harness._tf import tf
from harness.spec import EstimatorSpec
from harness.spec import ModeKeys

__all__ = ["DEFAULT_PARAMS", "slow_save_linear", "make_slow_eval_input_fn"]

DEFAULT_PARAMS = {"learning_rate": 0.01, "save_steps": 20,
                  "slow_save_secs": 6.0, "eval_batch_secs": 0.5}


class _SlowSave(tf.compat.v1.train.CheckpointSaverListener):
  """Makes the first save after step 0 take `secs` longer (as a big model's
  save on a slow disk does)."""

  def __init__(self, secs):
    self._secs = secs
    self._done = False

  def before_save(self, session, global_step_value):
    del session
    if self._done or not global_step_value:
      return
    self._done = True
    logging.info("slow | checkpoint save at step %d begins (%g s)",
                 global_step_value, self._secs)
    deadline = time.monotonic() + self._secs
    while time.monotonic() < deadline:  # Signals interrupt a sleep.
      time.sleep(max(0.0, deadline - time.monotonic()))


def slow_save_linear(features, labels, mode, params, config):
  """A linear model whose own CheckpointSaverHook saves every `save_steps`,
  the first save after step 0 `slow_save_secs` slow."""
  predictions = tf.compat.v1.layers.dense(
      tf.cast(features["x"], tf.float32), 1, name="linear")
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(
      params["learning_rate"]).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
  saver_hook = tf.compat.v1.train.CheckpointSaverHook(
      config.model_dir, save_steps=params["save_steps"],
      listeners=[_SlowSave(params["slow_save_secs"])])
  return EstimatorSpec(
      mode, loss=loss, train_op=train_op,
      predictions=predictions if mode == ModeKeys.PREDICT else None,
      training_chief_hooks=[saver_hook] if mode == ModeKeys.TRAIN else [])


def make_slow_eval_input_fn(mode, *, data_dir=None, batch_size=None,
                            params=None):
  """Constant examples; in EVAL mode each batch takes `eval_batch_secs`."""
  del data_dir
  batch_size = batch_size or 4
  secs = float((params or {}).get("eval_batch_secs",
                                  DEFAULT_PARAMS["eval_batch_secs"]))

  def slow(x):
    time.sleep(secs)
    return x

  def input_fn():
    dataset = tf.data.Dataset.from_tensors(
        ([0.1, 0.2], [0.3])).repeat().batch(batch_size)
    if mode == ModeKeys.EVAL:
      logging.info("slow | evaluation input: %g s a batch", secs)
      dataset = dataset.map(lambda x, y: (
          tf.numpy_function(slow, [x], tf.float32), y))
    return dataset.map(lambda x, y: ({"x": tf.reshape(x, [-1, 2])},
                                     tf.reshape(y, [-1, 1])))

  return input_fn
