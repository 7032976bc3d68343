"""Stopping a `harness.launch` cluster with a parameter server loses nothing.

Issue 37: SIGTERM or Ctrl-C to the launcher sent SIGTERM to every task at
once; the ps died at once, the chief and the worker ended with `PeerLostError:
... lost peer ps/0` and only `model.ckpt-0` was left; a ps preempted alone did
the same, and `training_stopped` said `"global_step": 0`. Now the launcher
stops the trainers first and the ps after them, and a ps that gets SIGTERM
serves until its trainers stopped, the chief saving its step.

Real processes: `python -m harness.launch --chief --workers=1 --ps=1 --
python -m harness.main --model_fn=mnist_mlp --input_fn=synthetic ...`.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness import launch
from harness.guard import stop_signal
from harness.state import run_state
from tests import _processes
from tests import _ps_launch
from tests import _support
from tests import conftest
from tests.programs import launch_watch

_BOUND_SECS = 300  # A loaded 2-core machine starts three TensorFlow tasks.
_STEP = r"\[chief/0\] .*train \| chief/0 \| step (\d+)/"
# Either trainer may start first: the first restores the checkpoint's step.
_STARTING = r"\[(?:chief|worker)/0\] .*starting at step (\d+)"


def _command(model_dir, max_steps):
  return [sys.executable, "-m", "harness.launch", "--chief", "--workers=1",
          "--ps=1", "--grace_secs=90", f"--timeout_secs={_BOUND_SECS}", "--",
          sys.executable, "-m", "harness.main", "--model_fn=mnist_mlp",
          "--input_fn=synthetic", "--strategy=parameter_server",
          "--mode=train", f"--model_dir={model_dir}",
          f"--max_steps={max_steps}", "--save_checkpoints_steps=1000000",
          "--log_step_count_steps=5"]


class _Launcher:
  """The launcher process, its output read into `launch_watch.Lines`."""

  def __init__(self, command):
    self.out = launch_watch.Lines()
    self.proc = _processes.popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=conftest.child_env(), cwd=conftest.REPO_ROOT)
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()

  def _read(self):
    for line in self.proc.stdout:
      self.out.write(line)

  def wait(self):
    code = self.proc.wait(timeout=_BOUND_SECS)
    self._reader.join(10)
    return code

  def kill(self):
    if self.proc.poll() is None:
      self.proc.kill()
      self.proc.wait(timeout=30)


def _task_pid(model_dir, task):
  """The pid of the process running `task` on `model_dir` (from /proc)."""
  for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{pid}/cmdline", "rb") as f:
        cmdline = f.read().decode("utf-8", "replace")
      with open(f"/proc/{pid}/environ", "rb") as f:
        environ = f.read().decode("utf-8", "replace").split("\0")
    except OSError:
      continue
    if (f"--model_dir={model_dir}" in cmdline and "harness.main" in cmdline
        and f"HARNESS_TASK={task}" in environ and "nsenter" not in cmdline):
      return int(pid)
  return None


def _saved_step(model_dir):
  return _support.checkpoint_step(model_dir)


# A task without TensorFlow: on SIGTERM a trainer "saves" (1 s), a ps notes
# which trainers had saved by then.
_ORDER_TASK = """
import os, signal, sys, time
folder, task = sys.argv[1], os.environ["HARNESS_TASK"].replace("/", "-")
def on_term(*unused):
  if task.startswith("ps"):
    saved = sorted(n for n in os.listdir(folder) if n.endswith(".saved"))
    with open(os.path.join(folder, "ps-saw"), "w") as f:
      f.write(",".join(saved))
  else:
    time.sleep(1.0)
    open(os.path.join(folder, task + ".saved"), "w").close()
  sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
open(os.path.join(folder, task + ".ready"), "w").close()
time.sleep(120)
"""


class StopOrderTest(absltest.TestCase):

  def test_the_trainers_stop_and_save_before_the_ps_is_stopped(self):
    folder = self.create_tempdir().full_path
    stop = threading.Event()
    out = launch_watch.Lines()
    result = {}
    runner = threading.Thread(target=lambda: result.update(
        code=launch.launch([sys.executable, "-c", _ORDER_TASK, folder],
                           chief=True, workers=1, ps=1, output=out,
                           stop_event=stop, grace_secs=30,
                           network_isolation="none")))
    runner.start()
    self.addCleanup(runner.join, 60)
    self.addCleanup(stop.set)
    _support.wait_for(lambda: len([n for n in os.listdir(folder)
                                   if n.endswith(".ready")]) == 3, 60,
                      "the three tasks to start", details=out.text)
    stop.set()
    runner.join(60)
    self.assertEqual(result.get("code"), 130, out.text())
    with open(os.path.join(folder, "ps-saw")) as f:
      self.assertEqual(f.read(), "chief-0.saved,worker-0.saved", out.text())


@pytest.mark.slow
class LaunchPsStopTest(parameterized.TestCase):
  """One model_dir, stopped three ways in turn; each restart is the next run.

  Launcher SIGTERM, then (restarted) launcher Ctrl-C, then (restarted) the ps
  alone gets SIGTERM; a last restart, with an evaluator task, trains
  `_ps_launch.MAX_STEPS` steps more in `--mode=train` and ends. Each stop is
  checked on its own run, its resume on the run after it. Then the same
  cluster shape evaluates and exports the model_dir: tests/test_ps_modes.py's
  runs with --strategy=parameter_server.
  """

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model_dir = tempfile.mkdtemp()
    cls.addClassCleanup(shutil.rmtree, cls.model_dir, ignore_errors=True)
    cls.runs, cls.modes, cls.failure = [], {}, ""
    try:
      for how in ("sigterm", "ctrl_c", "ps"):
        cls.runs.append(cls._train_and_stop(how))
      last = _ps_launch.launch(
          cls.model_dir, "train", _ps_launch.PS_STRATEGY, evaluator=True,
          max_steps=cls.runs[-1]["step"] + _ps_launch.MAX_STEPS)
      cls.runs.append(dict(code=last["code"], text=last["output"], starts=[
          (None, m) for m in re.finditer(_STARTING, last["output"])]))
      cls.modes["train"] = last
      for mode in ("evaluate", "export"):
        cls.modes[mode] = _ps_launch.launch(cls.model_dir, mode,
                                            _ps_launch.PS_STRATEGY)
    except Exception as e:  # pylint: disable=broad-except
      cls.failure = (f"the shared runs stopped at run {len(cls.runs)} "
                     f"(modes {sorted(cls.modes)}): {e!r}")

  @classmethod
  def _start(cls, max_steps):
    launcher = _Launcher(_command(cls.model_dir, max_steps))
    cls.addClassCleanup(launcher.kill)
    return launcher

  @classmethod
  def _train_and_stop(cls, how):
    """Starts a run, stops it `how` once the chief logs a step: its facts."""
    launcher = cls._start(1_000_000)
    launch_watch.wait_for(launcher.out, _STEP, _BOUND_SECS)
    run = dict(starts=launcher.out.find(_STARTING), ps_pid=None,
               step_seen=int(launcher.out.find(_STEP)[-1][1].group(1)))
    if how == "ps":
      run["ps_pid"] = _task_pid(cls.model_dir, "ps/0")
      if run["ps_pid"] is not None:
        os.kill(run["ps_pid"], signal.SIGTERM)
    else:
      launcher.proc.send_signal(
          signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    run["code"] = launcher.wait()
    run["text"] = launcher.out.text()
    run["step"] = _saved_step(cls.model_dir)
    run["marker"] = run_state.read_training_stopped(cls.model_dir)
    return run

  def _run(self, index):
    self.assertGreater(len(self.runs), index, self.failure)
    run = self.runs[index]
    return run, run["text"][-8000:]

  def _assert_saved_where_it_stopped(self, index):
    run, detail = self._run(index)
    step = run["step"]
    self.assertIsNotNone(step, detail)
    self.assertGreaterEqual(step, run["step_seen"], detail)
    marker = run["marker"]
    self.assertEqual(marker, dict(marker, reason="preempted",
                                  global_step=step), detail)
    self.assertNotIn("lost peer ps/0", run["text"], detail)
    # The ps served until its trainers stopped: it says so, or, once they
    # exited, the launcher's own stop signal (a second one) ended it.
    self.assertRegex(run["text"],
                     r"\[ps/0\] .*(ps \| ps/0 \| every trainer stopped|"
                     r"preempt \| ps/0 \| SIGTERM again: exiting now)",
                     detail)
    # The next run (a restart on the same model_dir) resumes at that step.
    restart, detail = self._run(index + 1)
    self.assertTrue(restart["starts"], detail)
    self.assertEqual(min(int(m.group(1)) for _, m in restart["starts"]),
                     step, detail)

  def _assert_launcher_stopped(self, index, signum):
    run, detail = self._run(index)
    self.assertEqual(run["code"], 128 + signum, detail)
    self.assertIn("launch | stopping chief/0, worker/0 first (their stop "
                  "checkpoint), then ps/0", detail)
    self._assert_saved_where_it_stopped(index)

  @parameterized.named_parameters(("sigterm", 0, signal.SIGTERM),
                                  ("ctrl_c", 1, signal.SIGINT))
  def test_stopping_the_launcher_saves_the_chiefs_step(self, index, signum):
    self._assert_launcher_stopped(index, signum)

  def test_a_preempted_ps_is_a_preempted_peer(self):
    run, detail = self._run(2)
    self.assertIsNotNone(run["ps_pid"], detail)
    # The chief stopped as preempted: its status is the launcher's.
    self.assertEqual(run["code"], stop_signal.exit_status("SIGTERM"), detail)
    # The trainer that reads the ps's stop first stops as preempted; when
    # the worker is first (1 of 3 clean-clone suite runs), the launcher's
    # SIGTERM stops the chief, which saves where it stopped all the same.
    self.assertRegex(detail, r"\[(chief|worker)/0\] .*ps/0 is stopping "
                     r"\(SIGTERM\): stopping after the current step", detail)
    self.assertRegex(detail, r"\[chief/0\] .*(ps/0 is stopping \(SIGTERM\)"
                     r"|SIGTERM): stopping after the current step and saving",
                     detail)
    self._assert_saved_where_it_stopped(2)

  def test_the_last_restart_trains_to_its_max_steps_and_ends(self):
    last, detail = self._run(3)
    self.assertEqual(last["code"], 0, detail)
    self.assertGreaterEqual(_saved_step(self.model_dir),
                            self.runs[2]["step"] + _ps_launch.MAX_STEPS,
                            detail)

  # tests/test_ps_modes.py's runs, with --strategy=parameter_server.

  def _mode(self, mode):
    self.assertIn(mode, self.modes, self.failure)
    return self.modes[mode]

  def test_train_then_evaluate_parameter_server(self):
    step = _ps_launch.assert_trained(self, self._mode("train"))
    _ps_launch.assert_evaluated(self, self._mode("evaluate"), step)

  def test_then_export_parameter_server(self):
    """The chief exports in process (its predictions: test_ps_modes.py's
    `EveryTaskExitsTest`, without the launcher)."""
    _ps_launch.assert_exported(self, self._mode("export"))

  def test_evaluator_task_exits_in_train_mode(self):
    _ps_launch.assert_evaluator_exited_in_train_mode(self,
                                                     self._mode("train"))


if __name__ == "__main__":
  absltest.main()
