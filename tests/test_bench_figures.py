"""Tests of the scripts that write the README's figures (no suite or job is run
here): bench/docfigs/suite_time.py and bench/docfigs/first_command.py fed fake
runs (the figures they write are computed from those runs; a loaded run is
never "quiet"), their parts (the yardstick, the command beside the suite, the
main job and its accuracy), and the figures in README.md, bench/RESULTS.md and
docs/RELIABILITY.md recomputed from the raw data the sections carry, so that a
hand edit of any of them fails (`FiguresPinnedTest`)."""

import re
import shutil
import sys

from absl.testing import absltest

from bench import figures
from bench.docfigs import first_command
from bench.docfigs import install_time
from bench.perf import peer_loss
from bench import report
from bench.docfigs import suite_time
from tests import conftest

_DATE = "2026-11-28 13:00 UTC"


def _suite(minutes, other_cores=0.1, yardstick=2.1):
  return suite_time.record_of(minutes=minutes, pytest="10 passed in 1.0s",
                              load=(0.1, 1.0), yardstick=yardstick,
                              other_cores=other_cores, date=_DATE)


class ReadmeSentenceTest(absltest.TestCase):

  def test_quiet_row_with_its_yardstick(self):
    self.assertEqual(
        suite_time.readme_sentence({"quiet": _suite(9.6)}),
        "about 10 minutes on a quiet 2-core machine (other processes used "
        "0.10 of a core) where `import tensorflow` takes 2.1 CPU-seconds "
        "(bench/RESULTS.md, \"Test suite time\")")

  def test_a_row_from_before_the_measure_says_so(self):
    self.assertIn("on a 2-core machine at load 0.1–1.0 (what other "
                  "processes used was not measured then)",
                  suite_time.readme_sentence({"quiet": _suite(9.6, None)}))

  def test_beside_ci_row_is_added(self):
    sentence = suite_time.readme_sentence({
        "quiet": _suite(9.6), "beside CI": _suite(13.4, 1.2)})
    self.assertIn("about 10 minutes on a quiet", sentence)
    self.assertIn(", 13 on the same machine while the rest of CI's legs run "
                  "beside it", sentence)

  def test_no_sentence_without_a_quiet_row(self):
    self.assertIsNone(suite_time.readme_sentence(
        {"beside CI": _suite(13.4), "loaded": _suite(9.0, 0.9)}))

  def test_rows_round_trip_through_the_results_section(self):
    data = {"command": "pytest -q", "rows": {
        "quiet": _suite(9.6), "beside CI": _suite(13.4, 1.2)}}
    text = "head\n" + suite_time.render(data) + "\ntail\n"
    self.assertEqual(figures.section_data(text, suite_time.BEGIN,
                                          suite_time.END), data)
    self.assertIn("| quiet | 9.6 | 10 passed in 1.0s | 0.1 / 1.0 | 2.1 | "
                  "0.10 | 2026-11-28 13:00 UTC |", text)


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
    record = first_command.record_of(
        [(12.8, 0.974), (11.9, 0.984), (13.7, 0.979)], yardstick=2.1,
        load=(0.5, 1.2), other_cores=0.05, date=_DATE)
    row = first_command.row("quiet", record)
    self.assertIn("| quiet | 3 | 0.9740–0.9840 | 12.8 (11.9–13.7) | 2.1 | "
                  "0.5 / 1.2 | 0.05 |", row)
    sentence = first_command.readme_sentence(record)
    self.assertIn("accuracy of 0.9740–0.9840 (3 runs) after about 13 s on a "
                  "quiet 2-core machine (other processes used 0.05 of a "
                  "core)", sentence)
    self.assertIn("`import tensorflow` takes 2.1 CPU-seconds", sentence)
    data = {"command": ["python", "-m", "x"], "rows": {"quiet": record}}
    text = first_command.render(data)
    self.assertEqual(figures.section_data(text, first_command.BEGIN,
                                          first_command.END), data)
    self.assertIn(row, text)


class _Watch:
  """A CpuWatch stand-in: other processes used `OTHER` cores."""
  OTHER = 0.0

  def other_cores(self):
    return self.OTHER


class FakeRunsTest(absltest.TestCase):
  """main() of each script, fed fake runs in a copy of the repository's
  README and RESULTS.md: what it writes is computed from those runs."""

  def setUp(self):
    super().setUp()
    self.root = self.create_tempdir().full_path
    shutil.copy(conftest.REPO_ROOT / "README.md", self.root)
    shutil.copytree(conftest.REPO_ROOT / "bench", f"{self.root}/bench",
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))

  def _read(self, name):
    with open(f"{self.root}/{name}", encoding="utf-8") as f:
      return f.read()

  def _first_command(self, runs, other_cores, label="quiet"):
    fake_runs = iter(runs)
    _Watch.OTHER = other_cores
    first_command.main([f"--runs={len(runs)}", f"--label={label}"],
                       run=lambda argv: next(fake_runs), root=self.root,
                       yardstick_fn=lambda python: 1.73, watch=_Watch)
    return (_span(self._read("README.md"), "first-command"),
            self._read("bench/RESULTS.md"))

  def test_first_command_writes_what_the_runs_measured(self):
    for runs, figures_text in (
        ([(21.0, 0.91), (9.0, 0.93), (15.0, 0.95)],
         "0.9100–0.9500 (3 runs) after about 15 s"),
        ([(40.2, 0.5), (30.4, 0.25)], "0.2500–0.5000 (2 runs) after about "
         "35 s")):
      sentence, results = self._first_command(runs, 0.12)
      self.assertIn(figures_text, sentence)
      self.assertIn("(other processes used 0.12 of a core) where `import "
                    "tensorflow` takes 1.7 CPU-seconds", sentence)
      data = figures.section_data(results, first_command.BEGIN,
                                  first_command.END)
      self.assertEqual(data["rows"]["quiet"]["runs"],
                       [list(r) for r in runs])

  def test_a_loaded_first_command_run_is_not_quiet(self):
    readme = self._read("README.md")
    quiet = self._rows(self._read("bench/RESULTS.md"))["quiet"]
    for other_cores in (0.26, 1.5, None):  # None: not measured.
      _, results = self._first_command([(10.0, 0.9)], other_cores)
      self.assertEqual(self._read("README.md"), readme)
      rows = self._rows(results)
      self.assertEqual(rows["loaded"]["other_cores"], other_cores)
      self.assertEqual(rows["loaded"]["runs"], [[10.0, 0.9]])
      self.assertEqual(rows["quiet"], quiet)

  @staticmethod
  def _rows(results):
    return figures.section_data(results, first_command.BEGIN,
                                first_command.END)["rows"]

  def _suite_time(self, minutes, other_cores, label="quiet"):
    _Watch.OTHER = other_cores

    def measure(command, log):
      self.assertEqual(command, suite_time.readme_command(
          self._read("README.md")))
      return minutes, "7 passed in 1.00s", 0.2, 1.9

    suite_time.main([f"--label={label}"], measure_fn=measure,
                    root=self.root, yardstick_fn=lambda python: 2.46,
                    watch=_Watch)
    return (_span(self._read("README.md"), "suite-time"),
            self._read("bench/RESULTS.md"))

  def test_suite_time_writes_what_the_run_measured(self):
    sentence, results = self._suite_time(31.4, 0.2)
    self.assertTrue(sentence.startswith(
        "about 31 minutes on a quiet 2-core machine (other processes used "
        "0.20 of a core) where `import tensorflow` takes 2.5 CPU-seconds"),
        sentence)
    self.assertIn("| quiet | 31.4 | 7 passed in 1.00s | 0.2 / 1.9 | 2.5 | "
                  "0.20 |", results)
    sentence, _ = self._suite_time(44.6, 3.0, label="beside CI")
    self.assertIn("about 31 minutes on a quiet", sentence)
    self.assertIn(", 45 on the same machine while the rest", sentence)

  def test_a_loaded_suite_time_run_is_not_quiet(self):
    before = _span(self._read("README.md"), "suite-time")
    sentence, results = self._suite_time(5.0, 0.9)
    self.assertEqual(sentence, before)
    self.assertIn("| loaded | 5.0 | 7 passed in 1.00s |", results)


class CpuWatchTest(absltest.TestCase):

  def test_bound(self):
    self.assertTrue(figures.is_quiet(figures.QUIET_OTHER_CORES))
    self.assertFalse(figures.is_quiet(figures.QUIET_OTHER_CORES + 0.01))
    self.assertFalse(figures.is_quiet(None))

  def test_no_time_passed_is_not_measured(self):
    self.assertIsNone(figures.CpuWatch(clock=lambda: 5.0).other_cores())

  def test_a_measure_of_other_processes_only(self):
    clock = iter([0.0, 1.0, 1.0])
    watch = figures.CpuWatch(clock=lambda: next(clock))
    other = watch.other_cores()  # This process's own work is not counted.
    self.assertIsNotNone(other)
    self.assertGreaterEqual(other, 0.0)


def _span(text, name):
  return text.split(f"<!-- {name} -->", 1)[1].split(f"<!-- /{name} -->")[0]


def _peer_loss_runs(results_text):
  """{case: [run]} from bench.perf.peer_loss's rows in RESULTS.md."""
  section = results_text.split(peer_loss.BEGIN, 1)[1].split(peer_loss.END)[0]
  runs = {}
  for line in section.splitlines():
    cells = report.row_cells(line) if line.startswith("| ") else []
    if len(cells) == 7 and cells[1].isdigit():
      keys = ("noticed", "exited", "training_again", "load1")
      runs.setdefault(cells[0], []).append(
          {k: float(v) for k, v in zip(keys, cells[2:6])})
  return runs


def figure_mismatches(readme, results, reliability):
  """Each figure in the docs that differs from what its script computes
  from the raw data the docs carry: [(where, written, computed)]."""
  found = []
  for script, span in ((first_command, "first-command"),
                       (suite_time, "suite-time")):
    data = figures.section_data(results, script.BEGIN, script.END)
    section = script.BEGIN + results.split(script.BEGIN, 1)[1].split(
        script.END, 1)[0] + script.END
    found.append((f"RESULTS.md, {script.__name__}", section,
                  script.render(data)))
    sentence = (script.readme_sentence(data["rows"]) if script is suite_time
                else script.readme_sentence(data["rows"]["quiet"]))
    found.append((f"README, {span}", _span(readme, span), sentence))
  runs = _peer_loss_runs(results)
  for doc_name, doc in (("README", readme), ("RELIABILITY.md", reliability)):
    for span, case in (("peer-loss", "collective"), ("peer-loss-ps", "ps")):
      if f"<!-- {span} -->" in doc:
        found.append((f"{doc_name}, {span}", _span(doc, span),
                      peer_loss.readme_sentence(runs[case], case)))
  found.append(("README, xla-slowdown", _span(readme, "xla-slowdown"),
                figures.xla_sentence(results)))
  return [f for f in found if f[1] != f[2]]


class FiguresPinnedTest(absltest.TestCase):
  """Every figure a script writes into the docs is what it computes from
  the raw data the docs carry; a hand edit of any of them fails here."""

  def setUp(self):
    super().setUp()
    self.docs = [(conftest.REPO_ROOT / p).read_text(encoding="utf-8") for p in
                 ("README.md", "bench/RESULTS.md", "docs/RELIABILITY.md")]

  def test_the_docs_figures_are_computed(self):
    self.assertEqual(figure_mismatches(*self.docs), [])

  def test_a_hand_edit_of_any_figure_is_found(self):
    readme, results, reliability = self.docs
    first = figures.section_data(results, first_command.BEGIN,
                                 first_command.END)["rows"]["quiet"]
    suite = figures.section_data(results, suite_time.BEGIN,
                                 suite_time.END)["rows"]["quiet"]
    edits = [  # (document index, a text in it, its hand edit)
        (0, _span(readme, "first-command"),
         lambda t: t.replace("–0.9", "–0.8")),
        (0, _span(readme, "suite-time"),
         lambda t: t.replace("about ", "about 1")),
        (0, _span(readme, "peer-loss"), lambda t: t.replace(" s ", "0 s ")),
        (0, _span(readme, "xla-slowdown"), lambda t: "about 5x slower"),
        (2, _span(reliability, "peer-loss-ps"),
         lambda t: t.replace(" s ", "0 s ")),
        (1, first_command.row("quiet", first),
         lambda t: t.replace("| 5 |", "| 6 |")),
        (1, suite_time.row("quiet", suite),
         lambda t: t.replace("| quiet | 1", "| quiet | 2")),
    ]
    for index, text, edit in edits:
      with self.subTest(text=text[:60]):
        docs = list(self.docs)
        self.assertIn(text, docs[index])
        self.assertNotEqual(edit(text), text)
        docs[index] = docs[index].replace(text, edit(text))
        self.assertNotEmpty(figure_mismatches(*docs))


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
        "bench.perf.peer_loss` on a 2-core machine, load 0.8-1.2 at the kill)")
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
        command="python -m bench.perf.peer_loss", elapsed_secs=1,
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
        "bench.docfigs.install_time`; bench/RESULTS.md, \"Install on each "
        "Python\").")

  def test_a_failed_row_leaves_the_readme_as_it_was(self):
    rows = dict(self._ROWS)
    rows["3.13.0"] = rows["3.13.0"].replace("pass (80 s)", "FAIL: exit 1")
    self.assertIsNone(install_time.readme_sentence(rows))
    self.assertIsNone(install_time.readme_sentence({}))

  def test_rows_round_trip_through_the_results_section(self):
    text = "head\n" + install_time.render(self._ROWS) + "\ntail\n"
    self.assertEqual(install_time._rows(text), self._ROWS)  # pylint: disable=protected-access

  def test_readme_span_is_the_results_rows_sentence(self):
    # A hand edit of the README's install figures, or of RESULTS.md's rows,
    # fails here: the span is what the committed rows give.
    readme = (conftest.REPO_ROOT / "README.md").read_text()
    results = (conftest.REPO_ROOT / "bench" / "RESULTS.md").read_text()
    span = re.search(r"<!-- install-time -->(.*?)<!-- /install-time -->",
                     readme, re.DOTALL)
    self.assertIsNotNone(span)
    self.assertEqual(
        span.group(1),
        install_time.readme_sentence(install_time._rows(results)))  # pylint: disable=protected-access


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
        ["ceiling", "first-command", "install-time", "peer-loss",
         "scaling", "sparse-kernels", "suite-time", "xla-slowdown"])
    reliability = (conftest.REPO_ROOT / "docs" / "RELIABILITY.md").read_text()
    self.assertEqual(
        sorted(set(re.findall(r"<!-- ([a-z-]+) -->", reliability))),
        ["peer-loss", "peer-loss-ps"])
    for doc in [conftest.REPO_ROOT / "README.md",
                *(conftest.REPO_ROOT / "docs").glob("*.md")]:
      self.assertNotIn("(not yet measured)", doc.read_text(), doc)


if __name__ == "__main__":
  absltest.main()
