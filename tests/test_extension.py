"""Tests of harness.extension.add_metrics with a real Estimator."""

from absl.testing import absltest
import numpy as np

from harness import errors
from harness import estimator as estimator_lib
from harness import extension
from harness import spec
from harness._tf import tf


def _model_fn(features, labels, mode, params):
  weight = tf.compat.v1.get_variable(
      "w", [1, 1], initializer=tf.constant_initializer(params["init"]))
  predictions = tf.matmul(features["x"], weight)
  loss = tf.reduce_mean(tf.square(predictions - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.0).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return spec.EstimatorSpec(
      mode, predictions={"y": predictions}, loss=loss, train_op=train_op,
      eval_metric_ops={"mean_pred": tf.compat.v1.metrics.mean(predictions),
                       "clash": tf.compat.v1.metrics.mean(labels)})


def _input_fn():
  x = np.array([[1.0], [2.0], [3.0]], np.float32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x)).batch(3)


class AddMetricsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.estimator = estimator_lib.Estimator(
        _model_fn, model_dir=self.create_tempdir().full_path,
        params={"init": 1.0})

  def test_adds_metrics_to_evaluation(self):
    seen_config = []

    def metric_fn(labels, predictions, features, config):
      seen_config.append(config)
      return {"mae": tf.compat.v1.metrics.mean_absolute_error(
                  labels, predictions["y"]),
              "mean_x": tf.compat.v1.metrics.mean(features["x"]),
              "clash": tf.compat.v1.metrics.mean(tf.constant(-1.0))}

    extended = extension.add_metrics(self.estimator, metric_fn)
    self.assertIsInstance(extended, estimator_lib.Estimator)
    self.assertEqual(extended.model_dir, self.estimator.model_dir)
    self.assertEqual(extended.params, {"init": 1.0})
    extended.train(_input_fn, steps=1)
    results = extended.evaluate(_input_fn)
    self.assertAlmostEqual(results["mean_pred"], 2.0)  # w stays 1.0.
    self.assertAlmostEqual(results["mae"], 2.0)  # |x - 2x|, mean over 1..3.
    self.assertAlmostEqual(results["mean_x"], 2.0)
    self.assertAlmostEqual(results["clash"], -1.0)  # metric_fn's wins.
    self.assertEqual(results["global_step"], 1)
    self.assertIs(type(seen_config[0]), type(self.estimator.config))

  def test_rejects_unexpected_args(self):
    def metric_fn(labels, mode):
      del labels, mode
      return {}

    with self.assertRaisesRegex(
        errors.ConfigError, r"has following not expected args: \['mode'\]"):
      extension.add_metrics(self.estimator, metric_fn)


if __name__ == "__main__":
  absltest.main()
