"""Two trainers on one model_dir, through `Estimator.train` (issue 37).

Defect 1: a second trainer, refused the lease, had already removed the live
trainer's checkpoint save in progress (`model.ckpt-N_temp/`) as "left by an
interrupted checkpoint save". Defect 2: a second `Estimator.train` in
another thread of the same process took over the live lease as an earlier
run's, and the first stopped.
"""

import os
import socket
import threading
import time

from absl.testing import absltest
import pytest

from harness import errors
from harness._tf import tf
from harness.state import lease
from harness.state import lease_file
from harness.state import processes
from harness.state import run_state
from tests import _processes
from tests import _support

_WAIT_SECS = 120


def _tree(folder):
  """{relative path: (size, mtime_ns)} of every file and folder under it."""
  entries = {}
  for root, dirs, files in os.walk(folder):
    for name in dirs + files:
      path = os.path.join(root, name)
      info = os.stat(path)
      entries[os.path.relpath(path, folder)] = (
          info.st_size if name in files else None, info.st_mtime_ns)
  return entries


class RefusedTrainerTest(absltest.TestCase):

  def test_refused_trainer_keeps_the_holders_save_in_progress(self):
    model_dir = self.create_tempdir().full_path
    # The live holder: another process of this host, saving checkpoint 36.
    holder = _processes.popen(["sleep", "300"])
    self.addCleanup(holder.wait, timeout=30)
    self.addCleanup(holder.kill)
    ns, boot = processes.process_space()
    lease_file.write(model_dir, lease_file.LeaseRecord(
        host=socket.gethostname(), pid=holder.pid, task="local",
        start_time=time.time() - 60, refreshed_time=time.time(),
        refresh_secs=5.0, token="holder", pid_ns=ns, boot_id=boot))
    saving = os.path.join(model_dir, "model.ckpt-36_temp")
    os.makedirs(saving)
    with open(os.path.join(saving, "part-00000-of-00001.data-00000-of-00001"),
              "wb") as f:
      f.write(b"\0" * 4096)
    run_state.write_training_stopped(model_dir, "early_stopped", 30)
    an_old_time = time.time() - 30  # Begun before the second trainer came.
    for path in (saving, *(os.path.join(saving, n) for n in os.listdir(
        saving))):
      os.utime(path, (an_old_time, an_old_time))
    before = _tree(model_dir)
    estimator = _support.linear_estimator(model_dir, save_checkpoints_steps=1)
    with self.assertRaises(errors.ModelDirLeaseError) as raised:
      estimator.train(_support.constant_input_fn, max_steps=3)
    self.assertIn(f"is in use by another trainer: host {socket.gethostname()}"
                  f", pid {holder.pid}", str(raised.exception))
    self.assertEqual(_tree(model_dir), before,
                     "the refused trainer changed model_dir")
    self.assertEqual(lease_file.read(model_dir).token, "holder")


@pytest.mark.slow
class SameProcessTest(absltest.TestCase):
  """Two `Estimator.train` calls in two threads of this process."""

  def test_second_thread_is_refused_at_once_and_first_finishes(self):
    model_dir = self.create_tempdir().full_path
    first_training = threading.Event()
    second_done = threading.Event()
    outcome = {}

    class _PauseOnce(tf.compat.v1.train.SessionRunHook):
      """Holds the first trainer at step 2 until the second was refused."""

      def after_run(self, run_context, run_values):
        del run_context, run_values
        if not first_training.is_set():
          first_training.set()
          second_done.wait(_WAIT_SECS)

    def first():
      try:
        _support.linear_estimator(model_dir, save_checkpoints_steps=2).train(
            _support.constant_input_fn, max_steps=6, hooks=[_PauseOnce()])
        outcome["first"] = "finished"
      except Exception as e:  # pylint: disable=broad-except
        outcome["first"] = e

    thread = threading.Thread(target=first, name="first-trainer")
    thread.start()
    self.addCleanup(thread.join, _WAIT_SECS)
    self.addCleanup(second_done.set)
    self.assertTrue(first_training.wait(_WAIT_SECS), "the first never stepped")
    started = time.monotonic()
    try:
      with self.assertRaises(errors.ModelDirLeaseError) as raised:
        _support.linear_estimator(model_dir, save_checkpoints_steps=2).train(
            _support.constant_input_fn, max_steps=6)
    finally:
      second_done.set()
    refused_after = time.monotonic() - started
    self.assertIn("is in use by another trainer in this process, in thread "
                  "'first-trainer'", str(raised.exception))
    self.assertLess(refused_after, lease_file.STALE_AFTER_REFRESHES * 5,
                    "the refusal waited for the lease to go stale")
    thread.join(_WAIT_SECS)
    self.assertEqual(outcome.get("first"), "finished", outcome)
    self.assertEqual(_support.checkpoint_step(model_dir), 6)
    self.assertIsNone(lease_file.read(model_dir), "the first kept its lease")
    # A later run in this process takes the model_dir as usual.
    _support.linear_estimator(model_dir, save_checkpoints_steps=2).train(
        _support.constant_input_fn, max_steps=8)
    self.assertEqual(_support.checkpoint_step(model_dir), 8)


if __name__ == "__main__":
  absltest.main()
