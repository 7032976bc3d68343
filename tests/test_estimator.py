"""Estimator in one process: the seeds' linear example end to end."""

import glob
import json
import os
import subprocess
import sys

import numpy as np
from absl.testing import absltest

import harness
from harness._tf import tf


def linear_model_fn(features, labels, mode, params):
  pred = tf.compat.v1.layers.dense(features["x"], 1, name="dense")
  if mode == harness.ModeKeys.PREDICT:
    return harness.EstimatorSpec(mode, predictions={"y": pred})
  loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
  opt = tf.compat.v1.train.GradientDescentOptimizer(params.get("lr", 0.2))
  train_op = opt.minimize(loss,
                          global_step=tf.compat.v1.train.get_global_step())
  return harness.EstimatorSpec(
      mode, loss=loss, train_op=train_op, predictions={"y": pred},
      eval_metric_ops={
          "mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred)})


def constant_input_fn():
  ds = tf.data.Dataset.from_tensors(([1.], [1.])).repeat(10000).batch(10)
  return ds.map(lambda x, y: ({"x": x}, y))


def serving_input_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 1], name="x")
  return harness.export.ServingInputReceiver({"x": x}, {"x": x})


class SeedsLinearTest(absltest.TestCase):

  def _estimator(self, model_dir, **config):
    return harness.Estimator(
        linear_model_fn, model_dir=model_dir, params={"lr": 0.2},
        config=harness.RunConfig(tf_random_seed=1, **config))

  def test_train_evaluate_predict_export(self):
    model_dir = self.create_tempdir().full_path
    est = self._estimator(model_dir, save_checkpoints_steps=50)
    est.train(constant_input_fn, max_steps=100)
    self.assertEqual(est.get_variable_value("global_step"), 100)
    self.assertIn("dense/kernel", est.get_variable_names())
    metrics = est.evaluate(constant_input_fn, steps=5)
    self.assertEqual(metrics["global_step"], 100)
    self.assertLess(metrics["loss"], 1e-4)
    self.assertLess(metrics["mae"], 1e-2)
    self.assertTrue(glob.glob(os.path.join(model_dir, "eval",
                                           "events.out.tfevents.*")))
    preds = list(est.predict(
        lambda: tf.data.Dataset.from_tensors({"x": [[1.], [2.]]})))
    self.assertLen(preds, 2)
    np.testing.assert_allclose(preds[0]["y"], [1.0], atol=1e-2)
    export_dir = est.export_saved_model(
        os.path.join(model_dir, "export"), serving_input_fn)
    self.assertIsInstance(export_dir, bytes)
    self.assertTrue(os.path.exists(
        os.path.join(os.fsdecode(export_dir), "saved_model.pb")))
    code = ("import tensorflow as tf, sys; m = tf.saved_model.load(sys.argv[1]);"
            "f = m.signatures['serving_default'];"
            "print(float(f(x=tf.constant([[1.0]]))['y'].numpy()[0][0]))")
    out = subprocess.run([sys.executable, "-c", code, os.fsdecode(export_dir)],
                         capture_output=True, text=True, timeout=120)
    self.assertEqual(out.returncode, 0, out.stderr[-2000:])
    self.assertAlmostEqual(float(out.stdout.strip().splitlines()[-1]), 1.0,
                           delta=1e-2)

  def test_resume_continues_global_step(self):
    model_dir = self.create_tempdir().full_path
    self._estimator(model_dir).train(constant_input_fn, steps=7)
    est = self._estimator(model_dir)
    est.train(constant_input_fn, steps=5)
    self.assertEqual(est.get_variable_value("global_step"), 12)
    est.train(constant_input_fn, max_steps=12)  # Already there: no step.
    self.assertEqual(est.get_variable_value("global_step"), 12)

  def test_train_and_evaluate_local(self):
    model_dir = self.create_tempdir().full_path
    est = self._estimator(model_dir, save_checkpoints_steps=20)
    exporter = harness.LatestExporter("latest", serving_input_fn,
                                      exports_to_keep=2)
    metrics, exports = harness.train_and_evaluate(
        est, harness.TrainSpec(constant_input_fn, max_steps=60),
        harness.EvalSpec(constant_input_fn, steps=3, throttle_secs=0,
                         exporters=[exporter]))
    self.assertEqual(metrics["global_step"], 60)
    self.assertLen(exports, 1)
    steps = sorted(harness.read_eval_metrics(est.eval_dir()))
    self.assertEqual(steps, [20, 40, 60])
    self.assertLen(os.listdir(os.path.join(model_dir, "export", "latest")), 2)

  def test_no_checkpoint_evaluate_initialises(self):
    est = self._estimator(self.create_tempdir().full_path)
    metrics = est.evaluate(constant_input_fn, steps=2)
    self.assertEqual(metrics["global_step"], 0)

  def test_steps_and_max_steps_rejected(self):
    est = self._estimator(self.create_tempdir().full_path)
    with self.assertRaisesRegex(ValueError, "both steps and max_steps"):
      est.train(constant_input_fn, steps=1, max_steps=2)
    with self.assertRaisesRegex(ValueError, "steps > 0"):
      est.train(constant_input_fn, steps=0)

  def test_nan_loss_stops_training(self):
    def nan_model_fn(features, labels, mode):
      pred = tf.compat.v1.layers.dense(features["x"], 1)
      loss = tf.reduce_mean(pred) * np.nan
      train_op = tf.compat.v1.assign_add(
          tf.compat.v1.train.get_global_step(), 1)
      return harness.EstimatorSpec(mode, loss=loss, train_op=train_op)
    est = harness.Estimator(nan_model_fn, self.create_tempdir().full_path)
    with self.assertRaises(harness.NanLossDuringTrainingError):
      est.train(constant_input_fn, steps=3)


if __name__ == "__main__":
  absltest.main()
