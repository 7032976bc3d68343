"""Tests of the scripts that write the README's figures, part by part (no
suite or job is run here): bench/suite_time.py (the README sentence, the
yardstick, the command run beside the suite) and bench/first_command.py (the
main job read from the README, the accuracy read from its output)."""

import re
import sys

from absl.testing import absltest

from bench import first_command
from bench import install_time
from bench import peer_loss
from bench import report
from bench import suite_time
from tests import conftest


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


class FirstCommandTest(absltest.TestCase):

  def test_the_readmes_main_job_is_found(self):
    readme = (conftest.REPO_ROOT / "README.md").read_text()
    job = first_command.main_job(readme)
    self.assertEqual(job[:3], [".venv/bin/python", "-m", "harness.main"])
    self.assertIn("--input_fn=mnist_idx", job)

  def test_a_first_command_without_harness_main_is_refused(self):
    with self.assertRaisesRegex(ValueError, "harness.main"):
      first_command.main_job("x\n```bash\npip install x && python run.py\n"
                             "pytest\n```\n")

  def test_accuracy_is_the_closing_tables_last(self):
    output = ("I 13:33:01 eval | local | step 500 | accuracy=0.91\n"
              "eval results | local | global_step 1500\n"
              "  metric    value\n  accuracy  0.979\n  loss      0.07\n")
    self.assertEqual(first_command.accuracy(output), 0.979)
    self.assertIsNone(first_command.accuracy("no table"))

  def test_row_and_sentence(self):
    row = first_command.row("quiet", [(12.8, 0.974), (11.9, 0.984),
                                      (13.7, 0.979)], 2.1, (0.5, 1.2))
    self.assertIn("| quiet | 3 | 0.9740–0.9840 | 12.8 (11.9–13.7) | 2.1 |",
                  row)
    sentence = first_command.readme_sentence(row)
    self.assertIn("accuracy of 0.9740–0.9840 (3 runs) after about 13 s",
                  sentence)
    self.assertIn("`import tensorflow` takes 2.1 CPU-seconds", sentence)
    text = first_command.render({"quiet": row}, ["python", "-m", "x"])
    self.assertEqual(first_command._rows(text), {"quiet": row})  # pylint: disable=protected-access


class PeerLossTest(absltest.TestCase):

  _RUNS = [{"noticed": 0.042, "exited": 0.11, "training_again": 3.97,
            "load1": 0.79, "message": "PeerLostError: ..."},
           {"noticed": 1.43, "exited": 1.47, "training_again": 5.43,
            "load1": 1.25, "message": "PeerLostError: ..."}]

  def test_ranges_over_the_kills(self):
    self.assertEqual(
        peer_loss.readme_sentence(self._RUNS),
        "a killed collective peer was noticed in 0.04-1.43 s and the "
        "survivor exited 0.11-1.47 s after the kill (2 kills by `python -m "
        "bench.peer_loss` on a 2-core machine, load 0.8-1.2 at the kill)")
    self.assertIn("trained again 4.0-5.4 s after it",
                  peer_loss.readme_sentence(self._RUNS, "ps"))

  def test_a_failed_kill_leaves_the_docs_as_they_were(self):
    self.assertIsNone(peer_loss.readme_sentence(
        self._RUNS[:1] + [{"error": "hung"}]))
    self.assertIsNone(peer_loss.readme_sentence(
        self._RUNS[:1] + [dict(self._RUNS[1], training_again=None)]))
    self.assertIsNone(peer_loss.readme_sentence([]))

  def test_results_section_names_each_case(self):
    text = peer_loss.render(
        {"collective": self._RUNS, "ps": [{"error": "hung"}]},
        command="python -m bench.peer_loss", elapsed_secs=1,
        uptime_before="-", uptime_after="-")
    self.assertIn("| collective | 2 | 1.43 | 1.47 | 5.43 | 1.25 |", text)
    self.assertIn("| ps | 1 | error: hung |", text)


class InstallTimeTest(absltest.TestCase):

  _ROWS = {
      "3.10.13": "| 3.10.13 | 2.4 | 23.0.1 | 2.21.0 | pass | pass (30 s, "
                 "accuracy 0.9790) | pass (90 s) | 1.2 / 1.4 | 2026-11-28 "
                 "20:00 UTC |",
      "3.13.0": "| 3.13.0 | 1.9 | 24.2 | 2.21.0 | pass | pass (25 s) | pass "
                "(80 s) | 1.6 / 1.1 | 2026-11-28 20:10 UTC |"}

  def test_the_readmes_launch_example_is_found(self):
    readme = (conftest.REPO_ROOT / "README.md").read_text()
    argv = install_time.launch_example(readme)
    self.assertEqual(argv[:4], ["python", "-m", "harness.launch",
                                "--workers=2"])
    self.assertIn("harness.main", argv)

  def test_every_python_and_the_model_dir_are_replaced(self):
    argv = ["python", "-m", "harness.launch", "--", "python", "-m",
            "harness.main", "--model_dir=/tmp/mw", "--max_steps=200"]
    self.assertEqual(
        install_time.with_python(argv, "/v/bin/python", "/tmp/x"),
        ["/v/bin/python", "-m", "harness.launch", "--", "/v/bin/python",
         "-m", "harness.main", "--model_dir=/tmp/x", "--max_steps=200"])

  def test_sentence_names_each_python_in_order(self):
    self.assertEqual(
        install_time.readme_sentence(self._ROWS),
        "The install took 3.10 2.4 min (pip 23.0.1, load 1), 3.13 1.9 min "
        "(pip 24.2, load 2), each from an empty pip cache on a 2-core machine "
        "shared with other jobs (its 1-minute load average at the start), "
        "and the "
        "main job and a 2-worker `harness.launch` passed on each (`python -m "
        "bench.install_time`; bench/RESULTS.md, \"Install on each Python\").")

  def test_a_failed_row_leaves_the_readme_as_it_was(self):
    rows = dict(self._ROWS)
    rows["3.13.0"] = rows["3.13.0"].replace("pass (80 s)", "FAIL: exit 1")
    self.assertIsNone(install_time.readme_sentence(rows))
    self.assertIsNone(install_time.readme_sentence({}))

  def test_rows_round_trip_through_the_results_section(self):
    text = "head\n" + install_time.render(self._ROWS) + "\ntail\n"
    self.assertEqual(install_time._rows(text), self._ROWS)  # pylint: disable=protected-access


class ReadmeSpanTest(absltest.TestCase):

  def test_only_the_span_changes(self):
    readme = self.create_tempfile(
        content="a <!-- x -->old<!-- /x --> b\n<!-- y -->keep<!-- /y -->\n")
    self.assertTrue(report.write_readme_span("x", "new", readme.full_path))
    self.assertEqual(
        readme.read_text(),
        "a <!-- x -->new<!-- /x --> b\n<!-- y -->keep<!-- /y -->\n")
    self.assertFalse(report.write_readme_span("z", "new", readme.full_path))

  def test_every_span_of_the_readme_is_written(self):
    # Each figure span in the README has its script, so none stays typed.
    readme = (conftest.REPO_ROOT / "README.md").read_text()
    self.assertEqual(
        sorted(set(re.findall(r"<!-- ([a-z-]+) -->", readme))),
        ["first-command", "install-time", "peer-loss", "suite-time"])
    reliability = (conftest.REPO_ROOT / "docs" / "RELIABILITY.md").read_text()
    self.assertEqual(
        sorted(set(re.findall(r"<!-- ([a-z-]+) -->", reliability))),
        ["peer-loss", "peer-loss-ps"])
    for doc in [conftest.REPO_ROOT / "README.md",
                *(conftest.REPO_ROOT / "docs").glob("*.md")]:
      self.assertNotIn("(not yet measured)", doc.read_text(), doc)


if __name__ == "__main__":
  absltest.main()
