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
import signal
import subprocess
import sys
import threading

from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness import launch
from harness.core import stop_signal
from harness.state import run_state
from tests import _processes
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

  def _start_and_train(self, model_dir, max_steps=1_000_000):
    launcher = _Launcher(_command(model_dir, max_steps))
    self.addCleanup(launcher.kill)
    launch_watch.wait_for(launcher.out, _STEP, _BOUND_SECS)
    return launcher

  def _assert_saved_where_it_stopped(self, launcher, model_dir, step_seen,
                                     detail):
    step = _saved_step(model_dir)
    self.assertIsNotNone(step, detail)
    self.assertGreaterEqual(step, step_seen, detail)
    marker = run_state.read_training_stopped(model_dir)
    self.assertEqual(marker, dict(marker, reason="preempted",
                                  global_step=step), detail)
    self.assertNotIn("lost peer ps/0", launcher.out.text(), detail)
    # The ps served until its trainers stopped: it says so, or, once they
    # exited, the launcher's own stop signal (a second one) ended it.
    self.assertRegex(launcher.out.text(),
                     r"\[ps/0\] .*(ps \| ps/0 \| every trainer stopped|"
                     r"preempt \| ps/0 \| SIGTERM again: exiting now)",
                     detail)
    return step

  def _assert_restart_resumes_at(self, model_dir, step):
    launcher = _Launcher(_command(model_dir, step + 10))
    self.addCleanup(launcher.kill)
    code = launcher.wait()
    detail = launcher.out.text()[-8000:]
    self.assertEqual(code, 0, detail)
    starts = launcher.out.find(_STARTING)
    self.assertTrue(starts, detail)
    self.assertEqual(min(int(m.group(1)) for _, m in starts), step, detail)
    self.assertGreaterEqual(_saved_step(model_dir), step + 10, detail)

  @parameterized.named_parameters(("sigterm", signal.SIGTERM),
                                  ("ctrl_c", signal.SIGINT))
  def test_stopping_the_launcher_saves_the_chiefs_step(self, signum):
    model_dir = self.create_tempdir().full_path
    launcher = self._start_and_train(model_dir)
    step_seen = int(launcher.out.find(_STEP)[-1][1].group(1))
    launcher.proc.send_signal(signum)
    code = launcher.wait()
    detail = launcher.out.text()[-8000:]
    self.assertEqual(code, 128 + signum, detail)
    self.assertIn("launch | stopping chief/0, worker/0 first (their stop "
                  "checkpoint), then ps/0", detail)
    step = self._assert_saved_where_it_stopped(launcher, model_dir,
                                               step_seen, detail)
    self._assert_restart_resumes_at(model_dir, step)

  def test_a_preempted_ps_is_a_preempted_peer(self):
    model_dir = self.create_tempdir().full_path
    launcher = self._start_and_train(model_dir)
    ps_pid = _task_pid(model_dir, "ps/0")
    self.assertIsNotNone(ps_pid, launcher.out.text()[-4000:])
    step_seen = int(launcher.out.find(_STEP)[-1][1].group(1))
    os.kill(ps_pid, signal.SIGTERM)
    code = launcher.wait()
    detail = launcher.out.text()[-8000:]
    # The chief stopped as preempted: its status is the launcher's.
    self.assertEqual(code, stop_signal.exit_status("SIGTERM"), detail)
    self.assertRegex(detail, r"\[chief/0\] .*ps/0 is stopping \(SIGTERM\): "
                     "stopping after the current step and saving", detail)
    step = self._assert_saved_where_it_stopped(launcher, model_dir,
                                               step_seen, detail)
    self._assert_restart_resumes_at(model_dir, step)


if __name__ == "__main__":
  absltest.main()
