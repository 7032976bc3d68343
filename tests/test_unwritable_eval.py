"""An unwritable `<model_dir>/eval` fails the evaluation with one line.

TensorFlow's event writer drops every event of a folder it cannot open and
says so only at --verbosity=debug; `storage.check_writable` probes eval/ (and
export/<name>) before the first evaluation. The slow tests mount a read-only
tmpfs on eval/ or bind-mount the model_dir read-only (root only) and run the
real `python -m harness.main`.
"""

import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest
import pytest

from harness._tf import tf
from harness.state import storage
from tests import _support

_RUN_SECS = 300


class CheckWritableTest(absltest.TestCase):

  def test_probe_creates_and_leaves_nothing(self):
    model_dir = self.create_tempdir().full_path
    storage.check_writable(os.path.join(model_dir, "eval"))
    self.assertEqual(os.listdir(model_dir), [])
    os.mkdir(os.path.join(model_dir, "eval"))
    storage.check_writable(os.path.join(model_dir, "eval"))
    self.assertEqual(os.listdir(os.path.join(model_dir, "eval")), [])

  def test_unwritable_folder_is_named(self):
    if os.geteuid() == 0:
      self.skipTest("root writes a 0500 folder: run the suite as a non-root "
                    "user to check it (as root, ReadOnlyTest uses a ro mount)")
    folder = self.create_tempdir().full_path
    os.chmod(folder, 0o500)
    self.addCleanup(os.chmod, folder, 0o700)
    with self.assertRaises(tf.errors.OpError) as raised:
      storage.check_writable(folder)
    self.assertIn(folder, raised.exception.message)
    self.assertNotIn(".harness-write-check", raised.exception.message)


def _mount_read_only(test, folder):
  os.makedirs(folder, exist_ok=True)
  subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs",
                  folder], check=True, timeout=30)
  test.addCleanup(subprocess.run, ["umount", folder], check=False,
                  timeout=30)


def _main(model_dir, mode, *extra, cwd=None):
  return _support.run(
      [sys.executable, "-m", "harness.main", "--model_fn=linear",
       "--input_fn=constant", f"--mode={mode}", f"--model_dir={model_dir}",
       *extra], timeout_secs=_RUN_SECS, cwd=cwd)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0,
                    reason="a read-only tmpfs or bind mount needs root: run "
                    "the suite as root")
class ReadOnlyTest(absltest.TestCase):
  """Both tests read one model_dir trained to step 4 (one run, not two)."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.trained = tempfile.mkdtemp()
    cls.train = _main(cls.trained, "train", "--max_steps=4")

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.trained, ignore_errors=True)
    super().tearDownClass()

  def setUp(self):
    super().setUp()
    self.assertEqual(self.train.returncode, 0, self.train.description)

  def _assert_one_line(self, proc, eval_dir):
    self.assertEqual(proc.returncode, 1, proc.description)
    self.assertEqual(proc.output.count("harness.main:"), 1, proc.description)
    last = _support.last_error(proc.stderr)  # Folded over lines.
    self.assertEqual(
        last, f"harness.main: PermissionDeniedError: cannot write {eval_dir}: "
        f"Read-only file system. Fix: make {eval_dir} writable for this user "
        "(is it a read-only mount, or owned by another user?), or pass a "
        "--model_dir in a writable folder.", proc.description)

  def test_train_and_evaluate_and_evaluate_fail_with_one_line(self):
    model_dir = self.trained
    eval_dir = os.path.join(model_dir, "eval")
    _mount_read_only(self, eval_dir)
    self._assert_one_line(_main(model_dir, "evaluate", "--eval_steps=2"),
                          eval_dir)
    both = _main(model_dir, "train_and_evaluate", "--max_steps=8",
                 "--eval_steps=2")
    self._assert_one_line(both, eval_dir)
    # Reported before training: no step past the first run's 4 was taken.
    self.assertEqual(_support.checkpoint_steps(model_dir)[-1], 4,
                     both.description)
    self.assertEqual(_support.steps_logged(both.output, "local"), [],
                     both.description)

  def test_predictions_go_to_the_current_folder_and_the_log_says_so(self):
    model_dir = self.create_tempdir().full_path
    subprocess.run(["mount", "--bind", self.trained, model_dir], check=True,
                   timeout=30)
    self.addCleanup(subprocess.run, ["umount", model_dir], check=False,
                    timeout=30)
    subprocess.run(["mount", "-o", "remount,bind,ro", model_dir], check=True,
                   timeout=30)
    here = self.create_tempdir().full_path
    proc = _main(model_dir, "predict", cwd=here)
    self.assertEqual(proc.returncode, 0, proc.description)
    path = os.path.join(here, "predictions.jsonl")
    self.assertIn(f"wrote 10000 predictions to {path} (not in model_dir)",
                  proc.output, proc.description)
    self.assertTrue(os.path.getsize(path) > 0)


if __name__ == "__main__":
  absltest.main()
