"""Issue 51 item 5: an evaluator that got SIGTERM during its final export
finished it, then exited 143 naming the wrong stage, so its pod was replaced
and the final evaluation and export ran again. Now a SIGTERM during the
final export is a finished job (the export completes, no stop line, exit
0); during another export the stop names that export. Real signals, in a
child process (tests/programs/final_export_stop.py).
"""

import subprocess
import sys

from absl.testing import absltest

from tests import conftest


def _run(test, which):
  model_dir = test.create_tempdir().full_path
  return subprocess.run(
      [sys.executable, "-m", "tests.programs.final_export_stop", model_dir,
       which], capture_output=True, text=True, timeout=120, check=False,
      cwd=conftest.REPO_ROOT, env=conftest.child_env())


class FinalExportStopTest(absltest.TestCase):

  def test_sigterm_during_the_final_export_is_a_finished_job(self):
    proc = _run(self, "final")
    self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
    self.assertIn("exports: ['/export/signalled/1']", proc.stdout)
    self.assertIn("still running after the bound", proc.stdout)
    lines = [l for l in proc.stderr.splitlines() if "SIGTERM" in l]
    self.assertLen(lines, 1, proc.stderr)
    self.assertIn("eval | SIGTERM during the final export (an export "
                  "(signalled, model.ckpt-100) (it completed)): the job is "
                  "done, not preempted", lines[0])

  def test_sigterm_during_another_export_names_that_export(self):
    proc = _run(self, "not_final")
    self.assertEqual(proc.returncode, 143, proc.stdout + proc.stderr)
    self.assertIn("terminated in: an export (signalled, model.ckpt-100) (it "
                  "completed)", proc.stdout)


if __name__ == "__main__":
  absltest.main()
