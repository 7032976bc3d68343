"""A two-hidden-layer perceptron for MNIST (~97-98% on real digits).

Flatten -> Dense 256 relu -> Dense 256 relu -> Dense 10, on features
{"image": float32 [batch, 28, 28, 1] in [0, 1]} and int64 labels [batch]::

    python -m harness.main --model_fn=mnist_mlp --input_fn=mnist_idx \\
        --model_dir=/tmp/mnist_mlp
"""

from harness._tf import tf
from model_fns import classifier_spec

__all__ = ["DEFAULT_PARAMS", "model_fn"]

DEFAULT_PARAMS = {
    "learning_rate": 0.001,
    "optimizer": "adam",
}


def model_fn(features, labels, mode, params):
  """Builds the MLP for `mode`.

  Args:
    features: dict with "image", float Tensor [batch, 28, 28, 1].
    labels: int Tensor [batch] of digits 0..9 (None in PREDICT mode).
    mode: a `ModeKeys` value.
    params: dict; "learning_rate" (default 0.001), "optimizer" ("adam").

  Returns:
    An `EstimatorSpec` (see `model_fns.classifier_spec`).
  """
  net = tf.compat.v1.layers.flatten(
      tf.cast(features["image"], tf.float32), name="flatten")
  net = tf.compat.v1.layers.dense(
      net, 256, activation=tf.nn.relu, name="dense1")
  net = tf.compat.v1.layers.dense(
      net, 256, activation=tf.nn.relu, name="dense2")
  logits = tf.compat.v1.layers.dense(net, 10, name="logits")
  return classifier_spec(mode, logits, labels, params, DEFAULT_PARAMS)
