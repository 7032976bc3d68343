"""A small convolutional MNIST classifier (~99% on real digits).

Conv2D 32 3x3 relu -> MaxPool 2 -> Flatten -> Dense 64 relu -> Dense 10, on
features {"image": float32 [batch, 28, 28, 1] in [0, 1]} and int64 labels
[batch]::

    python -m harness.main --model_fn=mnist_cnn --input_fn=mnist_idx \\
        --model_dir=/tmp/mnist_cnn

(``mnist_idx`` reads the MNIST test split shipped in ``input_fns/data/mnist``
unless ``--data_dir`` names another folder; ``--input_fn=synthetic`` needs
no data).
"""

from harness._tf import tf
from model_fns import classifier_spec

__all__ = ["DEFAULT_PARAMS", "model_fn"]

DEFAULT_PARAMS = {
    "learning_rate": 0.001,
    "optimizer": "adam",
}


def model_fn(features, labels, mode, params):
  """Builds the CNN for `mode`.

  Args:
    features: dict with "image", float Tensor [batch, 28, 28, 1].
    labels: int Tensor [batch] of digits 0..9 (None in PREDICT mode).
    mode: a `ModeKeys` value.
    params: dict; "learning_rate" (default 0.001), "optimizer" ("adam").

  Returns:
    An `EstimatorSpec` (see `model_fns.classifier_spec`).
  """
  image = tf.reshape(tf.cast(features["image"], tf.float32), [-1, 28, 28, 1])
  net = tf.compat.v1.layers.conv2d(
      image, filters=32, kernel_size=3, activation=tf.nn.relu, name="conv1")
  net = tf.compat.v1.layers.max_pooling2d(
      net, pool_size=2, strides=2, name="pool1")
  net = tf.compat.v1.layers.flatten(net, name="flatten")
  net = tf.compat.v1.layers.dense(
      net, 64, activation=tf.nn.relu, name="dense1")
  logits = tf.compat.v1.layers.dense(net, 10, name="logits")
  return classifier_spec(mode, logits, labels, params, DEFAULT_PARAMS)
