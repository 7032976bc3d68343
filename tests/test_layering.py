"""Guard: the folder import rules of docs/ARCHITECTURE.md, checked with `ast`.

Every import counts, at module top or inside a function. Each rule has a
synthetic violation below showing that it fails.
"""

import ast
import pathlib
import textwrap

from absl.testing import absltest

import harness

HARNESS_DIR = pathlib.Path(harness.__file__).parent
BINARIES = ("harness.main", "harness.launch", "harness.server", "harness.k8s",
            "harness.run")
TENSORFLOW = ("tensorflow", "tf_keras", "keras", "harness._tf",
              "harness._tf_private")
EXAMPLES = ("model_fns", "input_fns")

# folder (or top-level module) -> (imports it must not make, why).
RULES = {
    "cluster": (TENSORFLOW + EXAMPLES + (
        "harness.state", "harness.core", "harness.distribute", "harness.cli",
        "harness.export", "harness.canned", "harness.tpu", "harness.estimator",
        "harness.run_config", "harness.training") + BINARIES,
                "cluster/ is TF_CONFIG text -> facts: errors and itself only, "
                "no TensorFlow"),
    "state": (EXAMPLES + (
        "harness.core", "harness.distribute", "harness.cli", "harness.export",
        "harness.canned", "harness.tpu", "harness.estimator",
        "harness.training", "harness.run_config", "harness._tf_private")
              + BINARIES,
              "state/ is model_dir files: errors, _tf, cluster/ and itself"),
    "core": (EXAMPLES + (
        "harness.cli", "harness.distribute", "harness.canned", "harness.tpu",
        "harness.estimator", "harness.training", "harness.compat",
        "harness.keras_lib") + BINARIES,
             "core/ builds graphs and runs sessions; the Estimator, the "
             "roles and the binaries call it, never the other way"),
    "distribute": (EXAMPLES + ("harness.cli", "harness.canned", "harness.tpu",
                               "harness.compat") + BINARIES,
                   "distribute/ runs tasks; the binaries wire it"),
    "export": (EXAMPLES + ("harness.cli", "harness.core", "harness.distribute",
                           "harness.canned", "harness.tpu") + BINARIES,
               "export/ is outputs, receivers and the SavedModel writer"),
    "canned": (EXAMPLES + ("harness.cli", "harness.distribute",
                           "harness.tpu") + BINARIES,
               "canned/ estimators are model_fns on the public API"),
    "tpu": (EXAMPLES + ("harness.cli", "harness.distribute",
                        "harness.canned") + BINARIES,
            "tpu/ is an Estimator subclass on the public API"),
    "cli": (BINARIES, "cli/ holds the binaries' parts; the binaries import "
            "it, never the reverse"),
    # Top-level API modules: the library never imports its binaries or cli/.
    "top": (EXAMPLES + ("harness.cli",) + BINARIES,
            "the library API never imports cli/ or the binaries"),
}
# Modules outside cluster/ that import no TensorFlow either (launch and the
# CLI's text paths start in milliseconds; `python -m harness.launch` forks
# its tasks before TensorFlow loads).
TF_FREE_MODULES = ("errors.py", "launch.py", "state/paths.py",
                   "cli/bad_flags.py", "cli/k8s_policy.py",
                   "cli/tensorboard_server.py", "cli/legacy_imports.py",
                   "core/stall.py", "core/auto_loop.py")
# Top-level modules exempt from "top": the binaries and the legacy entry
# points, which wire cli/ (run imports compat).
TOP_EDGES = frozenset({"main", "launch", "server", "k8s", "run", "compat"})


def imported_names(source):
  """(line, dotted name) for every import; `from a import b` gives a.b."""
  for node in ast.walk(ast.parse(textwrap.dedent(source))):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield node.lineno, alias.name
    elif isinstance(node, ast.ImportFrom) and node.module:
      for alias in node.names:
        yield node.lineno, f"{node.module}.{alias.name}"


def area(relative):
  """The rule that governs a file under harness/ ("cluster/ports.py")."""
  parts = pathlib.PurePosixPath(relative).parts
  if len(parts) > 1:
    return parts[0]
  return None if parts[0][:-3] in TOP_EDGES else "top"


def layering_violations(relative, source):
  rule = area(relative)
  if rule is None or rule not in RULES:
    return []
  forbidden, why = RULES[rule]
  own = f"harness.{rule}" if rule != "top" else None
  found = []
  for line, name in imported_names(source):
    for prefix in forbidden:
      if prefix == own:
        continue
      if name == prefix or name.startswith(prefix + "."):
        found.append(f"{relative}:{line}: imports {name} ({why})")
        break
  return found


def tensorflow_imports(relative, source):
  return [f"{relative}:{line}: imports {name} (listed TensorFlow-free)"
          for line, name in imported_names(source)
          if name == "tensorflow" or name.startswith(TENSORFLOW)]


# (file under harness/, "module_alias._name"): why it reaches into another
# harness module's private name. New entries need a reason; better, a
# public name.
PRIVATE_REACH_ALLOWED = {
    ("canned/dnn_linear_combined.py", "dnn._layer_summary"):
        "2.15's combined estimator logs its linear logits like dnn's",
    ("canned/head/multi_label_head.py", "base_head._LABEL_NONE_ERR_MSG"):
        "2.15's message, shared by the heads",
}


def private_reach(relative, source):
  """`module._name` where `module` is another harness module."""
  tree = ast.parse(textwrap.dedent(source))
  modules = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
        "harness") and node.module != "harness._tf":
      modules.update(a.asname or a.name for a in node.names
                     if a.name[:1].islower())
  found = []
  for node in ast.walk(tree):
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        and node.value.id in modules and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and (relative, f"{node.value.id}.{node.attr}")
        not in PRIVATE_REACH_ALLOWED):
      found.append((node.lineno, f"{relative}:{node.lineno}: "
                                 f"{node.value.id}.{node.attr}"))
  return [text for _, text in sorted(found)]


def tree_violations():
  found = []
  for path in sorted(HARNESS_DIR.rglob("*.py")):
    found += layering_violations(str(path.relative_to(HARNESS_DIR)),
                                 path.read_text())
  for relative in TF_FREE_MODULES:
    found += tensorflow_imports(relative,
                                (HARNESS_DIR / relative).read_text())
  for path in sorted(HARNESS_DIR.rglob("*.py")):
    found += private_reach(str(path.relative_to(HARNESS_DIR)),
                           path.read_text())
  return found


class LayeringTest(absltest.TestCase):

  def test_tree_follows_the_folder_rules(self):
    self.assertEqual(tree_violations(), [])

  def test_every_folder_has_a_rule(self):
    folders = {p.name for p in HARNESS_DIR.iterdir()
               if (p / "__init__.py").exists()}
    self.assertEqual(folders - set(RULES), set())

  def test_core_importing_cli_fails(self):
    found = layering_violations(
        "core/train_loop.py", "def f():\n  from harness.cli import flags\n")
    self.assertLen(found, 1)
    self.assertIn("core/train_loop.py:2: imports harness.cli.flags", found[0])

  def test_core_importing_a_binary_fails(self):
    self.assertLen(layering_violations("core/x.py", "import harness.k8s\n"), 1)

  def test_core_importing_distribute_fails(self):
    self.assertLen(layering_violations(
        "core/x.py", "from harness.distribute import roles\n"), 1)

  def test_cluster_importing_tensorflow_fails(self):
    for source in ("import tensorflow as tf\n",
                   "from harness._tf import tf\n",
                   "from harness.state import storage\n"):
      self.assertLen(layering_violations("cluster/ports.py", source), 1,
                     source)

  def test_cluster_importing_itself_and_errors_passes(self):
    self.assertEqual(layering_violations(
        "cluster/listen.py",
        "from harness import errors\nfrom harness.cluster import ports\n"),
                     [])

  def test_library_importing_cli_fails(self):
    self.assertLen(layering_violations(
        "estimator.py", "from harness.cli import registry\n"), 1)
    self.assertLen(layering_violations(
        "export/writer.py", "import model_fns.mnist_cnn\n"), 1)

  def test_tensorflow_in_a_listed_tf_free_module_fails(self):
    self.assertLen(tensorflow_imports(
        "launch.py", "def f():\n  from harness._tf import tf\n"), 1)
    self.assertEqual(tensorflow_imports("launch.py", "import json\n"), [])

  def test_reaching_into_another_modules_private_name_fails(self):
    source = ("from harness.distribute import roles\n"
              "from harness.cluster import tf_config as cluster_lib\n"
              "roles._label(config)\ncluster_lib._fail\n")
    self.assertEqual(private_reach("estimator.py", source), [
        "estimator.py:3: roles._label", "estimator.py:4: cluster_lib._fail"])
    # The rules' old allowance is gone: they use tf_config_checks' public
    # helpers now.
    self.assertLen(private_reach("cluster/tf_config_rules.py", source), 2)
    allowed = ("from harness.canned import dnn\nfrom harness.distribute "
               "import roles\ndnn._layer_summary\nroles._label\n")
    self.assertEqual(private_reach("canned/dnn_linear_combined.py", allowed),
                     ["canned/dnn_linear_combined.py:4: roles._label"])

  def test_binaries_may_wire_cli(self):
    self.assertEqual(layering_violations(
        "main.py", "from harness.cli import flags\n"), [])


if __name__ == "__main__":
  absltest.main()
