"""Promise tables in docs/ name the tests that check them.

Under each table below, a "Checked by" list has one line per table row:
`- <the row's first cell>: <test>[, <test> ...]` with each test
`tests/file.py::Class::test` (found with `ast`), or `none yet (why)` for a
row no test checks, which must be in KNOWN_GAPS here. A row added without
its line, a line naming a test that is gone, or a new gap fails.
"""

import ast
import pathlib
import re

from absl.testing import absltest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# (doc, the first cells of its table's header line)
TABLES = (
    ("docs/RELIABILITY.md", "| Event | What the other tasks do |"),
    ("docs/RELIABILITY.md", "| state file | what is used | warning"),
    ("docs/RELIABILITY.md", "| Knob | Default | Meaning |"),
    ("docs/ERRORS.md", "| status | meaning | stderr |"),
    ("docs/SECURITY.md", "| mode | servers | reachable by, by default |"),
)
# Rows no test checks yet, by (doc, row): the work left.
KNOWN_GAPS = {
    ("docs/RELIABILITY.md", "`--verbosity` (hand-over: `HARNESS_VERBOSITY`)"),
}
_REF_RE = re.compile(r"`(tests/[\w/]+\.py::\w+::\w+)`")


def table_and_lines(text, header):
  """(first cells of the table's rows, {row: text after "row: "} of the
  "Checked by" list after it)."""
  lines = text[text.index(header):].splitlines()
  end = next(i for i, line in enumerate(lines) if not line.startswith("|"))
  rows = [line.split("|")[1].strip() for line in lines[2:end]]
  checked = {}
  rest = lines[end:]
  start = next(i for i, line in enumerate(rest)
               if line.startswith("Checked by"))
  for line in rest[start + 1:]:  # The paragraph, then its "- " lines.
    if not line.strip():
      break
    if line.startswith("- "):
      row, _, refs = line[2:].rpartition(": ")
      checked[row] = refs
  return rows, checked


def named_test_exists(ref):
  path, cls, method = ref.split("::")
  if not (ROOT / path).exists():
    return False
  for node in ast.parse((ROOT / path).read_text()).body:
    if isinstance(node, ast.ClassDef) and node.name == cls:
      return any(isinstance(f, ast.FunctionDef) and f.name == method
                 for f in node.body)
  return False


class CheckedByTest(absltest.TestCase):

  def test_every_row_names_existing_tests_or_is_a_known_gap(self):
    gaps = set()
    for doc, header in TABLES:
      rows, checked = table_and_lines((ROOT / doc).read_text(), header)
      self.assertNotEmpty(rows, doc)
      self.assertEqual(sorted(checked), sorted(rows),
                       f"{doc}: the Checked by lines != the table's rows")
      for row in rows:
        refs = _REF_RE.findall(checked[row])
        if checked[row].startswith("none yet"):
          gaps.add((doc, row))
          continue
        self.assertNotEmpty(refs, f"{doc}: {row}: no test named")
        for ref in refs:
          self.assertTrue(named_test_exists(ref), f"{doc}: {row}: no {ref}")
    self.assertEqual(gaps, KNOWN_GAPS)

  def test_a_missing_line_or_test_is_caught(self):
    text = ("| a | b |\n|---|---|\n| one | x |\n| two | y |\n\n"
            "Checked by:\n- one: `tests/test_docs_checked_by.py::"
            "CheckedByTest::test_a_missing_line_or_test_is_caught`\n")
    rows, checked = table_and_lines(text, "| a | b |")
    self.assertEqual(rows, ["one", "two"])
    self.assertEqual(list(checked), ["one"])
    self.assertTrue(named_test_exists(_REF_RE.findall(checked["one"])[0]))
    self.assertFalse(named_test_exists("tests/test_main.py::Nope::test_x"))


if __name__ == "__main__":
  absltest.main()
