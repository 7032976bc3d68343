"""Guard: docs/ARCHITECTURE.md's structural rules other than the import rules.

tests/test_layering.py checks the layers, the line cap and the import
cycles; this file checks the rest, with `ast`: a name is re-exported only
by a door or at a tf.estimator 2.15 path; strategy kinds are compared only
in the tables keyed by kind; the package root holds at most
`MAX_ROOT_MODULES` modules; the `_tf_private` door lists every name its
modules define; and the page itself stays one page whose every rule names
the test that checks it. Each rule has a synthetic violation below showing
that it fails.
"""

import ast
import importlib
import pathlib
import re

from absl.testing import absltest

from harness.cluster import strategy_kind as strategy_kind_lib
from harness.compat import aliases
from tests import test_layering

ROOT = pathlib.Path(__file__).resolve().parent.parent
HARNESS_DIR = test_layering.HARNESS_DIR
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
MAX_ARCHITECTURE_LINES = 300
MAX_ROOT_MODULES = 15
# The one module that may compare kinds: the table of their traits.
KIND_TABLE = "cluster/strategy_kind.py"


def at_215_paths():
  """Harness modules that stand at a tf.estimator 2.15 module path: those
  `harness.compat` forwards a 2.15 module or namespace to, wholesale, and
  those it takes names from for the 2.15 module of their own name
  (`keras_lib`)."""
  found = set()
  for path, (names, sources) in aliases.LAYOUT.items():
    found.update(sources)
    found.update(module for module in (
        target.partition(":")[0] for target in names.values())
                 if module.rpartition(".")[2] == path.rpartition(".")[2])
  for _, sources, _ in aliases.NAMESPACE_PARTS:
    found.update(sources)
  return frozenset(found)


def _names_from_harness(tree):
  """Names a module binds at its top by importing harness (TensorFlow's
  `tf` from `harness._tf` is TensorFlow's, not harness's)."""
  bound = set()
  for node in tree.body:
    if isinstance(node, ast.ImportFrom) and (
        node.module or "").startswith("harness"):
      bound.update(alias.asname or alias.name for alias in node.names
                   if f"{node.module}.{alias.name}" != "harness._tf.tf")
    elif isinstance(node, ast.Import):
      bound.update((alias.asname or alias.name).split(".")[0]
                   for alias in node.names if alias.name.startswith("harness"))
  return bound


def _last_part(expr):
  """`a.b.c` -> "c", `a` -> "a"; None for anything else."""
  if isinstance(expr, ast.Attribute):
    return expr.attr
  return expr.id if isinstance(expr, ast.Name) else None


def _root_name(expr):
  while isinstance(expr, ast.Attribute):
    expr = expr.value
  return expr.id if isinstance(expr, ast.Name) else None


def reexports(relative, source, allowed_modules):
  """Names `relative` hands on without defining them, outside doors and
  `allowed_modules` (dotted): a name in `__all__` that the module does not
  define, or a public alias of a harness name under the same name
  (`read = lease_file.read`). A new name for a shared value
  (`SAME_DEFAULT = env_knobs.NotGiven.X`) is the module's own."""
  if relative.endswith("__init__.py") or (
      test_layering.module_name(relative) in allowed_modules):
    return []
  tree = ast.parse(source)
  from_harness = _names_from_harness(tree)
  defined, listed, found = set(), [], []
  for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
      defined.add(node.name)
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
      continue
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = [n.id for target in targets for n in ast.walk(target)
             if isinstance(n, ast.Name)]
    if names == ["__all__"]:
      elements = getattr(node.value, "elts", None)
      if elements is None or not all(
          isinstance(e, ast.Constant) for e in elements):
        found.append(f"{relative}:{node.lineno}: __all__ is not a list of "
                     "strings (write the names out, so they can be checked)")
      listed = [e.value for e in elements or () if isinstance(e, ast.Constant)]
      continue
    for name in names:
      if (_root_name(node.value) in from_harness and not name.startswith("_")
          and _last_part(node.value) == name):
        found.append(f"{relative}:{node.lineno}: {name} = "
                     f"{ast.unparse(node.value)} (import it from there)")
      else:
        defined.add(name)
  found += [f"{relative}: __all__ lists {name}, which it does not define "
            "(callers import it from its module)"
            for name in listed if name not in defined and not any(
                f": {name} = " in line for line in found)]
  return found


def _strategy_kind_names(tree):
  """Names bound to `StrategyKind` in a module (imports and aliases)."""
  names = {"StrategyKind"}
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom):
      names.update(alias.asname for alias in node.names
                   if alias.name == "StrategyKind" and alias.asname)
    elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
          and node.value.id in names):
      names.update(t.id for t in node.targets if isinstance(t, ast.Name))
  return names


_KIND_VALUES = frozenset(kind.value for kind in strategy_kind_lib.StrategyKind)


def _is_kind(node, kind_names):
  """`StrategyKind.X` (or an alias's), or a kind's value as a string."""
  if isinstance(node, ast.Attribute):
    return (isinstance(node.value, ast.Name) and node.value.id in kind_names
            and node.attr.isupper())
  return isinstance(node, ast.Constant) and node.value in _KIND_VALUES


def _names_a_kind(node):
  """Whether a compared expression reads like a strategy kind."""
  text = ast.unparse(node).lower()
  return "kind" in text or "strategy" in text


def kind_comparisons(relative, source):
  """`kind == StrategyKind.X`, `kind in (StrategyKind.X, ...)`,
  `strategy != "mirrored"`, `case StrategyKind.X:` outside the trait table:
  code asks a kind's traits (`kind.lockstep`) or looks it up in a table
  keyed by kind."""
  if relative == KIND_TABLE:
    return []
  tree = ast.parse(source)
  kind_names = _strategy_kind_names(tree)
  lines = source.splitlines()
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Compare):
      sides = [node.left, *node.comparators]
      kinds = [part for side in sides for part in ast.walk(side)
               if _is_kind(part, kind_names)]
      named = any(isinstance(k, ast.Attribute) for k in kinds) or (
          kinds and any(_names_a_kind(side) for side in sides
                        if not _is_kind(side, kind_names)))
      if named:
        found.append(node.lineno)
    elif isinstance(node, ast.match_case):
      if any(_is_kind(part, kind_names) and isinstance(part, ast.Attribute)
             for part in ast.walk(node.pattern)):
        found.append(node.pattern.lineno)
  return [f"{relative}:{line}: {lines[line - 1].strip()} (compare traits, "
          "or key a table by kind; see cluster/strategy_kind.py)"
          for line in sorted(set(found))]


def root_problems(files):
  """What is wrong with the package root (`files`: paths under harness/):
  more than `MAX_ROOT_MODULES` modules directly in it."""
  root = sorted(f for f in files if "/" not in f and f.endswith(".py"))
  if len(root) <= MAX_ROOT_MODULES:
    return []
  return [f"{len(root)} modules at the package root (at most "
          f"{MAX_ROOT_MODULES}: {', '.join(root)}); move one into the "
          "folder of its job"]


# The two imports that cross a layer upwards (docs/ARCHITECTURE.md): the
# folder read -> the folder that reads it, which it never imports back.
UPWARD_READS = {"run_config": "harness.distribute", "spec": "harness.core"}


def reads_back(relative, source):
  """Imports of its reader by a folder read upwards (`UPWARD_READS`)."""
  reader = UPWARD_READS.get(pathlib.PurePosixPath(relative).parts[0])
  if reader is None:
    return []
  return [f"{relative}:{line}: imports {name} ({reader} reads this folder "
          "from below; the arrow runs one way)"
          for line, name in test_layering.imported_names(source)
          if name == reader or name.startswith(reader + ".")]


def rules_without_tests(text, root=ROOT):
  """Each bullet of the page's "## Rules" section names a test
  (`tests/file.py::Class::test`) that exists; returns what is wrong."""
  section = text.split("\n## Rules", 1)[-1].split("\n## ", 1)[0]
  bullets = re.split(r"\n(?=- )", section)[1:]
  if not bullets:
    return ["no bullet under \"## Rules\""]
  problems = []
  for bullet in bullets:
    refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)::(\w+)`", bullet)
    if not refs:
      problems.append(f"names no test: {bullet[:60]!r}")
    for path, cls, test in refs:
      test_file = root / path
      tree = ast.parse(test_file.read_text()) if test_file.exists() else None
      if tree is None or not any(
          isinstance(c, ast.ClassDef) and c.name == cls and any(
              isinstance(f, ast.FunctionDef) and f.name == test
              for f in c.body) for c in tree.body):
        problems.append(f"{path}::{cls}::{test} does not exist")
  return problems


class StructureRulesTest(absltest.TestCase):

  maxDiff = None

  def test_names_are_reexported_only_in_doors_or_at_215_paths(self):
    allowed = at_215_paths()
    found = []
    for relative, source in test_layering.harness_sources().items():
      found += reexports(relative, source, allowed)
    self.assertEqual(found, [])

  def test_a_reexport_outside_a_door_fails(self):
    source = ("from harness.state import lease_file\n"
              "from harness.cluster.jobs import CHIEF\n"
              "from harness.cluster import env_knobs\n"
              "from harness._tf import tf\n"
              "__all__ = ['read', 'CHIEF', 'hold', 'SAME', 'Hook']\n"
              "read = lease_file.read\n"
              "_write = lease_file.write\n"
              "SAME = env_knobs.NotGiven.FROM_RUN_CONFIG\n"
              "Hook = tf.compat.v1.train.SessionRunHook\n"
              "def hold():\n  pass\n")
    self.assertEqual(reexports("state/lease.py", source, frozenset()), [
        "state/lease.py:6: read = lease_file.read (import it from there)",
        "state/lease.py: __all__ lists CHIEF, which it does not define "
        "(callers import it from its module)"])
    self.assertEqual(reexports("x.py", "__all__ = sorted(NAMES)\n",
                               frozenset()), [
        "x.py:1: __all__ is not a list of strings (write the names out, so "
        "they can be checked)"])
    # A door, and a module at a 2.15 path, may hand names on.
    self.assertEqual(reexports("state/__init__.py", source, frozenset()), [])
    self.assertEqual(reexports(
        "state/lease.py", source, frozenset({"harness.state.lease"})), [])

  def test_the_215_paths_are_found(self):
    # What the rule allows comes from compat's alias table; these are the
    # paths the page names.
    self.assertContainsSubset(
        {"harness.hooks", "harness.experimental", "harness.export.outputs",
         "harness.canned.head.base_head"}, at_215_paths())

  def test_kinds_are_compared_only_in_the_trait_table(self):
    found = []
    for relative, source in test_layering.harness_sources().items():
      found += kind_comparisons(relative, source)
    self.assertEqual(found, [])

  def test_a_kind_comparison_fails(self):
    source = ("from harness.cluster.strategy_kind import StrategyKind\n"
              "_K = StrategyKind\n"
              "def build(kind, job, p):\n"
              "  if kind == StrategyKind.MIRRORED:\n"
              "    pass\n"
              "  if kind in (_K.COLLECTIVE, _K.PARAMETER_SERVER):\n"
              "    pass\n"
              "  if job.strategy != 'mirrored':\n"
              "    pass\n"
              "  match kind:\n"
              "    case StrategyKind.TPU:\n"
              "      pass\n"
              "  if kind.lockstep or kind not in _BUILDERS or p == 'other':\n"
              "    return {StrategyKind.MIRRORED: 1}[kind]\n")
    self.assertEqual(
        [line.split(" (compare")[0]
         for line in kind_comparisons("x.py", source)], [
            "x.py:4: if kind == StrategyKind.MIRRORED:",
            "x.py:6: if kind in (_K.COLLECTIVE, _K.PARAMETER_SERVER):",
            "x.py:8: if job.strategy != 'mirrored':",
            "x.py:11: case StrategyKind.TPU:"])
    self.assertEqual(kind_comparisons(KIND_TABLE, source), [])

  def test_at_most_15_modules_at_the_package_root(self):
    files = [str(p.relative_to(HARNESS_DIR))
             for p in HARNESS_DIR.rglob("*.py")]
    self.assertEqual(root_problems(files), [])

  def test_a_sixteenth_root_module_fails(self):
    files = [f"m{i}.py" for i in range(MAX_ROOT_MODULES)] + [
        "core/x.py", "README.md"]
    self.assertEqual(root_problems(files), [])
    found = root_problems(files + ["tf_env.py"])
    self.assertLen(found, 1)
    self.assertStartsWith(found[0], "16 modules at the package root")

  def test_the_tf_private_door_lists_every_name_of_its_modules(self):
    door = importlib.import_module("harness._tf_private")
    by_module = door._BY_MODULE  # pylint: disable=protected-access
    modules = sorted(p.stem for p in (HARNESS_DIR / "_tf_private").glob("*.py")
                     if p.stem != "__init__")
    self.assertEqual(sorted(by_module), modules)
    for module in modules:
      names = importlib.import_module(f"harness._tf_private.{module}").__all__
      self.assertCountEqual(by_module[module], names, module)

  def test_the_folders_read_upwards_do_not_read_back(self):
    found = []
    for relative, source in test_layering.harness_sources().items():
      found += reads_back(relative, source)
    self.assertEqual(found, [])

  def test_a_folder_reading_back_fails(self):
    source = "def f():\n  from harness.distribute import roles\n"
    self.assertLen(reads_back("run_config/config.py", source), 1)
    self.assertLen(reads_back("spec/checks.py",
                              "import harness.core.trainer\n"), 1)
    self.assertEqual(reads_back("cli/job.py", source), [])

  def test_the_architecture_page_is_one_page(self):
    lines = ARCHITECTURE.read_text().count("\n")
    self.assertLessEqual(lines, MAX_ARCHITECTURE_LINES,
                         "docs/ARCHITECTURE.md: one page of rules and "
                         "today's figures; history lives in git")

  def test_each_rule_on_the_page_names_its_test(self):
    self.assertEqual(rules_without_tests(ARCHITECTURE.read_text()), [])

  def test_a_rule_without_a_test_fails(self):
    text = ("# A\n\n## Rules\n\n- **one.** Checked "
            "(`tests/test_structure_rules.py::StructureRulesTest::"
            "test_a_rule_without_a_test_fails`).\n- **two.** No test.\n"
            "- **three.** (`tests/test_layering.py::LayeringTest::gone`)\n"
            "\n## Next\n- not a rule\n")
    self.assertEqual(rules_without_tests(text), [
        "names no test: '- **two.** No test.'",
        "tests/test_layering.py::LayeringTest::gone does not exist"])

  def test_the_page_states_the_caps_the_tests_hold(self):
    text = ARCHITECTURE.read_text()
    for phrase in (f"over {test_layering.MAX_MODULE_LINES} lines",
                   f"at most {MAX_ROOT_MODULES} modules",
                   f"at most {MAX_ARCHITECTURE_LINES} lines"):
      self.assertTrue(phrase in text, f"docs/ARCHITECTURE.md lacks {phrase!r}")


if __name__ == "__main__":
  absltest.main()
