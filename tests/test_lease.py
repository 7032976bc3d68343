"""One writer per model_dir: harness.state.lease, alone and through harness.main.

The unit tests inject the clock, host and pid liveness. The slow tests run
real `python -m harness.main` trainers on one model_dir: a second trainer
fails fast naming the first; a trainer killed with SIGKILL leaves a lease
that the next one takes over with a warning.
"""

import json
import os
import shutil
import signal
import subprocess
import sys

from absl.testing import absltest
import pytest

from harness import errors
from harness._tf import tf
from harness.state import lease
from harness.state import lease_file
from harness.state import processes
from tests import _processes
from tests import _support
from tests import conftest

_HOST = "host-a"
_WAIT_SECS = 180  # TF start-up of a trainer on a loaded 2-core machine.
_RUN_SECS = 240


class _Clock:

  def __init__(self, now=1000.0):
    self.now = now

  def __call__(self):
    return self.now


def _advance(clock, then=None):
  """A `sleep` for `acquire` that moves the fake clock (and calls `then`)."""

  def sleep(secs):
    clock.now += secs
    if then is not None:
      then()

  return sleep


def _acquire(model_dir, clock, **kwargs):
  kwargs.setdefault("sleep", _advance(clock))
  kwargs.setdefault("host", _HOST)
  kwargs.setdefault("pid_alive", lambda pid: True)
  kwargs.setdefault("refresh_secs", 3600)  # No background refresh in tests.
  return lease.acquire(model_dir, clock=clock, **kwargs)


def _write_record(model_dir, **fields):
  """Writes a lease file as another trainer (not this process's) left it."""
  record = dict(host=_HOST, pid=111, task="chief/0", start_time=990.0,
                refreshed_time=998.0, refresh_secs=5.0, token="other")
  record.update(fields)
  lease_file.write(model_dir, lease_file.LeaseRecord(**record))


class LeaseTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    self.clock = _Clock()

  def test_second_trainer_is_refused_naming_the_holder(self):
    first = _acquire(self.model_dir, self.clock, pid=111, task_label="chief/0")
    self.addCleanup(first.release)
    self.clock.now += 20
    with self.assertRaises(errors.ModelDirLeaseError) as raised:
      _acquire(self.model_dir, self.clock, pid=222)
    message = str(raised.exception)
    self.assertIn(f"model_dir {self.model_dir} is in use by another trainer: "
                  "host host-a, pid 111, task chief/0", message)
    self.assertIn("last refreshed 20 s ago", message)
    self.assertIn("--force_takeover", message)
    self.assertEqual(lease_file.read(self.model_dir).pid, 111)

  def test_dead_holder_on_this_host_is_taken_over(self):
    _acquire(self.model_dir, self.clock, pid=111)  # Never released: "killed".
    with self.assertLogs(level="WARNING") as logs:
      second = _acquire(self.model_dir, self.clock, pid=222,
                        pid_alive=lambda pid: pid != 111)
    self.addCleanup(second.release)
    self.assertIn("holder pid 111 is not running on this host",
                  "\n".join(logs.output))
    self.assertEqual(lease_file.read(self.model_dir).pid, 222)

  def test_live_holder_on_another_host_is_refused_once_it_refreshes(self):
    first = _acquire(self.model_dir, self.clock, pid=111, host="host-b",
                     refresh_secs=10)
    # Its real 10 s refresher is stopped at clean-up, before the temporary
    # model_dir goes (it used to warn after the suite ended).
    self.addCleanup(first.release)
    self.clock.now += 20
    with self.assertLogs(level="INFO") as logs:
      with self.assertRaises(errors.ModelDirLeaseError):
        _acquire(self.model_dir, self.clock, pid=222,
                 sleep=_advance(self.clock, then=first.refresh))
    self.assertIn("held by local on host-b (another process space)",
                  "\n".join(logs.output))
    self.assertEqual(lease_file.read(self.model_dir).token, first.record.token)

  def test_holder_elsewhere_that_never_refreshes_is_taken_over(self):
    # A restarted pod: its dead predecessor (another PID namespace, same
    # host name) refreshed 2 s before it was killed.
    first = _acquire(self.model_dir, self.clock, pid=1, refresh_secs=5,
                     space=("pid:[4026532001]", "boot-1"))
    first._stop.set()  # pylint: disable=protected-access
    self.addCleanup(first.release)
    self.clock.now += 2
    start = self.clock.now
    with self.assertLogs(level="WARNING") as logs:
      second = _acquire(self.model_dir, self.clock, pid=1,
                        space=("pid:[4026532002]", "boot-1"))
    self.addCleanup(second.release)
    self.assertIn("taking over the stale lease", "\n".join(logs.output))
    self.assertEqual(lease_file.read(self.model_dir).token, second.record.token)
    waited = self.clock.now - start
    limit = lease_file.STALE_AFTER_REFRESHES * 5
    self.assertGreater(waited, limit - 2)
    self.assertLessEqual(waited, limit + 5)

  def test_same_pid_in_another_pid_namespace_is_not_evidence(self):
    # Two containers with one host name, both trainers pid 1.
    first = _acquire(self.model_dir, self.clock, pid=1,
                     space=("pid:[4026532001]", "boot-1"))
    self.addCleanup(first.release)
    self.clock.now += 2
    for space in (("pid:[4026532002]", "boot-1"),
                  ("pid:[4026532001]", "boot-2")):
      with self.assertRaises(errors.ModelDirLeaseError):
        _acquire(self.model_dir, self.clock, pid=1, space=space,
                 pid_alive=lambda pid: False,
                 sleep=_advance(self.clock, then=first.refresh))
    self.assertEqual(lease_file.read(self.model_dir).token, first.record.token)

  def test_same_pid_namespace_and_boot_still_trusts_a_dead_pid(self):
    space = ("pid:[4026532001]", "boot-1")
    # A lease of pid 1 that this process does not hold: a killed container's.
    _write_record(self.model_dir, pid=1, pid_ns=space[0], boot_id=space[1],
                  refreshed_time=self.clock.now)
    with self.assertLogs(level="WARNING") as logs:
      second = _acquire(self.model_dir, self.clock, pid=1, space=space)
    self.addCleanup(second.release)
    self.assertIn("the holder was this process (pid 1)", "\n".join(logs.output))

  def test_old_lease_file_without_namespace_is_judged_by_age_only(self):
    old = {"host": _HOST, "pid": 111, "task": "local", "start_time": 990.0,
           "refreshed_time": 998.0, "refresh_secs": 5.0, "token": "old"}
    path = os.path.join(self.model_dir, lease_file.LEASE_FILE)

    def write(refreshed_time):
      with open(path, "w") as f:
        json.dump(dict(old, refreshed_time=refreshed_time), f)

    write(998.0)
    record = lease_file.read(self.model_dir)
    self.assertEqual((record.pid, record.pid_ns, record.boot_id),
                     (111, "", ""))
    with self.assertRaises(errors.ModelDirLeaseError):  # It refreshes.
      _acquire(self.model_dir, self.clock, pid=222,
               pid_alive=lambda pid: False,
               sleep=_advance(self.clock, then=lambda: write(self.clock.now)))
    with self.assertLogs(level="WARNING") as logs:  # It refreshes no more.
      second = _acquire(self.model_dir, self.clock, pid=222,
                        pid_alive=lambda pid: False)
    self.addCleanup(second.release)
    self.assertIn("not refreshed for", "\n".join(logs.output))
    self.assertEqual(lease_file.read(self.model_dir).pid_ns,
                     processes.process_space()[0])

  def test_failed_write_leaves_no_temp_file(self):
    held = _acquire(self.model_dir, self.clock, pid=111)
    self.addCleanup(held.release)
    real_rename = tf.io.gfile.rename

    def no_space(*unused_args, **unused_kwargs):
      raise OSError(28, "No space left on device")

    tf.io.gfile.rename = no_space
    try:
      with self.assertRaises(OSError):
        held.refresh()
    finally:
      tf.io.gfile.rename = real_rename
    self.assertEqual(os.listdir(self.model_dir), [lease_file.LEASE_FILE])

  def test_force_takeover_stops_the_old_holder_at_its_refresh(self):
    first = _acquire(self.model_dir, self.clock, pid=111)
    second = _acquire(self.model_dir, self.clock, pid=222,
                      force_takeover=True)
    self.addCleanup(second.release)
    first.check()  # Not noticed before its refresh.
    first.refresh()
    with self.assertRaises(errors.ModelDirLeaseError) as raised:
      first.check()
    self.assertIn("was taken over by another trainer (host host-a, pid 222",
                  str(raised.exception))
    first.release()  # Leaves the new holder's lease alone.
    self.assertEqual(lease_file.read(self.model_dir).pid, 222)

  def test_refresh_and_release_on_ram_filesystem(self):
    model_dir = "ram://lease_test/model"
    held = _acquire(model_dir, self.clock, pid=111)
    self.clock.now += 7
    held.refresh()
    self.assertEqual(lease_file.read(model_dir).refreshed_time, self.clock.now)
    held.release()
    self.assertIsNone(lease_file.read(model_dir))
    self.assertFalse(tf.io.gfile.exists(f"{model_dir}/{lease_file.LEASE_FILE}"))

  def test_refresh_secs_must_be_positive(self):
    with self.assertRaisesRegex(errors.ConfigError, "`refresh_secs` must be"):
      lease.acquire(self.model_dir, refresh_secs=0)


def _main_command(model_dir, *extra):
  return [sys.executable, "-m", "harness.main", "--model_fn=linear",
          "--input_fn=constant", "--mode=train", f"--model_dir={model_dir}",
          "--save_checkpoints_steps=100000000", "--log_step_count_steps=1000",
          *extra]


def _describe(name, command, code, out):
  return f"{name}: {command}\nexit: {code}\noutput tail:\n{out[-3000:]}"


@pytest.mark.slow
class TwoTrainersTest(absltest.TestCase):
  """Real `python -m harness.main` processes on one model_dir."""

  def _start_holder(self, model_dir, wrap=lambda command: command):
    command = wrap(_main_command(model_dir, "--max_steps=1000000000"))
    log_path = os.path.join(self.create_tempdir().full_path, "holder.log")
    log = open(log_path, "wb")  # pylint: disable=consider-using-with
    self.addCleanup(log.close)
    proc = _processes.popen(command, cwd=conftest.REPO_ROOT,
                            env=conftest.child_env(), stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    self.addCleanup(self._kill, proc)
    _support.poll_until(lambda: lease_file.read(model_dir) is not None or (
        proc.poll() is not None), _WAIT_SECS, interval_secs=0.2)
    with open(log_path, "rb") as f:
      out = f.read().decode("utf-8", "replace")
    self.assertIsNotNone(
        lease_file.read(model_dir),
        "the first trainer took no lease in time\n" + _describe(
            "first", command, proc.poll(), out))
    return proc

  def _kill(self, proc):
    if proc.poll() is None:
      os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)

  def _run(self, command):
    proc = _support.run(command, timeout_secs=_RUN_SECS)
    return proc, proc.output

  def test_second_fails_naming_first_and_killed_holder_is_taken_over(self):
    model_dir = self.create_tempdir().full_path
    first = self._start_holder(model_dir)
    holder = lease_file.read(model_dir)
    self.assertEqual(holder.pid, first.pid)

    command = _main_command(model_dir, "--max_steps=20")
    second, out = self._run(command)
    detail = _describe("second", command, second.returncode, out)
    self.assertEqual(second.returncode, 1, detail)
    self.assertIn(f"model_dir {model_dir} is in use by another trainer: host "
                  f"{holder.host}, pid {first.pid}", _support.flat(out), detail)
    self.assertIn("--force_takeover", _support.flat(out), detail)
    self.assertIsNone(first.poll(), "the first trainer stopped")
    self.assertEqual(lease_file.read(model_dir).pid, first.pid)

    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    self.assertEqual(lease_file.read(model_dir).pid, first.pid)  # Left behind.
    third, out = self._run(command)
    detail = _describe("third", command, third.returncode, out)
    self.assertEqual(third.returncode, 0, detail)
    self.assertIn("taking over the stale lease", out, detail)
    self.assertIn(f"holder pid {first.pid} is not running on this host", out,
                  detail)
    self.assertIsNone(lease_file.read(model_dir), "the lease was not released")
    self.assertEqual(
        tf.train.load_variable(tf.train.latest_checkpoint(model_dir),
                               "global_step"), 20)

  @pytest.mark.skipif(
      shutil.which("unshare") is None or os.geteuid() != 0,
      reason="needs root and unshare(1) for PID namespaces: run the suite "
      "as root with util-linux installed")
  def test_same_host_other_pid_namespace_is_refused(self):
    # Two containers with one host name: both trainers are pid 1.
    model_dir = self.create_tempdir().full_path
    first = self._start_holder(model_dir, wrap=_unshared)
    holder = lease_file.read(model_dir)
    self.assertEqual(holder.pid, 1)
    command = _unshared(_main_command(model_dir, "--max_steps=20"))
    second, out = self._run(command)
    detail = _describe("second", command, second.returncode, out)
    self.assertEqual(second.returncode, 1, detail)
    self.assertIn(f"model_dir {model_dir} is in use by another trainer: host "
                  f"{holder.host}, pid 1,", _support.flat(out), detail)
    self.assertNotIn("taking over", out, detail)
    self.assertIsNone(first.poll(), "the first trainer stopped")
    self.assertEqual(lease_file.read(model_dir).token, holder.token)
    self.assertNotEqual(holder.pid_ns, processes.process_space()[0])


def _unshared(command):
  return ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc",
          *command]


if __name__ == "__main__":
  absltest.main()
