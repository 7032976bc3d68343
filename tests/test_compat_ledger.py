"""docs/COMPAT.md stays true: every ledger row's pin exists.

A pin is a harness symbol (`harness.module:name`, imported and looked up) or
one of harness's own tests (`tests/file.py::Class::test`, found with `ast`).
The failing 2.15 tests are listed one per line, each with a reason, and the
per-file counts in the summary table match those lines; in each row the
tests that pass with no failing subtest plus the failing ones are the tests
2.15 passes, and the headline ("In all: ...") is the table's sum. The
section between the `compat215` markers is exactly what `python -m
bench.tf215.compat215` renders from its committed results
(bench/tf215/compat215_*.json), so a count edited by hand fails here.
"""

import ast
import importlib
import pathlib
import re

from absl.testing import absltest

from bench.tf215 import compat215
from bench.tf215 import compat215_table

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMPAT = ROOT / "docs" / "COMPAT.md"
_PIN_RE = re.compile(r"`([^`]+)`\s*\|\s*$")
_FAILING_RE = re.compile(r"^- `([\w/]+\.py)::(\w+)::(\w+)` — (.+)$")
_COUNT_RE = re.compile(
    r"^\| (\w+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$")
_HEADLINE_RE = re.compile(
    r"In all: (\d+) of the (\d+) tests 2\.15 passes pass \((\d+\.\d) %\); "
    r"(\d+) \((\d+\.\d) %\) with no failing subtest\. Of the (\d+) that "
    r"pass with a failing subtest")


def _ledger_pins(text):
  section = text.split("## Ledger", 1)[1].split("\n## ", 1)[0]
  rows = [line for line in section.splitlines()
          if line.startswith("|") and not line.startswith(("| what", "|---"))]
  return rows, [_PIN_RE.search(row) for row in rows]


def _table(text):
  """{file: (2.15 passes, now, now with no failing subtest, failing now)}
  of the summary table."""
  rows = {}
  for line in text.splitlines():
    match = _COUNT_RE.match(line)
    if match:
      rows[match.group(1)] = tuple(int(n) for n in match.groups()[1:])
  return rows


def _test_exists(ref):
  path, cls, method = ref.split("::")
  tree = ast.parse((ROOT / path).read_text())
  for node in tree.body:
    if isinstance(node, ast.ClassDef) and node.name == cls:
      return any(isinstance(f, ast.FunctionDef) and f.name == method
                 for f in node.body)
  return False


def _symbol_exists(ref):
  module_name, _, attr = ref.partition(":")
  module = importlib.import_module(module_name)
  return hasattr(module, attr)


class CompatLedgerTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.text = COMPAT.read_text()

  def test_every_row_has_a_pin_that_exists(self):
    rows, pins = _ledger_pins(self.text)
    self.assertGreater(len(rows), 5)
    for row, pin in zip(rows, pins):
      self.assertIsNotNone(pin, f"ledger row without a pin: {row[:80]}")
      ref = pin.group(1)
      exists = _test_exists(ref) if "::" in ref else _symbol_exists(ref)
      self.assertTrue(exists, f"pin {ref} of COMPAT.md does not exist")

  def test_failing_tests_have_reasons_and_match_the_counts(self):
    failing = {}
    for line in self.text.splitlines():
      if line.startswith("- `") and "::" in line:
        match = _FAILING_RE.match(line)
        self.assertIsNotNone(match, f"malformed failing-test line: {line}")
        self.assertGreater(len(match.group(4)), 10, line)
        stem = pathlib.Path(match.group(1)).stem
        failing[stem] = failing.get(stem, 0) + 1
    counts = _table(self.text)
    self.assertNotEmpty(counts)
    for name, (passed_215, _, clean, failing_now) in counts.items():
      self.assertLessEqual(clean, passed_215, name)
      self.assertEqual(failing.get(name, 0), failing_now,
                       f"{name}: listed failing tests != the table's count")

  def test_each_row_accounts_for_every_test_215_passes(self):
    for name, (passed_215, now, clean, failing_now) in _table(
        self.text).items():
      self.assertBetween(now, clean, passed_215, name)
      self.assertEqual(
          clean + failing_now, passed_215,
          f"{name}: {clean} passing with no failing subtest + {failing_now} "
          f"failing != the {passed_215} tests 2.15 passes")

  def test_headline_is_the_tables_sum(self):
    match = _HEADLINE_RE.search(" ".join(self.text.split()))
    self.assertIsNotNone(match, "COMPAT.md's 'In all: N of the M tests "
                         "2.15 passes pass (P %); ...' line is missing")
    now, passed_215, share, clean, clean_share, with_failing = match.groups()
    rows = _table(self.text).values()
    total = sum(row[0] for row in rows)
    self.assertEqual(int(passed_215), total)
    self.assertEqual(int(now), sum(row[1] for row in rows))
    self.assertEqual(int(clean), sum(row[2] for row in rows))
    self.assertEqual(int(with_failing), int(now) - int(clean))
    self.assertEqual(share, f"{100 * int(now) / total:.1f}")
    self.assertEqual(clean_share, f"{100 * int(clean) / total:.1f}")

  def test_215_column_is_the_reference_run(self):
    reference = compat215.load_json(compat215.REFERENCE)["files"]
    counts = _table(self.text)
    self.assertCountEqual(counts, reference)
    for name, row in counts.items():
      self.assertEqual(row[0], len(reference[name]["passes"]), name)

  def test_section_is_what_the_script_renders(self):
    section, _ = compat215.section_and_table(
        compat215.load_json(compat215.REFERENCE),
        compat215.load_json(compat215.HARNESS), compat215.load_reasons())
    self.assertEqual(
        compat215_table.replace_section(self.text, section), self.text,
        "docs/COMPAT.md's compat215 section differs from what `python -m "
        "bench.tf215.compat215 --render_only` writes from "
        "bench/tf215/compat215_*.json")


if __name__ == "__main__":
  absltest.main()
