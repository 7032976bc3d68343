"""bench.tf215.compat215: per-test outcomes, subtests included, COMPAT.md's
text.

No TensorFlow and no 2.15 run: a small fake record of pytest reports, and one
real pytest run of a tiny absltest file under the script's recording conftest.
"""

import json
import os
import subprocess
import sys

from absl.testing import absltest

from bench.tf215 import compat215
from bench.tf215 import compat215_table as table_lib


def _line(nodeid, when, outcome, subtest=False):
  return json.dumps({"nodeid": nodeid, "when": when, "outcome": outcome,
                     "subtest": subtest}) + "\n"


def _passing(nodeid):
  return [_line(nodeid, w, "passed") for w in ("setup", "call", "teardown")]


_FAKE = (_passing("a_test.py::A::test_ok")
         + [_line("a_test.py::A::test_sub", "call", "failed", subtest=True),
            _line("a_test.py::A::test_sub", "call", "passed", subtest=True)]
         + _passing("a_test.py::A::test_sub")
         + [_line("a_test.py::A::test_bad", "setup", "passed"),
            _line("a_test.py::A::test_bad", "call", "failed"),
            _line("a_test.py::A::test_bad", "teardown", "passed"),
            _line("a_test.py::A::test_skip", "setup", "skipped"),
            _line("b_test.py", "collect", "failed")])

_TINY_TEST = """
from absl.testing import absltest


class T(absltest.TestCase):

  def test_ok(self):
    pass

  def test_two_subtests_fail(self):
    for i in range(3):
      with self.subTest(i=i):
        self.assertLess(i, 1)

  def test_fails(self):
    self.fail("no")

  def test_skipped(self):
    self.skipTest("n/a")
"""


class OutcomesTest(absltest.TestCase):

  def test_statuses_and_failed_subtests(self):
    got = table_lib.outcomes(_FAKE)
    self.assertEqual(got, {
        "a_test.py::A::test_ok": ("passed", 0),
        "a_test.py::A::test_sub": ("passed", 1),
        "a_test.py::A::test_bad": ("failed", 0),
        "a_test.py::A::test_skip": ("skipped", 0),
        "b_test.py": ("failed", 0)})

  def test_recording_conftest_under_real_pytest(self):
    scratch = self.create_tempdir().full_path
    with open(os.path.join(scratch, "conftest.py"), "w") as f:
      f.write(compat215.conftest_text("unused", reference=True))
    with open(os.path.join(scratch, "tiny_test.py"), "w") as f:
      f.write(_TINY_TEST)
    record = os.path.join(scratch, "tiny.jsonl")
    env = dict(os.environ, COMPAT215_OUTCOMES=record)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p",
                    "no:cacheprovider", "tiny_test.py"], cwd=scratch,
                   env=env, capture_output=True, timeout=120, check=False)
    with open(record) as f:
      got = table_lib.outcomes(f.readlines())
    self.assertEqual(got, {
        "tiny_test.py::T::test_ok": ("passed", 0),
        "tiny_test.py::T::test_two_subtests_fail": ("passed", 2),
        "tiny_test.py::T::test_fails": ("failed", 0),
        "tiny_test.py::T::test_skipped": ("skipped", 0)})


class RenderTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    results = {"a_test": table_lib.outcomes(_FAKE),
               "b_test": table_lib.outcomes(_FAKE)}
    reference = {"a_test": ["a_test.py::A::test_ok", "a_test.py::A::test_sub",
                            "a_test.py::A::test_bad"],
                 "b_test": ["b_test.py::B::test_x"]}
    self.table = table_lib.rows(["a_test", "b_test"], reference, results)
    self.reasons = {"a_test.py::A::test_sub": "a subtest reason",
                    "a_test.py::A::test_ok": "fixed since"}

  def test_rows_count_only_what_215_passes(self):
    self.assertEqual(self.table, [
        ("a_test", 3, 2, 1, ["a_test.py::A::test_bad",
                             "a_test.py::A::test_sub"],
         ["a_test.py::A::test_sub"]),
        ("b_test", 1, 0, 0, ["b_test.py::B::test_x"], [])])

  def test_render_table_totals_and_reasons(self):
    text = table_lib.render(self.table, self.reasons, "From a fake.")
    self.assertIn("| a_test | 3 | 2 | 1 | 2 |\n| b_test | 1 | 0 | 0 | 1 |",
                  text)
    self.assertIn(
        "In all: 2 of the 4 tests 2.15 passes pass (50.0 %); 1 (25.0 %) "
        "with no failing subtest. Of the 1 that pass with a failing "
        "subtest, by reason: 1: a subtest reason.", text)
    self.assertIn("- `a_test.py::A::test_sub` — a subtest reason\n", text)
    self.assertIn("- `b_test.py::B::test_x` — no reason recorded yet\n",
                  text)

  def test_missing_and_stale_reasons(self):
    missing, stale = table_lib.reason_problems(
        self.table, self.reasons, {"a_test", "b_test"})
    self.assertEqual(missing, ["a_test.py::A::test_bad",
                               "b_test.py::B::test_x"])
    self.assertEqual(stale, ["a_test.py::A::test_ok"])
    _, stale = table_lib.reason_problems(self.table, self.reasons, {"b_test"})
    self.assertEqual(stale, [])

  def test_second_write_changes_nothing(self):
    section = table_lib.render(self.table, self.reasons, "From a fake.")
    doc = f"# Title\n\nBefore.\n\n{table_lib.BEGIN}\nold\n{table_lib.END}\n"
    once = table_lib.replace_section(doc, section)
    self.assertEqual(table_lib.replace_section(once, section), once)
    self.assertTrue(once.startswith("# Title\n\nBefore.\n\n"))
    self.assertNotIn("old", once)
    with self.assertRaisesRegex(ValueError, "compat215"):
      table_lib.replace_section("no markers", section)


if __name__ == "__main__":
  absltest.main()
