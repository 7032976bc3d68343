"""A model_fn and input_fn whose training session is slow to close, for
tests/test_exit_pause.py::

    python -m harness.main --mode=train --max_steps=3 --model_dir=/tmp/m \\
        --model_fn=tests.programs.slow_close_fns:model_fn \\
        --input_fn=tests.programs.slow_close_fns:make_input_fn

The input pipeline's elements after the first `fast_elements` are held in
a `tf.py_function` until `hold_secs` after the training hooks ended (at
most `_MAX_HOLD_SECS`): the session's close waits for that element, as it
waits for a shuffle buffer refilling in a real pipeline.
"""

import threading
import time

from harness._tf import tf
from harness.spec import EstimatorSpec

__all__ = ["DEFAULT_PARAMS", "model_fn", "make_input_fn"]

DEFAULT_PARAMS = {"fast_elements": 3, "hold_secs": 3.0}
_MAX_HOLD_SECS = 120.0
_hooks_ended_at = []  # time.monotonic() of the training hooks' end.
_ended = threading.Event()


class _EndHook(tf.compat.v1.train.SessionRunHook):

  def end(self, session):
    del session
    _hooks_ended_at.append(time.monotonic())
    _ended.set()


def model_fn(features, labels, mode, params):
  """A one-weight linear model; its training hook marks the loop's end."""
  del params
  predictions = tf.compat.v1.layers.dense(features["x"], 1, name="linear")
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return EstimatorSpec(mode, loss=loss, train_op=train_op,
                       training_hooks=[_EndHook()])


def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  """(x=1, y=1) examples; those after `fast_elements` are held (above)."""
  del mode, data_dir, batch_size
  params = {**DEFAULT_PARAMS, **(params or {})}

  def element(index):
    if int(index) >= int(params["fast_elements"]):
      _ended.wait(_MAX_HOLD_SECS)
      if _hooks_ended_at:
        time.sleep(max(0.0, _hooks_ended_at[0] + float(params["hold_secs"])
                       - time.monotonic()))
    return 1.0

  def input_fn():
    dataset = tf.data.Dataset.range(1 << 30).map(
        lambda i: tf.py_function(element, [i], tf.float32))
    return dataset.map(lambda v: ({"x": tf.reshape(v, [1, 1])},
                                  tf.reshape(v, [1, 1])))

  return input_fn
