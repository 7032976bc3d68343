"""One wide hidden layer with dropout: the classic Keras MNIST example.

Flatten -> Dense 512 relu -> Dropout (rate 0.2, TRAIN mode only) -> Dense 10,
on features {"image": float32 [batch, 28, 28, 1] in [0, 1]} and int64 labels
[batch]::

    python -m harness.main --model_fn=mnist_dropout --input_fn=mnist_idx \\
        --params=dropout_rate=0.3
"""

from harness._tf import tf
from harness.spec import ModeKeys
from model_fns import classifier_spec

__all__ = ["DEFAULT_PARAMS", "model_fn"]

DEFAULT_PARAMS = {
    "learning_rate": 0.001,
    "optimizer": "adam",
    "dropout_rate": 0.2,
}


def model_fn(features, labels, mode, params):
  """Builds the dropout network for `mode`.

  Args:
    features: dict with "image", float Tensor [batch, 28, 28, 1].
    labels: int Tensor [batch] of digits 0..9 (None in PREDICT mode).
    mode: a `ModeKeys` value; dropout is active only in TRAIN.
    params: dict; "learning_rate" (0.001), "optimizer" ("adam"),
      "dropout_rate" (0.2, the fraction of units dropped).

  Returns:
    An `EstimatorSpec` (see `model_fns.classifier_spec`).
  """
  params = params or {}
  rate = float(params.get("dropout_rate", DEFAULT_PARAMS["dropout_rate"]))
  net = tf.compat.v1.layers.flatten(
      tf.cast(features["image"], tf.float32), name="flatten")
  net = tf.compat.v1.layers.dense(
      net, 512, activation=tf.nn.relu, name="dense1")
  net = tf.compat.v1.layers.dropout(
      net, rate=rate, training=(mode == ModeKeys.TRAIN), name="dropout")
  logits = tf.compat.v1.layers.dense(net, 10, name="logits")
  return classifier_spec(mode, logits, labels, params, DEFAULT_PARAMS)
