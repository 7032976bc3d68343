"""Every skip in tests/ says how to run what it skips: the conftest's last
line of a run lists each skipped promise by its reason, and a reader of
that line needs the install command, the environment variable, the user or
the file to restore, not only what was missing."""

import ast
import pathlib
import re

from absl.testing import absltest

from tests import conftest

# What a reason says to enable the test.
_HOW = re.compile(r"pip install|install line|\binstall \w|"
                  r"run (it|the suite|them)\b|restore |git checkout|=1 |"
                  r"\bset [A-Z0-9_]+ ")
# Reasons computed where the call cannot show them: file -> where the
# how-to is written.
_COMPUTED = {
    # `_unavailable_reason` returns each reason with its how-to.
    "test_k8s_netns.py": "_unavailable_reason",
}
_SKIP_CALLS = {"skipTest": 0, "SkipTest": 0, "skip": 0, "skipIf": 1,
               "skipUnless": 1}


def _name(func):
  return func.attr if isinstance(func, ast.Attribute) else getattr(
      func, "id", None)


def _text(node, constants):
  """The literal text of a reason expression (the constant parts of an
  f-string, a module constant by name); None when it is computed."""
  if isinstance(node, ast.Constant) and isinstance(node.value, str):
    return node.value
  if isinstance(node, ast.JoinedStr):
    return "".join(v.value for v in node.values
                   if isinstance(v, ast.Constant)) + "{}"
  if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
    parts = [_text(node.left, constants), _text(node.right, constants)]
    return None if None in parts else "".join(parts)
  if isinstance(node, ast.Name) and node.id in constants:
    return _text(constants[node.id], constants)
  return None


def skip_reasons(source):
  """[(line, the reason's literal text or None)] of a test file's skips."""
  tree = ast.parse(source)
  constants = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
               for t in n.targets if isinstance(t, ast.Name)}
  found = []
  for node in ast.walk(tree):
    if not isinstance(node, ast.Call):
      continue
    name = _name(node.func)
    if name == "skipif":  # pytest.mark.skipif(condition, reason=...)
      reason = [k.value for k in node.keywords if k.arg == "reason"]
    elif name in _SKIP_CALLS and len(node.args) > _SKIP_CALLS[name]:
      reason = [node.args[_SKIP_CALLS[name]]]
    else:
      continue
    if reason:
      found.append((node.lineno, _text(reason[0], constants)))
  return found


class SkipReasonsTest(absltest.TestCase):

  def test_every_skip_says_how_to_run_it(self):
    checked = 0
    for path in sorted((conftest.REPO_ROOT / "tests").glob("*.py")):
      for line, reason in skip_reasons(path.read_text(encoding="utf-8")):
        with self.subTest(where=f"{path.name}:{line}"):
          if reason is None or path.name in _COMPUTED:
            self.assertIn(path.name, _COMPUTED, "a computed reason: name "
                          "where its how-to is written in _COMPUTED")
            continue
          self.assertRegex(reason.rstrip(" .)}{"), _HOW)
          checked += 1
    self.assertGreater(checked, 25)

  def test_a_reason_without_its_how_is_found(self):
    self.assertEqual(skip_reasons(
        '@absltest.skipIf(pd is None, "pandas is not installed")\n'
        "class T: pass\n"), [(1, "pandas is not installed")])
    self.assertNotRegex("pandas is not installed", _HOW)
    self.assertRegex("pandas is not installed: pip install pandas", _HOW)
    self.assertEqual(skip_reasons(
        'M = ("needs root")\nself.skipTest(M)\n'), [(2, "needs root")])


if __name__ == "__main__":
  absltest.main()
