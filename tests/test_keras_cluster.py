"""model_to_estimator in a TF_CONFIG cluster with a parameter server.

A CMLE-era program (tests/programs/keras_cluster_job.py: a Keras model,
`tf.keras.estimator.model_to_estimator`, `tf.estimator.train_and_evaluate`)
run once per task, as real processes: master + worker + ps (the master
trains, evaluates and exports), and chief + worker + ps + evaluator. The
Keras weights written to model_dir/keras/ are what training starts from.
"""

import json
import os

from absl.testing import absltest
import numpy as np
import pytest

from harness._tf import tf
from harness.state import checkpoint_reader
from harness.state import checkpoints
from tests import _support
from tests import conftest

_MAX_STEPS = 40
_RUN_SECS = 400
_HIDDEN_KERNEL = "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"


def _run_cluster(test, model_dir, jobs):
  """Starts one program per task of `jobs` ({job: count}); their outputs
  once all exited, each asserted to exit 0."""
  cluster = _support.loopback_cluster(
      **{j: n for j, n in jobs.items() if j != "evaluator"})
  children = []
  for job, count in jobs.items():
    for index in range(count):
      tf_config = {"cluster": cluster, "task": {"type": job, "index": index}}
      child = _support.ChildProcess(
          ["-m", "tests.programs.keras_cluster_job",
           f"--model_dir={model_dir}", f"--max_steps={_MAX_STEPS}"],
          f"{job}/{index}", tf_config=tf_config)
      test.addCleanup(child.kill_group)
      children.append(child)
  for child in children:
    test.assertEqual(child.wait(_RUN_SECS), 0, child.describe())
  return {child.name: child.output for child in children}


def _assert_warm_started(test, model_dir):
  """Row 3 of the hidden kernel (never trained) holds the Keras model's
  values, through model_dir/keras/, in the final checkpoint."""
  with open(os.path.join(model_dir, "keras-row3.json")) as f:
    keras_row = np.array(json.load(f), np.float32)
  keras_ckpt = tf.train.latest_checkpoint(os.path.join(model_dir, "keras"))
  test.assertIsNotNone(keras_ckpt)
  np.testing.assert_array_equal(
      tf.train.load_variable(keras_ckpt, _HIDDEN_KERNEL)[3], keras_row)
  final = checkpoints.latest_usable_checkpoint(model_dir)
  np.testing.assert_array_equal(
      tf.train.load_variable(final, _HIDDEN_KERNEL)[3], keras_row)
  # Asynchronous trainers: each may have one step in flight at the end.
  step = checkpoint_reader.global_step_of(final)
  test.assertBetween(step, _MAX_STEPS, _MAX_STEPS + 2)
  return step


def _assert_exported(test, result):
  test.assertNotEmpty(result["exports"])
  test.assertTrue(os.path.exists(
      os.path.join(result["exports"][-1], "saved_model.pb")))


@pytest.mark.slow
class KerasParameterServerClusterTest(absltest.TestCase):

  def test_master_worker_ps_trains_evaluates_and_exports(self):
    model_dir = self.create_tempdir().full_path
    outputs = _run_cluster(self, model_dir, {"master": 1, "worker": 1,
                                             "ps": 1})
    step = _assert_warm_started(self, model_dir)
    self.assertIn("train | master/0 | training finished at step",
                  outputs["master/0"])
    # The worker joined the training (on a loaded machine the chief may
    # reach max_steps before the worker's first progress line).
    self.assertIn("train | worker/0 | starting at step", outputs["worker/0"])
    with open(os.path.join(model_dir, "result-master-0.json")) as f:
      result = json.load(f)
    self.assertEqual(result["metrics"]["global_step"], step)
    self.assertLess(result["metrics"]["loss"], 10.0)
    _assert_exported(self, result)

  def test_chief_worker_ps_evaluator_trains_evaluates_and_exports(self):
    model_dir = self.create_tempdir().full_path
    outputs = _run_cluster(self, model_dir, {"chief": 1, "worker": 1,
                                             "ps": 1, "evaluator": 1})
    step = _assert_warm_started(self, model_dir)
    self.assertIn("train | chief/0 | training finished at step",
                  outputs["chief/0"])
    # The worker joined the training (on a loaded machine the chief may
    # reach max_steps before the worker's first progress line).
    self.assertIn("train | worker/0 | starting at step", outputs["worker/0"])
    self.assertIn(step, conftest.eval_steps(model_dir))
    export_dir = os.path.join(model_dir, "export", "final")
    self.assertTrue(any(
        os.path.exists(os.path.join(export_dir, name, "saved_model.pb"))
        for name in os.listdir(export_dir)), os.listdir(export_dir))


if __name__ == "__main__":
  absltest.main()
