"""Keras metrics in `EstimatorSpec.eval_metric_ops`, as tf.estimator 2.15.

2.15's EstimatorSpec replaced each Keras `Metric` by its `(result,
update_op)` pair and put its variables in LOCAL_VARIABLES and
METRIC_VARIABLES; libraries read the pairs (AdaNet runs them, issue 41).
Evaluation under a distribution strategy groups the replicas' updates
(tests/programs/keras_metric_replicas.py, in its own process).
"""

import os
import sys

from absl.testing import absltest
import pytest

import harness
from harness._tf import tf
from tests import _support
from tests import conftest

_PROGRAM = os.path.join(conftest.REPO_ROOT, "tests", "programs",
                        "keras_metric_replicas.py")




class KerasMetricPairTest(absltest.TestCase):

  def test_spec_holds_the_result_and_update_pair(self):
    with tf.Graph().as_default():
      metric = tf.compat.v1.keras.metrics.Mean()
      metric.update_state(tf.constant([2., 4.]))
      spec = harness.EstimatorSpec(
          mode=harness.ModeKeys.EVAL, loss=tf.constant(1.),
          eval_metric_ops={"m": metric})
      pair = spec.eval_metric_ops["m"]
      self.assertIsInstance(pair, tuple)
      self.assertLen(pair, 2)
      for key in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                  tf.compat.v1.GraphKeys.METRIC_VARIABLES):
        self.assertContainsSubset(metric.variables,
                                  tf.compat.v1.get_collection(key))
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.local_variables_initializer())
        session.run(pair[1])
        session.run(pair[1])
        self.assertAlmostEqual(session.run(pair[0]), 3.0)

  def test_several_updates_all_run(self):
    # 2.15 kept only the first update; the pair's update runs both.
    with tf.Graph().as_default():
      metric = tf.keras.metrics.Sum()
      metric.update_state(tf.constant(1.))
      metric.update_state(tf.constant(10.))
      spec = harness.EstimatorSpec(
          mode=harness.ModeKeys.EVAL, loss=tf.constant(1.),
          eval_metric_ops={"s": metric})
      value, update = spec.eval_metric_ops["s"]
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.local_variables_initializer())
        session.run(update)
        self.assertAlmostEqual(session.run(value), 11.0)

  def test_estimator_evaluates_a_keras_metric(self):
    def model_fn(features, labels, mode):
      del labels
      metric = tf.keras.metrics.Mean()
      metric.update_state(features["x"])
      step = tf.compat.v1.train.get_global_step()
      return harness.EstimatorSpec(
          mode=mode, loss=tf.reduce_sum(features["x"]) * 0.,
          train_op=tf.compat.v1.assign_add(step, 1),
          eval_metric_ops={"mean_x": metric})

    est = harness.Estimator(model_fn,
                            model_dir=self.create_tempdir().full_path)
    input_fn = lambda: tf.data.Dataset.from_tensor_slices(  # pylint: disable=unnecessary-lambda-assignment
        {"x": [[1.], [2.], [3.], [6.]]}).batch(2)
    est.train(input_fn, steps=1)
    results = est.evaluate(input_fn)
    self.assertAlmostEqual(results["mean_x"], 3.0)
    self.assertEqual(results["global_step"], 1)


class EvalScaffoldTest(absltest.TestCase):

  def test_own_local_init_op_still_initialises_the_loss_mean(self):
    # AdaNet's EVAL scaffold has its own local_init_op; 2.15 grouped it
    # with the default one, so the loss mean made after model_fn runs.
    def model_fn(features, labels, mode):
      del labels
      metric = tf.keras.metrics.Mean()
      metric.update_state(features["x"])
      step = tf.compat.v1.train.get_global_step()
      return harness.EstimatorSpec(
          mode=mode, loss=tf.reduce_mean(features["x"]),
          train_op=tf.compat.v1.assign_add(step, 1),
          eval_metric_ops={"mean_x": metric},
          scaffold=tf.compat.v1.train.Scaffold(
              local_init_op=tf.compat.v1.variables_initializer(
                  metric.variables)))

    est = harness.Estimator(model_fn,
                            model_dir=self.create_tempdir().full_path)
    input_fn = lambda: tf.data.Dataset.from_tensor_slices(  # pylint: disable=unnecessary-lambda-assignment
        {"x": [[1.], [3.]]}).batch(1)
    est.train(input_fn, steps=1)
    results = est.evaluate(input_fn)
    self.assertAlmostEqual(results["mean_x"], 2.0)
    self.assertAlmostEqual(results["loss"], 2.0)


@pytest.mark.slow
class KerasMetricReplicasTest(absltest.TestCase):

  def test_replicas_updates_are_grouped(self):
    result = _support.run([sys.executable, _PROGRAM], timeout_secs=300)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertEqual(_support.printed_literal(result.stdout, "pair_types"),
                     {"own": "tuple", "shared": "tuple"})
    results = _support.printed_literal(result.stdout, "results")
    self.assertAlmostEqual(results["own"], 15.0)  # mean(10, 20)
    self.assertAlmostEqual(results["shared"], 1.5)  # mean(1, 2)
    self.assertAlmostEqual(results["loss"], 150.0)  # mean(100, 200)


if __name__ == "__main__":
  absltest.main()
