"""Linear regression on one feature: the smallest model_fn harness runs.

Learns y = w * x + b from features {"x": [batch, 1]} and labels [batch, 1]
(the `constant` input_fn's x=1 -> y=1 pairs)::

    python -m harness.main --model_fn=linear --input_fn=constant \\
        --model_dir=/tmp/linear --train_steps=100
"""

from harness._tf import tf
from harness.export import PredictOutput
from harness.export import RegressionOutput
from harness.spec import EstimatorSpec
from harness.spec import ModeKeys
from model_fns import make_optimizer

__all__ = ["DEFAULT_PARAMS", "model_fn"]

DEFAULT_PARAMS = {
    "learning_rate": 0.2,
    "optimizer": "sgd",
}


def model_fn(features, labels, mode, params):
  """Dense(1) on features["x"] trained with mean squared error.

  Args:
    features: dict with "x", float Tensor [batch, 1].
    labels: float Tensor [batch, 1] (None in PREDICT mode).
    mode: a `ModeKeys` value.
    params: dict; "learning_rate" (default 0.2) and "optimizer" (default
      "sgd", i.e. GradientDescentOptimizer).

  Returns:
    An `EstimatorSpec`. EVAL metrics: "accuracy" (rounded prediction equals
    the label) and "mean_squared_error".
  """
  x = tf.cast(features["x"], tf.float32)
  predictions = tf.compat.v1.layers.dense(x, 1, name="linear")
  if mode == ModeKeys.PREDICT:
    return EstimatorSpec(
        mode, predictions={"predictions": predictions},
        export_outputs={
            "serving_default": PredictOutput({"predictions": predictions}),
            "regression": RegressionOutput(value=predictions[:, 0]),
        })

  labels = tf.cast(tf.reshape(labels, [-1, 1]), tf.float32)
  loss = tf.compat.v1.losses.mean_squared_error(
      labels=labels, predictions=predictions)
  if mode == ModeKeys.EVAL:
    eval_metric_ops = {
        "accuracy": tf.compat.v1.metrics.accuracy(
            labels=labels, predictions=tf.round(predictions)),
        "mean_squared_error": tf.compat.v1.metrics.mean_squared_error(
            labels=labels, predictions=predictions),
    }
    return EstimatorSpec(mode, loss=loss, eval_metric_ops=eval_metric_ops)

  optimizer = make_optimizer(params, DEFAULT_PARAMS)
  train_op = optimizer.minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return EstimatorSpec(mode, loss=loss, train_op=train_op)
