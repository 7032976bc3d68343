"""README.md's "Status" table stays in step with the code.

Each row names what checks it: an "implemented" row one of harness's own
tests (`tests/file.py::Class::test`, found with `ast`) or a harness symbol;
a "not provided" row a name that raises `NotSupportedError` (a
`module:name` attribute, or a `tensorflow_estimator.*` module path under
`harness.compat`), or a test that checks the refusal.
"""

import ast
import importlib
import pathlib
import re

from absl.testing import absltest

from harness import errors

ROOT = pathlib.Path(__file__).resolve().parent.parent
_ROW_RE = re.compile(r"^\| (.+) \| (implemented|not provided) \| `([^`]+)` \|$")


def status_rows(text):
  """[(what, status, ref)] of the table in README.md's "## Status"."""
  section = text.split("\n## Status\n", 1)[1].split("\n## ", 1)[0]
  table = section.split("| what | status | checked by |\n|---|---|---|\n", 1)
  rows = []
  for line in table[-1].splitlines() if len(table) == 2 else ():
    if not line.startswith("|"):
      break
    match = _ROW_RE.match(line)
    rows.append(match.groups() if match else (line, None, None))
  return rows


def named_test_exists(ref):
  """Whether `tests/file.py::Class::test` is defined."""
  path, cls, method = ref.split("::")
  if not (ROOT / path).exists():
    return False
  for node in ast.parse((ROOT / path).read_text()).body:
    if isinstance(node, ast.ClassDef) and node.name == cls:
      return any(isinstance(f, ast.FunctionDef) and f.name == method
                 for f in node.body)
  return False


def refused(ref):
  """Whether looking up `ref` raises NotSupportedError."""
  import harness.compat  # pylint: disable=g-import-not-at-top,unused-import
  try:
    if ":" in ref:
      module_name, _, attr = ref.partition(":")
      getattr(importlib.import_module(module_name), attr)
    else:
      importlib.import_module(ref)
  except errors.NotSupportedError:
    return True
  return False


class ReadmeStatusTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.rows = status_rows((ROOT / "README.md").read_text())

  def test_every_row_is_well_formed(self):
    self.assertGreater(len(self.rows), 10)
    for what, status, _ in self.rows:
      self.assertIsNotNone(status, f"malformed Status row: {what}")

  def test_each_named_test_exists(self):
    for what, _, ref in self.rows:
      if ref and "::" in ref:
        self.assertTrue(named_test_exists(ref), f"{what}: no test {ref}")

  def test_implemented_symbols_exist(self):
    for what, status, ref in self.rows:
      if status == "implemented" and "::" not in ref:
        module_name, _, attr = ref.partition(":")
        module = importlib.import_module(module_name)
        self.assertTrue(hasattr(module, attr), f"{what}: no {ref}")

  def test_not_provided_names_are_refused(self):
    for what, status, ref in self.rows:
      if status == "not provided" and "::" not in ref:
        self.assertTrue(refused(ref), f"{what}: {ref} does not raise "
                        "NotSupportedError; is it provided now?")

  def test_an_rnn_estimator_is_implemented_not_refused(self):
    # The check itself: a provided name is not "refused".
    self.assertFalse(refused("harness.experimental:RNNClassifier"))
    self.assertTrue(named_test_exists(
        "tests/test_rnn.py::Rnn215FixtureTest::test_restores_215_model_dir"))
    self.assertFalse(named_test_exists(
        "tests/test_rnn.py::Rnn215FixtureTest::nope"))


if __name__ == "__main__":
  absltest.main()
