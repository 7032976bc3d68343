"""The binary's end: no silent pause after its last line (issue 39).

After the final export and the summary, `python -m harness.main` used to
stay silent for seconds: interpreter shutdown's full garbage collections
walked TensorFlow's modules and the job's graphs. The binary freezes that
heap out of them (`harness.main._main_then_exit`); this test reads, from
an atexit handler that runs last (tests/programs/exit_heap.py), how much
of the heap shutdown is still left to walk.
"""

import os
import sys
import time

from absl.testing import absltest
import pytest

from tests import _support

_PROGRAM = os.path.join(os.path.dirname(__file__), "programs", "exit_heap.py")
_TIMEOUT_SECS = 240
# Shutdown walks at most this share of the objects the process tracks; the
# rest (TensorFlow, the graphs) is frozen. Without the freeze it walks all.
_MAX_WALKED_SHARE = 0.1


class ExitPauseTest(absltest.TestCase):

  @pytest.mark.slow  # One run of the binary.
  def test_shutdown_is_left_no_heap_to_walk_after_the_export(self):
    model_dir = self.create_tempdir().full_path
    start = time.monotonic()
    process = _support.run(
        [sys.executable, _PROGRAM, "--model_fn=linear", "--input_fn=constant",
         "--max_steps=5", "--eval_steps=1", "--exporters=final",
         f"--model_dir={model_dir}"], timeout_secs=_TIMEOUT_SECS)
    description = (f"{process.description}\nrun took "
                   f"{time.monotonic() - start:.1f} s")
    self.assertEqual(process.returncode, 0, description)
    self.assertIn("export: ", process.stdout, description)
    report = _support.printed_literal(process.stdout, "exit_heap")
    tracked = report["walked"] + report["frozen"]
    self.assertLess(report["walked"], _MAX_WALKED_SHARE * tracked,
                    f"shutdown is left {report} to walk\n{description}")


if __name__ == "__main__":
  absltest.main()
