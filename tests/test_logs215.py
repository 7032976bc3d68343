"""tf.estimator 2.15's log lines, printed once, as 2.15 printed them.

A 2.15 script run through `python -m harness.run` (or after `import
harness.compat`) prints every TensorFlow log line once, and the lines
scripts and dashboards grep (`loss = ..., step = ...`, `global_step/sec`,
`Loss for final step`, `Saving dict for global step`, ...) in 2.15's words
and order. The reference is what tf.estimator 2.15 printed for the same
program (tests/fixtures/logs215/legacy_logs.txt, recorded by
tests/fixtures/logs215/record.py).
"""

import logging
import pathlib
import sys

import pytest
from absl.testing import absltest

from harness import _tf as tf_import
from tests import _support
from tests import logs215_lines

_TESTS = pathlib.Path(__file__).resolve().parent
_PROGRAM = _TESTS / "legacy_programs" / "legacy_logs.py"
_RECORDED = _TESTS / "fixtures" / "logs215" / "legacy_logs.txt"
_TIMEOUT_SECS = 300

_THROUGH_COMPAT = (
    "import sys, runpy; import harness.compat; "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


class Lines215Test(absltest.TestCase):

  def _check(self, command, model_dir):
    result = _support.run(command, timeout_secs=_TIMEOUT_SECS)
    self.assertEqual(result.returncode, 0, result.description)
    tf_lines = [line for line in result.stderr.splitlines()
                if line.startswith(("INFO:tensorflow:", "WARNING:tensorflow:"))]
    doubled = [a for a, b in zip(tf_lines, tf_lines[1:]) if a == b]
    self.assertEqual(doubled, [], "TensorFlow lines printed twice")
    expected = _RECORDED.read_text().splitlines()
    self.assertEqual(logs215_lines.normalize(result.stderr, model_dir),
                     expected, result.description)

  @pytest.mark.slow
  def test_harness_run_prints_the_215_lines_once(self):
    model_dir = self.create_tempdir().full_path
    self._check([sys.executable, "-m", "harness.run", str(_PROGRAM),
                 model_dir], model_dir)

  @pytest.mark.slow
  def test_import_harness_compat_prints_the_215_lines_once(self):
    model_dir = self.create_tempdir().full_path
    self._check([sys.executable, "-c", _THROUGH_COMPAT, str(_PROGRAM),
                 model_dir], model_dir)


class OnceFilterTest(absltest.TestCase):
  """TensorFlow's own handler prints only while the root logger has none."""

  def setUp(self):
    super().setUp()
    root = logging.getLogger()
    saved = list(root.handlers)
    self.addCleanup(lambda: root.handlers.__setitem__(slice(None), saved))
    root.handlers[:] = []
    self.record = logging.LogRecord("tensorflow", logging.INFO, __file__, 1,
                                    "Graph was finalized.", (), None)

  def test_prints_when_nothing_else_would(self):
    self.assertTrue(tf_import._UnlessRootPrints().filter(self.record))

  def test_silent_once_the_root_logger_prints(self):
    logging.getLogger().addHandler(logging.NullHandler())
    self.assertFalse(tf_import._UnlessRootPrints().filter(self.record))

  def test_prints_when_tensorflow_does_not_propagate(self):
    logging.getLogger().addHandler(logging.NullHandler())
    tf_logger = logging.getLogger("tensorflow")
    self.addCleanup(setattr, tf_logger, "propagate", tf_logger.propagate)
    tf_logger.propagate = False
    self.assertTrue(tf_import._UnlessRootPrints().filter(self.record))


if __name__ == "__main__":
  absltest.main()
