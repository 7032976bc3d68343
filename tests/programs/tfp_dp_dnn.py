"""A TensorFlow Privacy program on harness: a DP DNNClassifier, trained with
a DP optimizer, evaluated and exported.

    python tests/programs/tfp_dp_dnn.py /tmp/dp_model

Needs TensorFlow Privacy 0.9.0 (README: its install line); `import
harness.compat` comes before it: its v1 estimators import tf.estimator 2.15's
module paths. As its docs show: `estimators.v1.dnn.DNNClassifier` with a
`DPGradientDescentGaussianOptimizer` (clipped per-example gradients, one
microbatch per example, Gaussian noise) and `loss_reduction=NONE` (the DP
head minimises the per-example loss). Synthetic data: class 1 when
x0 + x1 > 0.
"""

import functools
import sys
import tempfile

import harness.compat  # pylint: disable=unused-import  # Before TF Privacy.
import numpy as np
import tensorflow as tf
from tensorflow_estimator.python.estimator import estimator as estimator_lib
from tensorflow_privacy.privacy.estimators.v1 import dnn as dp_dnn
from tensorflow_privacy.privacy.optimizers import dp_optimizer

BATCH_SIZE = 32
_COLUMNS = [tf.feature_column.numeric_column("x", shape=(4,))]


def _data(rows, seed):
  x = np.random.default_rng(seed).normal(size=(rows, 4)).astype(np.float32)
  return {"x": x}, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def train_input_fn():
  features, labels = _data(1024, 0)
  data = tf.data.Dataset.from_tensor_slices((features, labels))
  return data.shuffle(1024, seed=1).repeat().batch(BATCH_SIZE,
                                                   drop_remainder=True)


def eval_input_fn():
  features, labels = _data(256, 1)
  data = tf.data.Dataset.from_tensor_slices((features, labels))
  return data.batch(BATCH_SIZE, drop_remainder=True)


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
  return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


def main(model_dir):
  optimizer = functools.partial(
      dp_optimizer.DPGradientDescentGaussianOptimizer,
      l2_norm_clip=1.0, noise_multiplier=0.5, num_microbatches=BATCH_SIZE,
      learning_rate=0.25)
  classifier = dp_dnn.DNNClassifier(
      hidden_units=[16], feature_columns=_COLUMNS, n_classes=2,
      optimizer=optimizer, model_dir=model_dir,
      loss_reduction=tf.compat.v1.losses.Reduction.NONE,
      config=tf.estimator.RunConfig(tf_random_seed=3))
  # What the DP estimator recorded (2.15's private gauge, harness.compat's).
  gauge = estimator_lib._canned_estimator_api_gauge  # pylint: disable=protected-access
  print("gauge", repr(gauge.get_cell("Classifier").value()))
  classifier.train(train_input_fn, max_steps=300)
  metrics = classifier.evaluate(eval_input_fn)
  print("eval", {k: round(float(v), 4) for k, v in sorted(metrics.items())})
  export_dir = classifier.export_saved_model(model_dir + "/export",
                                             serving_input_receiver_fn)
  served = tf.saved_model.load(export_dir).signatures["predict"]
  probabilities = served(x=tf.constant([[2., 2., 0., 0.], [-2., -2., 0., 0.]],
                                       tf.float32))["probabilities"]
  print("positive", [round(float(p[1]), 4) for p in probabilities.numpy()])


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
