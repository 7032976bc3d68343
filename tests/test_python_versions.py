"""Guard: the code needs no Python newer than setup.py's python_requires.

`vermin` (a test extra) reads harness/, model_fns/ and input_fns/ and names
the lowest Python 3 each construct needs (enum.StrEnum: 3.11, a `match`
statement: 3.10, ...); this test fails when that exceeds python_requires.
"""

import ast
import pathlib
import re
import subprocess
import sys

from absl.testing import absltest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "model_fns", "input_fns")
# vermin's entry point; its package has no __main__, and its console script's
# shebang names whichever venv path installed it.
_VERMIN = "import sys; from vermin import main; sys.argv[0] = 'vermin'; main()"


def python_requires_minimum(setup_py):
  """(major, minor) of setup.py's `python_requires=">=X.Y"` (read with ast)."""
  for node in ast.walk(ast.parse(setup_py.read_text(encoding="utf-8"))):
    if isinstance(node, ast.keyword) and node.arg == "python_requires":
      match = re.fullmatch(r">=\s*(\d+)\.(\d+)", node.value.value.strip())
      if match is None:
        raise AssertionError(
            f"python_requires={node.value.value!r} in {setup_py}: this test "
            "reads only the form '>=X.Y'; extend it for another form")
      return int(match.group(1)), int(match.group(2))
  raise AssertionError(f"no python_requires= in {setup_py}")


def vermin_violations(minimum, paths):
  """vermin's report of constructs newer than `minimum`; '' when none."""
  target = "-t=%d.%d-" % minimum
  result = subprocess.run(
      [sys.executable, "-c", _VERMIN, "-q", "--no-tips", "--violations",
       "--eval-annotations", "--no-parse-comments", target, *map(str, paths)],
      capture_output=True, text=True, timeout=600, check=False)
  if result.returncode not in (0, 1) or (
      result.returncode == 1 and not result.stdout.strip()):
    raise AssertionError(
        f"vermin failed (exit {result.returncode}): {result.stderr[-2000:]}")
  return result.stdout.strip() if result.returncode else ""


class PythonVersionsTest(absltest.TestCase):

  def test_setup_py_minimum_is_read(self):
    self.assertGreaterEqual(python_requires_minimum(ROOT / "setup.py"), (3, 10))

  def test_code_needs_no_newer_python_than_python_requires(self):
    minimum = python_requires_minimum(ROOT / "setup.py")
    report = vermin_violations(minimum, [ROOT / p for p in PACKAGES])
    self.assertEqual(
        report, "",
        f"code needs a Python newer than python_requires>={minimum}: "
        f"replace the construct or raise python_requires\n{report}")

  def test_a_str_enum_is_caught(self):
    # The check can fail: enum.StrEnum (3.11+) was in cluster/strategy_kind.py.
    path = pathlib.Path(self.create_tempdir().full_path) / "kind.py"
    path.write_text("import enum\n\nclass Kind(enum.StrEnum):\n  A = 'a'\n")
    self.assertIn("enum.StrEnum", vermin_violations((3, 10), [path]))
    self.assertEqual(vermin_violations((3, 11), [path]), "")


if __name__ == "__main__":
  absltest.main()
