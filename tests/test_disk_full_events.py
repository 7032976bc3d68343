"""A disk that fills while training writes event files: noticed at the first
failed write (one summary interval), the chief tries its checkpoint, and
`harness.main` prints the documented ResourceExhaustedError line; nothing
temporary is left in model_dir.

The slow test mounts a 2 MiB tmpfs (root only), trains with
--save_summary_steps=1, then fills the tmpfs from the test.
"""

import os
import subprocess

from absl.testing import absltest
import pytest

from tests import _support

_START_SECS = 240
_NOTICE_SECS = 60  # One summary interval is one step; the rest is load.


def _fill(folder):
  try:
    with open(os.path.join(folder, "filler"), "wb", buffering=0) as f:
      while True:
        f.write(b"x" * 4096)
  except OSError:
    pass  # Full.


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root: "
                    "run the suite as root")
class DiskFullDuringEventWritesTest(absltest.TestCase):

  def test_documented_line_soon_and_no_temp_files(self):
    disk = self.create_tempdir().full_path
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk],
                   check=True, timeout=30)
    self.addCleanup(subprocess.run, ["umount", "-l", disk], check=False,
                    timeout=30)
    model_dir = os.path.join(disk, "m")
    child = _support.ChildProcess(
        ["-m", "harness.main", "--model_fn=linear", "--input_fn=constant",
         "--mode=train", "--max_steps=1000000000", "--save_summary_steps=1",
         "--save_checkpoints_steps=1000000000", "--log_step_count_steps=1000",
         f"--model_dir={model_dir}"], "trainer")
    self.addCleanup(child.kill_group)
    self.assertTrue(child.wait_for_text("step 1000/", _START_SECS),
                    child.describe())
    _fill(disk)
    code = child.wait(_NOTICE_SECS)
    self.assertEqual(code, 1, child.describe())
    self.assertIn(f"cannot write event files in {model_dir}", child.output,
                  child.describe())
    failures = [line for line in child.lines if "harness.main:" in line]
    self.assertLen(failures, 1, child.describe())
    failures = [_support.last_error(child.output)]  # Folded over lines.
    self.assertTrue(failures[0].startswith(
        "harness.main: ResourceExhaustedError: No space left on device while "
        f"writing {model_dir}"), child.describe())
    self.assertIn(f"The newest usable checkpoint is {model_dir}/model.ckpt-0",
                  failures[0])
    self.assertIn(f"Fix: free space in {disk} (", failures[0])
    self.assertNotIn("Traceback", child.output, child.describe())
    leftovers = [n for n in os.listdir(model_dir)
                 if "tmp" in n or n.endswith("_temp")]
    self.assertEqual(leftovers, [], child.describe())



if __name__ == "__main__":
  absltest.main()
