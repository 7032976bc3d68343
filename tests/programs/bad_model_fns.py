"""Broken model_fns and input_fn factories for tests/test_bad_input.py.

Each one makes a single mistake a user makes; the test runs it through the
binary, e.g.::

    python -m harness.main \\
        --model_fn=tests.programs.bad_model_fns:returns_dict \\
        --input_fn=constant --mode=train --max_steps=2 --model_dir=/tmp/bad

and checks that harness answers with one clear message.
"""

from harness._tf import tf
from harness.spec import EstimatorSpec
from harness.spec import ModeKeys

__all__ = [
    "returns_dict", "train_spec_without_train_op", "raises_value_error",
    "labels_of_width_3", "make_list_of_3_input_fn",
    "make_raising_input_fn", "make_wide_labels_input_fn", "rank_2_loss",
]


def _predictions(features):
  return tf.compat.v1.layers.dense(
      tf.cast(features["x"], tf.float32), 1, name="linear")


def returns_dict(features, labels, mode, params):
  """Returns a dict instead of an EstimatorSpec."""
  del labels, mode, params
  return {"predictions": _predictions(features)}


def train_spec_without_train_op(features, labels, mode, params):
  """Builds a TRAIN EstimatorSpec with a loss but no train_op."""
  del params
  loss = tf.compat.v1.losses.mean_squared_error(labels, _predictions(features))
  return EstimatorSpec(mode, loss=loss)


def raises_value_error(features, labels, mode, params):
  """Raises the user's own ValueError while building the graph."""
  del features, labels, mode
  raise ValueError(f"hidden_units must be positive, got {params.get('x', -3)}")


def labels_of_width_3(features, labels, mode, params):
  """Compares [batch, 1] predictions with [batch, 3] labels."""
  del params
  predictions = _predictions(features)
  labels = tf.concat([labels, labels, labels], axis=1)  # [batch, 3]
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return EstimatorSpec(mode, loss=loss, train_op=train_op,
                       predictions=predictions if mode == ModeKeys.PREDICT
                       else None)


def make_list_of_3_input_fn(mode, *, data_dir=None, batch_size=None,
                            params=None):
  """An input_fn factory whose input_fn returns [features, labels, extra]."""
  del mode, data_dir, batch_size, params

  def input_fn():
    x = tf.ones([4, 1])
    return [{"x": x}, x, x]

  return input_fn


def make_raising_input_fn(mode, *, data_dir=None, batch_size=None,
                          params=None):
  """An input_fn factory whose input_fn raises the user's own KeyError."""
  del mode, data_dir, batch_size

  def input_fn():
    return params["csv_columns"]  # Not in params: KeyError.

  return input_fn


def make_wide_labels_input_fn(mode, *, data_dir=None, batch_size=None,
                              params=None):
  """An input_fn factory whose labels are [batch, 3] (the model wants 1)."""
  del mode, data_dir, params
  batch_size = batch_size or 10

  def input_fn():
    dataset = tf.data.Dataset.from_tensors(([1.0], [1.0, 1.0, 1.0]))
    return dataset.repeat().batch(batch_size).map(lambda x, y: ({"x": x}, y))

  return input_fn



def rank_2_loss(features, labels, mode, params):
  """Returns the per-example squared error (shape [batch, 1]) as the loss."""
  del params
  loss = tf.math.squared_difference(tf.cast(labels, tf.float32),
                                    _predictions(features))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      tf.reduce_mean(loss),
      global_step=tf.compat.v1.train.get_global_step())
  return EstimatorSpec(mode, loss=loss, train_op=train_op)
