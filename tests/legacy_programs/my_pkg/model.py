"""A model_fn written for tf.estimator 2.15, handed to the harness binary.

    python -m harness.main \\
        --model_fn=tests.legacy_programs.my_pkg.model:model_fn \\
        --input_fn=tests.legacy_programs.my_pkg.model:make_input_fn \\
        --mode=train_and_evaluate --max_steps=4 --eval_steps=1 --model_dir=/tmp/m

It uses `tf.estimator.ModeKeys` at import time and returns
`tf.estimator.EstimatorSpec`, as such modules do; it never imports harness.
"""

import tensorflow as tf
from tensorflow_estimator.python.estimator import model_fn as model_fn_lib

DEFAULT_PARAMS = {"learning_rate": 0.1}
DEFAULT_BATCH_SIZE = 4
_TRAIN = tf.estimator.ModeKeys.TRAIN  # Read when the module is imported.


def model_fn(features, labels, mode, params):
  predictions = tf.compat.v1.layers.dense(features["x"], 1, name="linear")
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = None
  if mode == _TRAIN:
    train_op = tf.compat.v1.train.GradientDescentOptimizer(
        params["learning_rate"]).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
  return model_fn_lib.EstimatorSpec(mode, loss=loss, train_op=train_op)


def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  del mode, data_dir, params

  def input_fn():
    dataset = tf.data.Dataset.from_tensors(([1.0], [2.0]))
    return dataset.repeat().batch(batch_size or DEFAULT_BATCH_SIZE).map(
        lambda x, y: ({"x": x}, y))

  return input_fn


def input_fn(mode, params):
  """tf.estimator 2.15's own input_fn, not a factory: --input_fn=...:input_fn."""
  del mode, params
  dataset = tf.data.Dataset.from_tensors(([1.0], [2.0]))
  return dataset.repeat().batch(DEFAULT_BATCH_SIZE).map(
      lambda x, y: ({"x": x}, y))
