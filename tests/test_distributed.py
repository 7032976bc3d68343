"""Whole clusters of tests/programs/cluster_job.py run by harness.launch.

Each test starts real processes (one per TF_CONFIG task) through
`harness.launch.launch`, bounded by its timeout, and checks what the tasks
left in model_dir: checkpoints, eval events, exports, result files.
"""

import glob
import io
import json
import os
import shutil
import sys
import tempfile

from absl.testing import absltest
import pytest

from harness import launch
from harness._tf import tf
from tests import _support
from tests import conftest

_TIMEOUT_SECS = 80
_MAX_STEPS = 60


def _run_cluster(model_dir, strategy, *, extra=(), **tasks):
  """Launches the cluster; returns (exit status, all output)."""
  out = io.StringIO()
  env = conftest.child_env()
  code = launch.launch(
      [sys.executable, "-m", "tests.programs.cluster_job",
       f"--model_dir={model_dir}", f"--strategy={strategy}",
       f"--max_steps={_MAX_STEPS}", *extra],
      timeout_secs=_TIMEOUT_SECS, grace_secs=5, env=env, output=out, **tasks)
  return code, out.getvalue()


_steps_logged = _support.steps_logged


_eval_steps = conftest.eval_steps


def _ckpt_steps(model_dir):
  return sorted(int(p.rsplit("-", 1)[1].split(".")[0]) for p in
                glob.glob(os.path.join(model_dir, "model.ckpt-*.index")))


@pytest.mark.slow
class DistributedTest(absltest.TestCase):
  """The collective tests share one run: 2 workers x 2 devices and an
  evaluator, 7 steps per session.run, 0.7 s asleep after each run (0.1 s
  per step: 6 s of training, so that the evaluator sees several of the
  checkpoints at 0, 20, 40, 60, not only the last). The ps tests run their
  own clusters."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model_dir = tempfile.mkdtemp()
    cls.addClassCleanup(shutil.rmtree, cls.model_dir, ignore_errors=True)
    cls.code, cls.output = _run_cluster(
        cls.model_dir, "collective",
        extra=["--devices=2", "--steps_per_loop=7", "--step_secs=0.7"],
        workers=2, evaluator=True)

  def test_collective_two_workers_two_devices_with_evaluator(self):
    model_dir, output = self.model_dir, self.output
    self.assertEqual(self.code, 0, output[-4000:])
    latest = tf.train.latest_checkpoint(model_dir)
    self.assertEqual(int(tf.train.load_variable(latest, "global_step")),
                     _MAX_STEPS)
    # Both workers trained in lock step to the end (sync all-reduce).
    for task in ("worker/0", "worker/1"):
      self.assertIn(_MAX_STEPS, _steps_logged(output, task), output[-4000:])
    # Only the chief (worker/0) wrote checkpoints and training events.
    self.assertEqual(
        glob.glob(os.path.join(model_dir, "checkpoint*")),
        [os.path.join(model_dir, "checkpoint")])
    self.assertLen(glob.glob(os.path.join(model_dir, "events.out.*")), 1)
    self.assertEqual(_ckpt_steps(model_dir), [0, 20, 40, 60])
    # The evaluator evaluated several checkpoints, the last one included,
    # and exported the final model.
    steps = _eval_steps(model_dir)
    self.assertIn(_MAX_STEPS, steps)
    self.assertGreaterEqual(len(steps), 2, steps)
    with open(os.path.join(model_dir, "result-evaluator-0.json")) as f:
      result = json.load(f)
    self.assertEqual(result["metrics"]["global_step"], _MAX_STEPS)
    self.assertLen(result["exports"], 1)
    self.assertTrue(os.path.exists(
        os.path.join(result["exports"][0], "saved_model.pb")))

  def test_collective_steps_per_loop_lands_on_max_steps(self):
    # 7 steps per session.run, 2 workers x 2 devices: the loop's all-reduces
    # stay in step, the loop ends at each checkpoint multiple and at
    # max_steps exactly.
    self.assertEqual(self.code, 0, self.output[-4000:])
    self.assertEqual(_ckpt_steps(self.model_dir), [0, 20, 40, 60])
    for task in ("worker/0", "worker/1"):
      self.assertIn(_MAX_STEPS, _steps_logged(self.output, task),
                    self.output[-4000:])

  def _check_ps_cluster(self, strategy, extra=(), evaluator=True, ps=1):
    model_dir = self.create_tempdir().full_path
    code, output = _run_cluster(model_dir, strategy,
                                extra=["--sync_start", *extra],
                                chief=True, workers=1,
                                ps=ps, evaluator=evaluator)
    self.assertEqual(code, 0, output[-4000:])
    latest = tf.train.latest_checkpoint(model_dir)
    # Asynchronous steps: each trainer may have one step in flight (its read
    # of the global step is one update stale) when the step reaches
    # max_steps, and those still count, as in tf.estimator: at most
    # max_steps + number of trainers (2 here).
    step = int(tf.train.load_variable(latest, "global_step"))
    self.assertBetween(step, _MAX_STEPS, _MAX_STEPS + 2)
    # Asynchronous trainers share the global step: both made steps.
    for task in ("chief/0", "worker/0"):
      self.assertTrue(
          os.path.exists(os.path.join(
              model_dir, "task_done-" + task.replace("/", "-"))), task)
      self.assertNotEmpty(_steps_logged(output, task), output[-4000:])
    if evaluator:
      self.assertIn(step, _eval_steps(model_dir))
    return model_dir

  def test_chief_worker_ps_evaluator_without_strategy(self):
    self._check_ps_cluster("none")

  def test_chief_worker_ps_evaluator_with_ps_strategy_steps_per_loop(self):
    # v1 ParameterServerStrategy with 5 steps per session.run (its train_op
    # is the global-step variable, built inside the loop body).
    self._check_ps_cluster("ps", extra=["--steps_per_loop=5"])

  def test_ps_strategy_by_size_on_two_ps(self):
    # RunConfig(ps_placement="by_size"): both trainers place each variable
    # on the same one of the 2 ps tasks, and training reaches max_steps.
    model_dir = self._check_ps_cluster(
        "ps", extra=["--ps_placement=by_size"], evaluator=False, ps=2)
    placed = []
    for task in ("chief-0", "worker-0"):
      with open(os.path.join(model_dir, f"devices-{task}.json"),
                encoding="utf-8") as f:
        placed.append(json.load(f))
    self.assertEqual(placed[0], placed[1])
    self.assertEqual({d.split("/task:")[1][:1] for d in placed[0].values()},
                     {"0", "1"}, placed[0])


if __name__ == "__main__":
  absltest.main()
