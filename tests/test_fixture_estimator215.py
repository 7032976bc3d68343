"""A model_dir written by tf.estimator 2.15 restores, evaluates and resumes."""

import json
import shutil

import numpy as np
from absl.testing import absltest

import harness
from harness._tf import tf
from tests import conftest

FIXTURE = conftest.FIXTURES_DIR / "estimator215_dnn"
EXPECTED = conftest.FIXTURES_DIR / "estimator215_dnn.expected.json"


def model_fn(features, labels, mode, params):
  h = tf.compat.v1.layers.dense(features["x"], params["hidden"],
                                activation=tf.nn.relu)
  pred = tf.compat.v1.layers.dense(h, 1)
  if mode == harness.ModeKeys.PREDICT:
    return harness.EstimatorSpec(mode, predictions={"y": pred})
  loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
  train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return harness.EstimatorSpec(
      mode, loss=loss, train_op=train_op,
      eval_metric_ops={
          "mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred)})


def input_fn():
  x = np.random.RandomState(0).randn(512, 10).astype(np.float32)
  w = (np.arange(1, 11, dtype=np.float32) / 10).reshape(10, 1)
  y = np.tanh(x @ w)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(32)


@absltest.skipUnless(FIXTURE.is_dir(), f"fixture {FIXTURE} is absent (the "
                     "repository ships it: restore tests/data)")
class Estimator215FixtureTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    shutil.copytree(FIXTURE, self.model_dir, dirs_exist_ok=True)
    self.expected = json.loads(EXPECTED.read_text())
    self.est = harness.Estimator(
        model_fn, model_dir=self.model_dir, params={"hidden": 16},
        config=harness.RunConfig(save_checkpoints_steps=40,
                                 keep_checkpoint_max=1, tf_random_seed=1))

  def test_every_variable_restores_with_its_value(self):
    names = set(self.est.get_variable_names())
    self.assertEqual(names, set(self.expected["variables"]))
    for name, value in self.expected["variables"].items():
      np.testing.assert_allclose(
          self.est.get_variable_value(name), np.asarray(value), rtol=1e-6,
          err_msg=name)

  def test_evaluate_reproduces_loss_and_mae(self):
    metrics = self.est.evaluate(input_fn, steps=4)
    want = self.expected["eval_steps4"]
    self.assertEqual(metrics["global_step"], 40)
    self.assertAlmostEqual(metrics["loss"], want["loss"], places=5)
    self.assertAlmostEqual(metrics["mae"], want["mae"], places=5)

  def test_training_resumes_from_step_40_with_adam_state(self):
    want = self.expected["variables"]
    self.est.train(input_fn, steps=1)
    self.assertEqual(self.est.get_variable_value("global_step"), 41)
    # Adam's beta powers advance by one factor from the restored values.
    self.assertAlmostEqual(float(self.est.get_variable_value("beta1_power")),
                           want["beta1_power"] * 0.9, places=6)
    self.assertAlmostEqual(float(self.est.get_variable_value("beta2_power")),
                           want["beta2_power"] * 0.999, places=6)
    # The first moment continues from the restored one: m1 = .9 m0 + .1 g,
    # so it stays close to 0.9 * m0 for a small gradient, not to 0.1 * g.
    m0 = np.asarray(want["dense_1/bias/Adam"])
    m1 = self.est.get_variable_value("dense_1/bias/Adam")
    self.assertLess(abs(m1[0] - 0.9 * m0[0]), abs(0.9 * m0[0]) * 0.5 + 0.02)
    self.est.train(input_fn, max_steps=45)
    self.assertEqual(self.est.get_variable_value("global_step"), 45)


if __name__ == "__main__":
  absltest.main()
