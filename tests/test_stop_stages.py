"""A stop signal meets every stage of a run: a checkpoint save in progress
finishes (the stop bound is for a step that does not end), an evaluation
after SIGTERM is skipped and one in progress ends at its next step, and
every role run as PID 1 of its own PID namespace (a pod) stops on SIGTERM
within a grace period. Exit status: EXIT_PREEMPTED (143) for SIGTERM.

The slow tests run the real binaries (`python -m harness.main`,
`python -m harness.server`) with tests/programs/slow_stages.py. A
standalone client's SIGTERM (one line, a save, 143) is
tests/test_remote.py::RemoteClusterTest::test_sigterm_one_line_a_save_and_143.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

from absl.testing import absltest
import pytest

from harness import errors
from harness.guard import stop_signal
from harness.launch import ports
from tests import _support

_SLOW = "tests.programs.slow_stages"
_START_SECS = 240  # TF start-up on a loaded 2-core machine.
_GRACE_SECS = 30  # Kubernetes' default terminationGracePeriodSeconds.
_EVAL_STEPS = 20  # Of 0.5 s each: a 10 s evaluation.


class ExitStatusTest(absltest.TestCase):

  def test_sigterm_is_preempted_and_sigint_interrupted(self):
    self.assertEqual(stop_signal.exit_status("SIGTERM"), errors.EXIT_PREEMPTED)
    self.assertEqual(stop_signal.exit_status("SIGINT"),
                     errors.EXIT_INTERRUPTED)
    self.assertEqual(stop_signal.exit_status(None), errors.EXIT_FAILED)


def _main(test, *flags, program=None, tf_config=None):
  child = _support.ChildProcess(["-m", "harness.main", *flags],
                                "harness.main", tf_config=tf_config,
                                program=program)
  test.addCleanup(child.kill_group)
  return child


def _one_line(test, child, text):
  lines = [line for line in child.lines if text in line]
  test.assertLen(lines, 1, child.describe())
  return lines[0]


@pytest.mark.slow
class SaveInProgressTest(absltest.TestCase):
  """Issue 37, defect 3: SIGTERM during a save longer than the stop bound."""

  def test_a_slow_save_finishes_and_the_run_stops_at_its_step(self):
    model_dir = self.create_tempdir().full_path
    child = _main(self, f"--model_fn={_SLOW}:slow_save_linear",
                  f"--input_fn={_SLOW}:make_slow_eval_input_fn",
                  "--mode=train", "--max_steps=100000",
                  "--stop_timeout_secs=1", f"--model_dir={model_dir}",
                  "--params=slow_save_secs=6")
    begins = child.wait_for_match(
        re.compile(r"slow \| checkpoint save at step (\d+) begins"),
        _START_SECS)
    self.assertIsNotNone(begins, child.describe())
    step = int(begins.group(1))
    code, _ = child.stop(signal.SIGTERM, 6 + _GRACE_SECS)
    self.assertEqual(code, errors.EXIT_PREEMPTED, child.describe())
    # Before: "no step ended within 1 s ...; blocked in a training step"
    # and the older checkpoint only.
    self.assertNotIn("no step ended within", child.output, child.describe())
    _one_line(self, child, f"SIGTERM: a checkpoint save (step {step}) is in "
              "progress after 1 s; letting it finish")
    _one_line(self, child, f"preempted (SIGTERM) and stopped at step {step}, "
              "saved in a checkpoint")
    self.assertEqual(_support.checkpoint_step(model_dir), step)


@pytest.mark.slow
class EvaluationAfterSigtermTest(absltest.TestCase):
  """A local train_and_evaluate stopped by SIGTERM evaluates nothing more."""

  def _run(self, throttle_secs):
    model_dir = self.create_tempdir().full_path
    # A 10 s evaluation, its progress logged every 2 batches.
    return model_dir, _main(
        self, "--model_fn=linear", f"--input_fn={_SLOW}:make_slow_eval_input_fn",
        "--mode=train_and_evaluate", "--max_steps=100000",
        "--save_checkpoints_steps=30", f"--eval_steps={_EVAL_STEPS}",
        f"--throttle_secs={throttle_secs}", "--stop_timeout_secs=3",
        f"--model_dir={model_dir}")

  def test_an_evaluation_in_progress_ends_at_its_next_step(self):
    model_dir, child = self._run(throttle_secs=0)
    self.assertTrue(child.wait_for_text("eval | step", _START_SECS),
                    child.describe())
    code, secs = child.stop(signal.SIGTERM, _GRACE_SECS)
    self.assertEqual(code, errors.EXIT_PREEMPTED, child.describe())
    self.assertLess(secs, _GRACE_SECS, child.describe())
    # Before: "no step ended within 3 s ...; blocked in a training step".
    self.assertNotIn("blocked in", child.output, child.describe())
    line = _one_line(self, child, "evaluation of the checkpoint at step")
    self.assertIn("stopped by SIGTERM: not written", line)
    self.assertNotIn("eval results", child.output, child.describe())
    self.assertEqual(_support.checkpoint_step(model_dir), 30)

  def test_no_evaluation_starts_after_sigterm(self):
    # The save at step 30 is evaluated, the later ones are throttled; the
    # stop's final save was evaluated in full before (10 s here).
    model_dir, child = self._run(throttle_secs=3600)
    self.assertTrue(child.wait_for_text("eval | local | step 30 |",
                                        _START_SECS), child.describe())
    code, secs = child.stop(signal.SIGTERM, _GRACE_SECS)
    self.assertEqual(code, errors.EXIT_PREEMPTED, child.describe())
    self.assertLess(secs, _GRACE_SECS, child.describe())
    done = f"eval | step {_EVAL_STEPS}/{_EVAL_STEPS}"
    self.assertEqual(child.output.count(done), 1, child.describe())
    step = _support.checkpoint_step(model_dir)
    self.assertGreater(step, 30)
    _one_line(self, child, f"checkpoint at step {step} not evaluated: "
              "stopping on SIGTERM")


# ------------------------------------------------------------- PID 1 --


def _pid1_program():
  unshare = shutil.which("unshare")
  if unshare is None or os.geteuid() != 0:
    return None
  return [unshare, "--pid", "--fork", "--mount-proc", sys.executable]


def _namespace_init(child, timeout_secs=30):
  """The host pid of `unshare --fork`'s child: PID 1 of the namespace."""
  path = f"/proc/{child.proc.pid}/task/{child.proc.pid}/children"

  def read():
    try:
      with open(path, encoding="ascii") as f:  # local-fs: procfs
        return [int(p) for p in f.read().split()]
    except OSError:
      return []

  return _support.wait_for(read, timeout_secs, "unshare's child")[0]


@pytest.mark.slow
class Pid1Test(absltest.TestCase):
  """Each role as PID 1 (a pod's `exec python ...`): SIGTERM from outside
  stops it within the grace period; before, all but the server ignored it
  until SIGKILL."""

  def setUp(self):
    super().setUp()
    self.program = _pid1_program()
    if self.program is None:
      self.skipTest("needs root and unshare: run the suite as root with "
                    "util-linux installed")
    self.model_dir = self.create_tempdir().full_path

  def _stop_pid1(self, child, ready_text, expected_code):
    self.assertTrue(child.wait_for_text(ready_text, _START_SECS),
                    child.describe())
    start = time.monotonic()
    os.kill(_namespace_init(child), signal.SIGTERM)
    try:
      code = child.proc.wait(timeout=_GRACE_SECS)
    except subprocess.TimeoutExpired:
      code = None
    secs = time.monotonic() - start
    self.assertEqual(code, expected_code, child.describe())
    self.assertLess(secs, _GRACE_SECS, child.describe())
    self.assertNotIn("Traceback", child.output, child.describe())

  def _task(self, cluster, task_type, ready_text, *flags):
    child = _main(self, "--model_fn=linear", "--input_fn=constant",
                  "--max_steps=100", f"--model_dir={self.model_dir}", *flags,
                  program=self.program, tf_config={
                      "cluster": cluster,
                      "task": {"type": task_type, "index": 0}})
    self._stop_pid1(child, ready_text, errors.EXIT_PREEMPTED)
    return child

  def test_trainer_waiting_for_its_ps(self):
    cluster = _support.loopback_cluster(chief=1, ps=1)
    child = self._task(cluster, "chief", "waiting for 1 peer(s)",
                       "--strategy=parameter_server")
    line = _one_line(self, child, "harness.main: SIGTERM: chief/0: stopped "
                     "while")
    self.assertIn("(outside the training loop)", line)

  def test_parameter_server(self):
    cluster = _support.loopback_cluster(chief=1, ps=1)
    self._task(cluster, "ps", "serving until", "--strategy=parameter_server")

  def test_evaluator(self):
    cluster = _support.loopback_cluster(chief=1, evaluator=1)
    child = self._task(cluster, "evaluator", "watching")
    _one_line(self, child, "harness.main: SIGTERM: evaluator/0: stopped while "
              "waiting for a new checkpoint")

  def test_standalone_client_waiting_for_its_servers(self):
    closed = f"127.0.0.1:{ports.pick_free_port()}"
    child = _main(self, "--model_fn=linear", "--input_fn=constant",
                  f"--remote_cluster=worker={closed}",
                  "--strategy=collective", "--remote_connect_timeout_secs=600",
                  f"--model_dir={self.model_dir}", program=self.program)
    self._stop_pid1(child, "checking the servers", errors.EXIT_PREEMPTED)

  def test_server(self):
    address = f"127.0.0.1:{ports.pick_free_port()}"
    child = _support.ChildProcess(
        ["-m", "harness.server", f"--cluster_spec=worker={address}",
         "--job_name=worker", "--task_index=0"], "server",
        program=self.program)
    self.addCleanup(child.kill_group)
    self._stop_pid1(child, "listening on", errors.EXIT_DONE)


if __name__ == "__main__":
  absltest.main()
