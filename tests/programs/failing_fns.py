"""model_fns and input_fn factories that fail at run time, for
tests/test_failures.py (issue 19.4 and 19.5). Each makes one mistake or
meets one fault a user meets, e.g.::

    python -m harness.main \\
        --model_fn=tests.programs.failing_fns:minimize_without_global_step \\
        --input_fn=constant --mode=train --max_steps=5 --model_dir=/tmp/m

and the test checks the one line `harness.main` prints.
"""

import threading

from harness._tf import tf
from harness.spec import EstimatorSpec
from harness.spec import ModeKeys

__all__ = [
    "DEFAULT_PARAMS", "minimize_without_global_step", "wide_linear",
    "make_raising_py_function_input_fn", "make_nan_labels_input_fn",
    "make_wide_input_fn", "make_hung_input_fn",
]

DEFAULT_PARAMS = {"learning_rate": 0.1, "width": 1}


def _train_spec(mode, loss, train_op, predictions):
  return EstimatorSpec(
      mode, loss=loss, train_op=train_op,
      predictions=predictions if mode == ModeKeys.PREDICT else None)


def minimize_without_global_step(features, labels, mode, params):
  """The most common Estimator mistake: `minimize(loss)` alone."""
  predictions = tf.compat.v1.layers.dense(
      tf.cast(features["x"], tf.float32), 1, name="linear")
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(
      params["learning_rate"]).minimize(loss)  # No global_step=.
  return _train_spec(mode, loss, train_op, predictions)


def wide_linear(features, labels, mode, params):
  """A linear model with a [width, 1] kernel: checkpoints of width*4 bytes."""
  x = tf.cast(features["x"], tf.float32)
  kernel = tf.compat.v1.get_variable(
      "kernel", [params["width"], 1], initializer=tf.zeros_initializer())
  predictions = tf.matmul(tf.tile(x[:, :1], [1, params["width"]]), kernel)
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(
      params["learning_rate"]).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
  return _train_spec(mode, loss, train_op, predictions)


def _parse_record(index):
  raise ValueError(f"record {int(index)} has 2 columns, expected 3")


def make_raising_py_function_input_fn(mode, *, data_dir=None, batch_size=None,
                                      params=None):
  """An input_fn whose tf.data parser (a py_function) raises at run time."""
  del mode, data_dir, params
  batch_size = batch_size or 4

  def input_fn():
    dataset = tf.data.Dataset.range(100).map(
        lambda i: tf.py_function(_parse_record, [i], tf.float32))
    return dataset.map(lambda v: (tf.reshape(v, [1]), tf.reshape(v, [1]))).batch(
        batch_size).map(lambda x, y: ({"x": x}, y))

  return input_fn


def make_nan_labels_input_fn(mode, *, data_dir=None, batch_size=None,
                             params=None):
  """An input_fn whose labels are NaN (a broken CSV column, say)."""
  del mode, data_dir, params
  batch_size = batch_size or 4

  def input_fn():
    dataset = tf.data.Dataset.from_tensors(([1.0], [float("nan")]))
    return dataset.repeat().batch(batch_size).map(lambda x, y: ({"x": x}, y))

  return input_fn


def make_wide_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  """Constant features [1.0] and labels [2.0], repeated."""
  del mode, data_dir, params
  batch_size = batch_size or 4

  def input_fn():
    dataset = tf.data.Dataset.from_tensors(([1.0], [2.0]))
    return dataset.repeat().batch(batch_size).map(lambda x, y: ({"x": x}, y))

  return input_fn


def make_hung_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  """An input_fn whose generator never yields (a stuck source, say)."""
  del mode, data_dir, params
  batch_size = batch_size or 4

  def hang():
    threading.Event().wait()  # Forever: only the process's end stops it.
    yield [1.0], [1.0]

  def input_fn():
    spec = tf.TensorSpec([1], tf.float32)
    dataset = tf.data.Dataset.from_generator(
        hang, output_signature=(spec, spec))
    return dataset.batch(batch_size).map(lambda x, y: ({"x": x}, y))

  return input_fn
