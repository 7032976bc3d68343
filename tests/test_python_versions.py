"""Guard: the code needs no Python newer than python_requires; no marker
leaves out a newer Python (3.14 is one line in .ci/other_pythons away).

`vermin` (a test extra) reads harness/, model_fns/ and input_fns/ and names
the lowest Python 3 each construct needs (enum.StrEnum: 3.11, a `match`
statement: 3.10, ...); this test fails when that exceeds python_requires.
"""

import ast
import pathlib
import re
import runpy
import subprocess
import sys
from unittest import mock

from absl.testing import absltest
from packaging.requirements import Requirement

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


def setup_arguments(setup_py):
  """The keyword arguments setup.py hands to `setuptools.setup` (a stand-in
  setuptools: venvs of Python 3.12+ have none; pip builds in isolation)."""
  setuptools = mock.Mock(find_packages=mock.Mock(return_value=[]))
  with mock.patch.dict(sys.modules, {"setuptools": setuptools}):
    runpy.run_path(str(setup_py))
  return setuptools.setup.call_args.kwargs


def requirements(arguments):
  """Every requirement of setup.py, its extras' included (Requirement)."""
  texts = list(arguments["install_requires"])
  for extra in arguments.get("extras_require", {}).values():
    texts.extend(extra)
  return [Requirement(text) for text in texts]


def applies(requirement, python):
  """Whether `requirement`'s marker holds on Python `python` ("3.14")."""
  if requirement.marker is None:
    return True
  return requirement.marker.evaluate(
      {"python_version": python, "python_full_version": python + ".0",
       "extra": ""})


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

  def test_no_marker_leaves_out_a_newer_python(self):
    # Python 3.14 (and later) gets what 3.13 gets: a leg for it is one line
    # in .ci/other_pythons. Bounds for old Pythons (3.10) stay allowed.
    arguments = setup_arguments(ROOT / "setup.py")
    self.assertNotIn("<", arguments["python_requires"])
    for requirement in requirements(arguments):
      for older, newer in (("3.11", "3.12"), ("3.12", "3.13"),
                           ("3.13", "3.14"), ("3.14", "3.15")):
        self.assertFalse(
            applies(requirement, older) and not applies(requirement, newer),
            f"{requirement} leaves out Python {newer}: widen its marker")

  def test_python_310_bounds_apply_on_310_only(self):
    bounded = [r for r in requirements(setup_arguments(ROOT / "setup.py"))
               if applies(r, "3.10") and not applies(r, "3.11")]
    self.assertEqual(sorted(r.name for r in bounded),
                     ["etils", "keras", "markdown", "protobuf"])
    self.assertTrue(all(r.specifier for r in bounded), bounded)

  def test_a_marker_leaving_out_314_is_caught(self):
    requirement = Requirement('numpy; python_version < "3.14"')
    self.assertTrue(applies(requirement, "3.13"))
    self.assertFalse(applies(requirement, "3.14"))

  def test_a_str_enum_is_caught(self):
    # The check can fail: enum.StrEnum (3.11+) was in cluster/strategy_kind.py.
    path = pathlib.Path(self.create_tempdir().full_path) / "kind.py"
    path.write_text("import enum\n\nclass Kind(enum.StrEnum):\n  A = 'a'\n")
    self.assertIn("enum.StrEnum", vermin_violations((3, 10), [path]))
    self.assertEqual(vermin_violations((3, 11), [path]), "")


if __name__ == "__main__":
  absltest.main()
