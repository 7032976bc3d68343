"""Tests of bench/suite_time.py's parts: the README sentence, the yardstick
and the command run beside the suite (no suite is run here)."""

import sys

from absl.testing import absltest

from bench import suite_time


def _row(label, minutes, yardstick="2.1"):
  return (f"| {label} | {minutes} | 10 passed in 1.0s | 0.1 / 1.0 | "
          f"{yardstick} | 2026-11-28 13:00 UTC |")


class ReadmeSentenceTest(absltest.TestCase):

  def test_quiet_row_with_its_yardstick(self):
    self.assertEqual(
        suite_time.readme_sentence({"quiet": _row("quiet", "9.6")}),
        "about 10 minutes on a quiet 2-core machine where `import "
        "tensorflow` takes 2.1 CPU-seconds (bench/RESULTS.md, \"Test suite "
        "time\")")

  def test_beside_ci_row_is_added(self):
    sentence = suite_time.readme_sentence({
        "quiet": _row("quiet", "9.6"),
        "beside CI": _row("beside CI", "13.4")})
    self.assertIn("about 10 minutes on a quiet", sentence)
    self.assertIn(", 13 on the same machine while the rest of CI's legs run "
                  "beside it", sentence)

  def test_no_sentence_without_a_quiet_row_with_a_yardstick(self):
    self.assertIsNone(suite_time.readme_sentence(
        {"beside CI": _row("beside CI", "13.4")}))
    old = "| quiet | 22.7 | 1867 passed | 1.1 / 2.7 | 2026-11-27 22:15 UTC |"
    self.assertIsNone(suite_time.readme_sentence({"quiet": old}))

  def test_rows_round_trip_through_the_results_section(self):
    rows = {"quiet": _row("quiet", "9.6"),
            "beside CI": _row("beside CI", "13.4")}
    text = "head\n" + suite_time.render(rows, "pytest -q") + "\ntail\n"
    self.assertEqual(suite_time._rows(text), rows)  # pylint: disable=protected-access


class BesideTest(absltest.TestCase):

  def test_phrase_names_the_command_and_its_exit_status(self):
    log = self.create_tempfile().full_path
    beside = suite_time.Beside("echo hello; exit 3", log)
    phrase = beside.finish(timeout_secs=30)
    self.assertRegex(phrase, r"^beside: `echo hello; exit 3`, exit 3 after "
                     r"\d+\.\d min$")
    with open(log, encoding="utf-8") as f:
      self.assertEqual(f.read(), "hello\n")

  def test_a_command_past_its_bound_is_killed(self):
    beside = suite_time.Beside("sleep 60")
    self.assertIn("exit -9 after", beside.finish(timeout_secs=0.5))


class YardstickTest(absltest.TestCase):

  def test_cpu_seconds_of_a_child_process(self):
    # The measure is a child's CPU time: a child that burns ~0.3 s of CPU
    # reads as at least 0.2 s, one that sleeps as almost nothing.
    self.assertGreater(suite_time.child_cpu_secs(
        [sys.executable, "-c",
         "import time\nt = time.process_time()\n"
         "while time.process_time() - t < 0.3: pass"]), 0.2)
    self.assertLess(suite_time.child_cpu_secs(
        [sys.executable, "-c", "import time; time.sleep(0.3)"]), 0.2)


if __name__ == "__main__":
  absltest.main()
