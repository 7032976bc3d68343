"""harness.cli.log_format: `I HH:MM:SS message` by default, absl's prefix
(date, thread, file:line) at --verbosity=debug."""

import logging as std_logging
import os
import re
from unittest import mock

from absl import logging
from absl.testing import absltest

from harness.cli import log_format


def _record(message="train | local | step 1/2"):
  return std_logging.LogRecord("absl", std_logging.INFO, "/x/train_loop.py",
                               161, message, None, None)


class LogFormatTest(absltest.TestCase):

  def tearDown(self):
    log_format.use(debug=True)  # absl's own, as before the test.
    super().tearDown()

  def test_compact_prefix(self):
    text = log_format.CompactFormatter().format(_record())
    self.assertRegex(text, r"^I \d\d:\d\d:\d\d train \| local \| step 1/2$")

  def test_use_switches_absl_handler(self):
    handler = logging.get_absl_handler()
    log_format.use(debug=False)
    self.assertRegex(handler.format(_record()), r"^I \d\d:\d\d:\d\d train ")
    log_format.use(debug=True)
    full = handler.format(_record())
    self.assertTrue(re.match(r"^I\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ "
                             r"train_loop\.py:161\] train ", full), full)

  def test_identical_warning_shown_once(self):
    once = log_format.WarnOnce()
    warning = lambda text: std_logging.LogRecord(
        "absl", std_logging.WARNING, "x.py", 1, text, None, None)
    self.assertTrue(once.filter(warning("port open")))
    self.assertFalse(once.filter(warning("port open")))
    self.assertTrue(once.filter(warning("port closed")))
    self.assertTrue(once.filter(_record()))  # INFO: always.
    self.assertTrue(once.filter(_record()))

  def test_fold_keeps_lines_short_and_the_words(self):
    error = ("harness.main: ConfigError: --model_dir=/tmp/m cannot be "
             "written: " + "a word " * 40 + "Fix: another folder.")
    folded = log_format.fold(error + "\n  flag --x: " + "b " * 90)
    lines = folded.splitlines()
    self.assertTrue(all(len(line) <= 160 for line in lines), folded)
    self.assertTrue(lines[0].startswith("harness.main: ConfigError:"))
    self.assertRegex(lines[1], r"^ {4}\S")  # 4 more than the line it folds.
    self.assertRegex(lines[-1], r"^ {6}b b")  # 4 more than "  flag".
    self.assertEqual(" ".join(folded.split()),
                     " ".join((error + " flag --x: " + "b " * 90).split()))
    self.assertEqual(log_format.fold("short"), "short")
    long_word = "/x" * 100  # Unbreakable: alone on its line, whole.
    self.assertIn("\n    " + long_word, log_format.fold("e: " + "w " * 70 +
                                                      long_word))

  def test_fold_leaves_room_for_the_launchers_task_prefix(self):
    # harness.launch puts "[evaluator/0] " before each line of that task.
    error = "harness.main: TrainingPreemptedError: " + "word " * 60
    with mock.patch.dict(os.environ, {"HARNESS_TASK": "evaluator/0"}):
      folded = log_format.fold(error)
    prefixed = ["[evaluator/0] " + line for line in folded.splitlines()]
    self.assertGreater(len(prefixed), 1)
    self.assertTrue(all(len(line) <= 160 for line in prefixed), prefixed)
    self.assertTrue(any(len(line) > 150 for line in prefixed), prefixed)
    with mock.patch.dict(os.environ, clear=True):  # Not under launch.
      widest = max(map(len, log_format.fold(error).splitlines()))
    self.assertBetween(widest, 147, 160)


if __name__ == "__main__":
  absltest.main()
