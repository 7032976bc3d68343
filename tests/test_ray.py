"""harness on a local Ray cluster, end to end (issue 48.1).

tests/programs/ray_job.py runs a tf.estimator 2.15 program the way a Ray
user writes it: Ray Train's `TensorflowTrainer` (2 workers under
MultiWorkerMirroredStrategy, TF_CONFIG set by Ray) and a Ray task with the
evaluator's TF_CONFIG, one shared model_dir, no Ray setting for Keras. Once
the first checkpoint after the group's start exists, worker 1's Ray actor
is SIGKILLed; `FailureConfig` restarts the group, which must resume from
the newest checkpoint and reach max_steps, and the evaluator's last
evaluation must be at max_steps.

Skipped unless Ray is installed (`pip install 'ray[train]==2.60.0'`); CI's
Ray leg installs it and sets HARNESS_REQUIRE_RAY=1, which turns the skip
into a failure.
"""

import importlib.util
import json
import os
import sys

from absl.testing import absltest
import pytest

from tests import _support
from tests import conftest

_MISSING = importlib.util.find_spec("ray") is None
_REQUIRED = os.environ.get("HARNESS_REQUIRE_RAY") == "1"
_MAX_STEPS = 120
_TIMEOUT_SECS = 900


@pytest.mark.slow
@absltest.skipIf(_MISSING and not _REQUIRED,
                 "ray is not installed (pip install 'ray[train]==2.60.0')")
class RayTrainTest(absltest.TestCase):

  def test_killed_worker_resumes_from_newest_checkpoint(self):
    self.assertFalse(_MISSING, "HARNESS_REQUIRE_RAY=1 but ray is missing")
    model_dir = self.create_tempdir().full_path
    report_path = os.path.join(self.create_tempdir().full_path, "r.json")
    # As a user's shell has it: nothing tells Ray's workers about Keras.
    env = {k: v for k, v in conftest.child_env().items()
           if k != "TF_USE_LEGACY_KERAS"}
    result = _support.run(
        [sys.executable, "-m", "tests.programs.ray_job",
         f"--model_dir={model_dir}", f"--report={report_path}",
         f"--max_steps={_MAX_STEPS}", "--kill_worker", "--max_failures=2"],
        timeout_secs=_TIMEOUT_SECS, env=env)
    self.assertEqual(result.returncode, 0, result.description)
    with open(report_path) as f:
      report = json.load(f)
    self.assertIsNone(report["fit_error"], report)
    self.assertIn("killed_pid", report, report)
    killed_at = report["newest_checkpoint_at_kill"]
    self.assertGreater(killed_at, 0, report)
    # The group after the kill: both workers found the newest checkpoint
    # and their sessions started at its step.
    workers = [r for r in report["records"] if r["task"]["type"] == "worker"]
    after = [r for r in workers if r["pid"] != report["killed_pid"]
             and r.get("start_step", -1) >= killed_at]
    self.assertEqual(sorted(r["rank"] for r in after), [0, 1], report)
    for record in after:  # The newest checkpoint when the group started.
      self.assertTrue(record["found_checkpoint"].endswith(
          f"model.ckpt-{record['start_step']}"), report)
    self.assertEqual(max(report["checkpoints"]), _MAX_STEPS, report)
    self.assertEqual(report["evaluation"]["global_step"], _MAX_STEPS, report)
    self.assertIn("Ray Train (ray.train.tensorflow) had loaded tf.keras",
                  result.output)

  def test_harness_main_as_the_loops_command(self):
    self.assertFalse(_MISSING, "HARNESS_REQUIRE_RAY=1 but ray is missing")
    model_dir = self.create_tempdir().full_path
    report_path = os.path.join(self.create_tempdir().full_path, "r.json")
    result = _support.run(
        [sys.executable, "-m", "tests.programs.ray_job", "--loop=main",
         f"--model_dir={model_dir}", f"--report={report_path}",
         f"--max_steps={_MAX_STEPS}"],
        timeout_secs=_TIMEOUT_SECS, env=conftest.child_env())
    self.assertEqual(result.returncode, 0, result.description)
    with open(report_path) as f:
      report = json.load(f)
    self.assertIsNone(report["fit_error"], report)
    self.assertEqual(max(report["checkpoints"]), _MAX_STEPS, report)
    for task in ("worker/0", "worker/1"):  # Ray's TF_CONFIG reached both.
      self.assertIn(f"train | {task} | starting at step 0", result.output)
    self.assertIn(f"eval | done: evaluated global_step {_MAX_STEPS}",
                  result.output)


if __name__ == "__main__":
  absltest.main()
