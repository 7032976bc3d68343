"""Guard: the folder import rules of docs/ARCHITECTURE.md, checked with `ast`.

Every import counts, at module top or inside a function. Each rule has a
synthetic violation below showing that it fails.
"""

import ast
import collections
import pathlib
import re
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
        "harness.run_config", "harness.training", "harness.fields") + (
        "harness.guard", "harness.telemetry", "harness.plan")
                + BINARIES,
                "cluster/ is TF_CONFIG text -> facts: errors and itself only, "
                "no TensorFlow"),
    # RunConfig's harness fields (default, check, docs, flag), declared
    # once: below core/, RunConfig and cli/, which read them.
    "fields": (TENSORFLOW + EXAMPLES + (
        "harness.state", "harness.core", "harness.distribute", "harness.cli",
        "harness.export", "harness.canned", "harness.tpu", "harness.estimator",
        "harness.run_config", "harness.training", "harness.spec",
        "harness.hooks", "harness.compat") + (
        "harness.guard", "harness.telemetry", "harness.plan") + BINARIES,
               "fields/ is the field table: errors and cluster/ only, no "
               "TensorFlow"),
    "state": (EXAMPLES + (
        "harness.core", "harness.distribute", "harness.cli", "harness.export",
        "harness.canned", "harness.tpu", "harness.estimator",
        "harness.training", "harness.run_config", "harness._tf_private",
        "harness.fields") + (
        "harness.guard", "harness.telemetry", "harness.plan") + BINARIES,
              "state/ is model_dir files: errors, _tf, cluster/ and itself"),
    # The task's plan (role, chief, model_dir, knobs), decided once: below
    # core/, guard/, telemetry/ and everything that reads it, above state/,
    # fields/ and cluster/ (which it reads); no TensorFlow.
    "plan": (TENSORFLOW + EXAMPLES + (
        "harness.core", "harness.guard", "harness.telemetry",
        "harness.distribute", "harness.cli", "harness.run_config",
        "harness.estimator", "harness.training", "harness.canned",
        "harness.tpu", "harness.export", "harness.hooks", "harness.spec",
        "harness.compat") + BINARIES,
             "plan/ decides what this process is: state/, fields/, cluster/ "
             "and errors only, no TensorFlow"),
    # core/ reads a harness field's default and check from fields/, never
    # run_config/ (the one arrow back up, gone: issue 40).
    "core": (EXAMPLES + (
        "harness.cli", "harness.distribute", "harness.canned", "harness.tpu",
        "harness.estimator", "harness.training", "harness.compat",
        "harness.keras_lib", "harness.hooks", "harness.run_config")
             + BINARIES,
             "core/ builds graphs and runs sessions; the Estimator, the "
             "roles and the binaries call it, never the other way"),
    # The guards around the loop (stop signals, preemption, lost peers) and
    # its reports (log lines, rates, metrics, trainer status): core/'s loop
    # uses both; neither imports core/, the other, or anything above.
    "guard": (EXAMPLES + (
        "harness.core", "harness.telemetry", "harness.cli",
        "harness.distribute", "harness.canned", "harness.tpu",
        "harness.estimator", "harness.training", "harness.compat",
        "harness.keras_lib", "harness.hooks", "harness.run_config",
        "harness.export") + BINARIES,
              "guard/ stops and checks a loop; core/ and above call it, "
              "never the other way"),
    "telemetry": (EXAMPLES + (
        "harness.core", "harness.guard", "harness.cli",
        "harness.distribute", "harness.canned", "harness.tpu",
        "harness.estimator", "harness.training", "harness.compat",
        "harness.keras_lib", "harness.hooks", "harness.run_config",
        "harness.export") + BINARIES,
                  "telemetry/ reports a loop; core/ and above call it, "
                  "never the other way"),
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
    # The launcher is a binary: anything TensorFlow-free in harness (its
    # whole import closure, test_launch_reaches_no_tensorflow), never a
    # binary; nothing in harness imports it (BINARIES in every rule).
    "launch": (TENSORFLOW + EXAMPLES + BINARIES,
               "launch/ is the launcher binary: it forks its tasks before "
               "TensorFlow loads, and nothing imports a binary"),
    # The Kubernetes renderer is a binary too, TensorFlow-free likewise
    # (test_k8s_reaches_no_tensorflow); only k8s/ imports it
    # (BINARY_PACKAGES), so a piece cli/ or cluster/ needs lives there.
    "k8s": (TENSORFLOW + EXAMPLES + BINARIES,
            "k8s/ is the Kubernetes binary: cli/, cluster/ and errors, no "
            "TensorFlow, and nothing imports a binary"),
    # The standard-server binary: it wires cli/, cluster/ and distribute/
    # (its config is distribute/task_servers') onto TensorFlow and runs no
    # model code; only server/ imports it (BINARY_PACKAGES).
    "server": (EXAMPLES + ("harness.core", "harness.canned", "harness.tpu",
                           "harness.estimator", "harness.training")
               + BINARIES,
               "server/ is the standard-server binary: cli/, cluster/, "
               "distribute/ and TensorFlow, no model code, and nothing "
               "imports a binary"),
    # The RunConfig package: an API module like the top-level ones.
    "run_config": (EXAMPLES + ("harness.cli",) + BINARIES,
                   "run_config/ is RunConfig, an API module: it never imports "
                   "cli/ or the binaries"),
    # TensorFlow's internals, one function each: TensorFlow and nothing
    # else of harness (tests/test_tf_private_guard.py keeps them here).
    "_tf_private": (EXAMPLES + tuple(
        f"harness.{name}" for name in (
            "cluster", "state", "core", "distribute", "cli", "export",
            "canned", "tpu", "estimator", "training", "run_config", "spec",
            "hooks", "early_stopping", "compat", "errors", "fields", "guard",
            "telemetry", "plan"))
                    + BINARIES,
                    "_tf_private/ wraps TensorFlow internals; it knows "
                    "nothing of harness but `_tf`"),
    # EstimatorSpec, ModeKeys, calling model_fn / input_fn: an API module
    # like the top-level ones (core/ and export/ import it).
    "spec": (EXAMPLES + ("harness.cli", "harness.core", "harness.distribute",
                         "harness.estimator", "harness.training") + BINARIES,
             "spec/ is what a model_fn returns and how it is called; the "
             "Estimator and the loops call it, never the other way"),
    # tf.estimator 2.15's early_stopping module: hooks on the public API.
    "early_stopping": (EXAMPLES + ("harness.cli", "harness.distribute",
                                   "harness.canned", "harness.tpu") + BINARIES,
                       "early_stopping/ builds hooks on the Estimator's "
                       "public API"),
    # The legacy entry point: tf.estimator's module paths aliased to the
    # library (it may import any of it; nothing but run and user code
    # imports it).
    "compat": (EXAMPLES + ("harness.cli",) + BINARIES,
               "compat/ aliases tf.estimator to the library; it wires no "
               "binary and no cli/ part"),
    # Top-level API modules: the library never imports its binaries or cli/.
    "top": (EXAMPLES + ("harness.cli",) + BINARIES,
            "the library API never imports cli/ or the binaries"),
}
# Modules outside cluster/, launch/ and k8s/ that import no TensorFlow
# either (the CLI's text paths start in milliseconds).
TF_FREE_MODULES = ("errors.py", "state/paths.py", "plan/__init__.py",
                   "plan/task.py", "plan/knobs.py", "plan/one_process.py",
                   "cli/binary_flags.py",
                   "cli/tensorboard_server.py", "cli/legacy_imports.py",
                   "guard/stall.py", "core/auto_loop.py",
                   "telemetry/live_metrics.py",
                   "cli/job_config.py", "cli/flag_parsers.py",
                   "cli/flag_definitions.py", "cli/preflight.py")
# Top-level modules exempt from "top": the binaries and the legacy entry
# point `run`, which wire cli/ (run imports compat).
TOP_EDGES = frozenset({"main", "run"})
# Binaries that are packages: no module outside the package imports them.
BINARY_PACKAGES = ("k8s", "server")


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
  """The rule that governs a file under harness/ ("cluster/listen.py")."""
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


def binary_package_imports(relative, source):
  """Imports of a binary's package (BINARY_PACKAGES) from outside it."""
  found = []
  for package in BINARY_PACKAGES:
    if pathlib.PurePosixPath(relative).parts[0] == package:
      continue
    prefix = f"harness.{package}"
    found += [f"{relative}:{line}: imports {name} (only harness/{package}/ "
              "imports its own binary package)"
              for line, name in imported_names(source)
              if name == prefix or name.startswith(prefix + ".")]
  return found


def tensorflow_imports(relative, source):
  return [f"{relative}:{line}: imports {name} (listed TensorFlow-free)"
          for line, name in imported_names(source)
          if name == "tensorflow" or name.startswith(TENSORFLOW)]


def module_name(relative):
  """"core/train_loop.py" -> "harness.core.train_loop" (packages by folder)."""
  parts = pathlib.PurePosixPath(relative).with_suffix("").parts
  if parts[-1] == "__init__":
    parts = parts[:-1]
  return ".".join(("harness",) + parts)


def _imports_by_place(tree):
  """(import node, inside a function?) for every import in `tree`."""
  found = []

  def visit(node, in_function):
    for child in ast.iter_child_nodes(node):
      if isinstance(child, (ast.Import, ast.ImportFrom)):
        found.append((child, in_function))
      visit(child, in_function or isinstance(
          child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

  visit(tree, False)
  return found


def import_targets(module, source, known, lazy=False):
  """Modules of `known` that importing `module` imports at once.

  Only imports outside functions count (they run at import time), and with
  `lazy` those inside functions too (they run later, but still close a
  circle). `from a
  import b` names module `a.b` when that is a module, else `a`; importing
  `a.b.c` imports its packages `a.b` and `a` too, except the importer's
  own packages (already initialising).
  """
  own = set()
  parts = module.split(".")
  for i in range(1, len(parts) + 1):
    own.add(".".join(parts[:i]))
  targets = set()
  for node, in_function in _imports_by_place(ast.parse(source)):
    if in_function and not lazy:
      continue
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif node.level:
      raise ValueError(f"{module}:{node.lineno}: relative import; harness "
                       "uses absolute imports only")
    else:
      names = [f"{node.module}.{alias.name}"
               if f"{node.module}.{alias.name}" in known else node.module
               for alias in node.names]
    for name in names:
      pieces = name.split(".")
      for i in range(1, len(pieces) + 1):
        prefix = ".".join(pieces[:i])
        if prefix in known and prefix not in own:
          targets.add(prefix)
  return targets


def import_graph(sources, lazy=False):
  """{module: modules it imports at import time (with `lazy`, inside its
  functions too)}; `sources` maps harness-relative file paths to their
  text."""
  known = {module_name(relative) for relative in sources}
  return {module_name(relative): import_targets(module_name(relative), text,
                                                known, lazy)
          for relative, text in sources.items()}


def import_cycles(graph):
  """Each import cycle once, as "a -> b -> a" (shortest from its first
  module in sorted order)."""
  cycles = set()
  for start in sorted(graph):
    # Breadth-first back to `start`: the shortest cycle through it.
    parent = {start: None}
    queue = collections.deque([start])
    closing = None
    while queue and closing is None:
      node = queue.popleft()
      for nxt in sorted(graph[node]):
        if nxt == start:
          closing = node
          break
        if nxt not in parent:
          parent[nxt] = node
          queue.append(nxt)
    if closing is None:
      continue
    path = [closing]
    while parent[path[-1]] is not None:
      path.append(parent[path[-1]])
    path.reverse()
    smallest = path.index(min(path))
    path = path[smallest:] + path[:smallest]
    cycles.add(" -> ".join(path + [path[0]]))
  return sorted(cycles)


def tensorflow_reached(sources, package):
  """Imports of TensorFlow, at import time, anywhere that importing
  `package` (or one of its modules) loads; `sources` as `import_graph`'s."""
  graph = import_graph(sources)
  reached = {m for m in graph if m == package or m.startswith(package + ".")}
  todo = list(reached)
  while todo:
    for nxt in graph[todo.pop()] - reached:
      reached.add(nxt)
      todo.append(nxt)
  found = []
  for relative, source in sorted(sources.items()):
    if module_name(relative) not in reached:
      continue
    for node, in_function in _imports_by_place(ast.parse(source)):
      if in_function:
        continue
      names = ([alias.name for alias in node.names]
               if isinstance(node, ast.Import) else
               [f"{node.module}.{alias.name}" for alias in node.names])
      found += [f"{relative}:{node.lineno}: imports {name} (reached from "
                f"{package} at import time)" for name in names
                if name == "tensorflow" or name.startswith(TENSORFLOW)]
  return found


LAZY_MARK = re.compile(r"#\s*lazy:\s*\S")


def unmarked_lazy_imports(relative, source):
  """Imports inside a function whose line lacks `# lazy: <reason>`."""
  lines = textwrap.dedent(source).splitlines()
  return [f"{relative}:{node.lineno}: {lines[node.lineno - 1].strip()} "
          "(an import inside a function needs `# lazy: <reason>`, see "
          "docs/ARCHITECTURE.md; else move it to the module top)"
          for node, in_function in _imports_by_place(
              ast.parse(textwrap.dedent(source)))
          if in_function and not LAZY_MARK.search(lines[node.lineno - 1])]


def harness_sources():
  return {str(path.relative_to(HARNESS_DIR)): path.read_text()
          for path in sorted(HARNESS_DIR.rglob("*.py"))}


# (file under harness/, "module_alias._name"): why it reaches into another
# harness module's private name. New entries need a reason; better, a
# public name.
PRIVATE_REACH_ALLOWED = {
}


def private_reach(relative, source):
  """`module._name` where `module` is another harness module, and
  `from harness.x import _name`."""
  tree = ast.parse(textwrap.dedent(source))
  modules = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
        "harness") and node.module != "harness._tf":
      modules.update(a.asname or a.name for a in node.names
                     if a.name[:1].islower())
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
        "harness"):
      found += [(node.lineno, f"{relative}:{node.lineno}: from {node.module} "
                              f"import {alias.name}")
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith(
                    "__") and f"{node.module}.{alias.name}" not in (
                        "harness._tf", "harness._tf_private")]
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
    found += binary_package_imports(str(path.relative_to(HARNESS_DIR)),
                                    path.read_text())
  for relative in TF_FREE_MODULES:
    found += tensorflow_imports(relative,
                                (HARNESS_DIR / relative).read_text())
  for path in sorted(HARNESS_DIR.rglob("*.py")):
    found += private_reach(str(path.relative_to(HARNESS_DIR)),
                           path.read_text())
  return found


def _top_level_names(source):
  """The names a module defines itself (def, class, assignment)."""
  names = set()
  for node in ast.parse(source).body:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
      names.add(node.name)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
      targets = node.targets if isinstance(node, ast.Assign) else [node.target]
      names.update(n.id for target in targets for n in ast.walk(target)
                   if isinstance(n, ast.Name))
  return names


def door_hand_ons(sources):
  """A package door (`__init__.py`) takes each name from the module that
  defines it, not through another module that imported it."""
  found = []
  for relative, source in sorted(sources.items()):
    if not relative.endswith("__init__.py"):
      continue
    for node in ast.parse(source).body:
      if not (isinstance(node, ast.ImportFrom) and node.module and
              node.module.startswith("harness.")):
        continue
      base = "/".join(node.module.split(".")[1:])
      module = sources.get(base + ".py")
      if module is None:
        continue  # A package, or not harness's own module.
      defined = _top_level_names(module)
      found += [f"{relative}: {alias.name} from {node.module}, which does "
                "not define it (import it from the module that does)"
                for alias in node.names if alias.name not in defined and
                base + "/" + alias.name + ".py" not in sources]
  return found


# Issue 27: no module over MAX_MODULE_LINES, none excepted (issue 49: 380,
# so that a module is split by job before it is packed against the cap).
MAX_MODULE_LINES = 380


def long_modules(sources):
  """'path: N lines' for each module over the cap and not allowed."""
  return [f"{relative}: {source.count(chr(10))} lines (cap "
          f"{MAX_MODULE_LINES}; split it by job, see docs/ARCHITECTURE.md)"
          for relative, source in sorted(sources.items())
          if source.count("\n") > MAX_MODULE_LINES]


class LayeringTest(absltest.TestCase):

  maxDiff = None

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

  def test_importing_a_binary_package_from_outside_fails(self):
    source = "from harness.k8s import policy\n"
    self.assertLen(binary_package_imports("main.py", source), 1)
    self.assertLen(binary_package_imports("cli/job.py",
                                          "from harness import k8s\n"), 1)
    self.assertEqual(binary_package_imports("k8s/config.py", source), [])
    self.assertLen(layering_violations("k8s/pods.py",
                                       "from harness._tf import tf\n"), 1)

  def test_server_package_rules(self):
    # Nothing outside server/ imports it; distribute/ least of all (the
    # server uses distribute/task_servers, never the reverse).
    self.assertLen(binary_package_imports(
        "distribute/task_servers.py", "from harness import server\n"), 1)
    self.assertLen(layering_violations(
        "distribute/task_servers.py", "import harness.server.serve\n"), 1)
    self.assertEqual(binary_package_imports(
        "server/cli.py", "from harness.server import serve\n"), [])
    self.assertEqual(layering_violations(
        "server/serve.py", "from harness._tf import tf\n"
        "from harness.distribute import task_servers\n"
        "from harness.cli import binary_flags\n"
        "from harness.server import cli\n"), [])
    self.assertLen(layering_violations(
        "server/serve.py", "from harness.core import trainer\n"), 1)

  def test_core_importing_hooks_fails(self):
    # hooks.py builds on core/ (train_graph, evaluation): the reverse would
    # be the cycle core/train_loop <-> hooks had.
    self.assertLen(layering_violations(
        "core/train_loop.py", "from harness import hooks as hooks_lib\n"), 1)

  def test_core_importing_distribute_fails(self):
    self.assertLen(layering_violations(
        "core/x.py", "from harness.distribute import roles\n"), 1)

  def test_core_importing_run_config_fails(self):
    # The arrow back up that issue 40 removed: a field's default or check
    # comes from fields/, the RunConfig class never from core/.
    for source in ("from harness import run_config as run_config_lib\n",
                   "from harness.run_config import checks\n"):
      self.assertLen(layering_violations("core/train_graph.py", source), 1,
                     source)

  def test_fields_importing_tensorflow_or_above_fails(self):
    for source in ("from harness._tf import tf\n",
                   "from harness.guard import stall\n",
                   "from harness.run_config import checks\n",
                   "from harness.cli import job_config\n"):
      self.assertLen(layering_violations("fields/table.py", source), 1,
                     source)
    self.assertEqual(layering_violations(
        "fields/table.py", "from harness import errors\n"
        "from harness.cluster import listen\n"), [])

  def test_plan_importing_tensorflow_or_above_fails(self):
    for source in ("from harness._tf import tf\n",
                   "from harness.telemetry import trainer_status\n",
                   "from harness.guard import preemption\n",
                   "from harness.core import trainer\n",
                   "from harness.run_config import checks\n",
                   "from harness.cli import job_config\n"):
      self.assertLen(layering_violations("plan/task.py", source), 1, source)
    self.assertEqual(layering_violations(
        "plan/task.py", "from harness import errors\n"
        "from harness.state import paths\nfrom harness import fields\n"
        "from harness.cluster import jobs\n"), [])
    for below in ("cluster/jobs.py", "fields/table.py", "state/paths.py",
                  "_tf_private/keras.py"):
      self.assertLen(layering_violations(
          below, "from harness.plan import task\n"), 1, below)

  def test_cluster_importing_tensorflow_fails(self):
    for source in ("import tensorflow as tf\n",
                   "from harness._tf import tf\n",
                   "from harness.state import storage\n"):
      self.assertLen(layering_violations("cluster/listen.py", source), 1,
                     source)

  def test_cluster_importing_itself_and_errors_passes(self):
    self.assertEqual(layering_violations(
        "cluster/listen.py",
        "from harness import errors\nfrom harness.cluster import jobs\n"),
                     [])

  def test_library_importing_cli_fails(self):
    self.assertLen(layering_violations(
        "estimator.py", "from harness.cli import registry\n"), 1)
    self.assertLen(layering_violations(
        "export/writer.py", "import model_fns.mnist_cnn\n"), 1)

  def test_tensorflow_in_a_listed_tf_free_module_fails(self):
    self.assertLen(tensorflow_imports(
        "cli/binary_flags.py", "def f():\n  from harness._tf import tf\n"), 1)
    self.assertEqual(tensorflow_imports("cli/binary_flags.py", "import json\n"),
                     [])

  def test_reaching_into_another_modules_private_name_fails(self):
    source = ("from harness.distribute import roles\n"
              "from harness.cluster import tf_config as cluster_lib\n"
              "roles._label(config)\ncluster_lib._fail\n")
    self.assertEqual(private_reach("estimator.py", source), [
        "estimator.py:3: roles._label", "estimator.py:4: cluster_lib._fail"])
    # The rules' old allowance is gone: they use tf_config_checks' public
    # helpers now.
    self.assertLen(private_reach("cluster/tf_config_rules.py", source), 2)
    self.assertEqual(private_reach(
        "canned/dnn_linear_combined.py",
        "from harness.canned.dnn import _layer_summary\n"
        "from harness import _tf_private\nfrom harness._tf import tf\n"), [
            "canned/dnn_linear_combined.py:1: from harness.canned.dnn import "
            "_layer_summary"])

  def test_no_module_over_the_line_cap(self):
    self.assertEqual(long_modules(harness_sources()), [])

  def test_a_module_over_the_line_cap_fails(self):
    long_source = "x = 1\n" * (MAX_MODULE_LINES + 1)
    self.assertEqual(long_modules({"core/big.py": long_source,
                                   "core/at_cap.py": "x = 1\n" * 380,
                                   "small.py": "x = 1\n"}),
                     ["core/big.py: 381 lines (cap 380; split it by job, "
                      "see docs/ARCHITECTURE.md)"])

  def test_doors_take_names_from_their_definitions(self):
    self.assertEqual(door_hand_ons(harness_sources()), [])

  def test_a_door_taking_a_name_second_hand_fails(self):
    sources = {
        "export/__init__.py": "from harness.export.outputs import Out\n"
                              "from harness.export.kinds import Kind\n",
        "export/outputs.py": "from harness.export.kinds import Out\n",
        "export/kinds.py": "class Out:\n  pass\nKind = int\n",
    }
    self.assertEqual(door_hand_ons(sources), [
        "export/__init__.py: Out from harness.export.outputs, which does not "
        "define it (import it from the module that does)"])

  def test_no_import_cycle(self):
    # Lazy imports count: `# lazy:` defers an import, never excuses a circle.
    self.assertEqual(
        import_cycles(import_graph(harness_sources(), lazy=True)), [])

  def test_an_import_cycle_fails(self):
    sources = {
        "a.py": "from harness import b\n",
        "b.py": "import json\nfrom harness.core import c\n",
        "core/__init__.py": "",
        "core/c.py": "def f():\n  from harness import d\nfrom harness import a\n",
        "d.py": "from harness import b\n",
    }
    self.assertEqual(import_cycles(import_graph(sources)), [
        "harness.a -> harness.b -> harness.core.c -> harness.a"])
    # An import inside a function is an edge only with lazy=True (the
    # tree's check): d -> b alone is no cycle.
    sources["core/c.py"] = "def f():\n  from harness import a\n"
    self.assertEqual(import_cycles(import_graph(sources)), [])
    self.assertEqual(import_cycles(import_graph(sources, lazy=True)), [
        "harness.a -> harness.b -> harness.core.c -> harness.a"])

  def test_a_cycle_through_a_package_init_fails(self):
    sources = {
        "spec.py": "from harness.export import outputs\n",
        "export/__init__.py": "from harness.export.writer import w\n",
        "export/outputs.py": "import abc\n",
        "export/writer.py": "from harness import spec\n",
    }
    self.assertEqual(import_cycles(import_graph(sources)), [
        "harness.export -> harness.export.writer -> harness.spec -> "
        "harness.export"])

  def test_every_function_level_import_says_why(self):
    found = []
    for relative, source in harness_sources().items():
      found += unmarked_lazy_imports(relative, source)
    self.assertEqual(found, [])

  def test_an_unmarked_function_level_import_fails(self):
    source = ("import os\n"
              "def f():\n"
              "  import json  # pylint: disable=g-import-not-at-top\n"
              "  from harness._tf import tf  # lazy: TensorFlow-free path\n"
              "  class C:\n"
              "    def g(self):\n"
              "      from harness import spec  # lazy:\n")
    found = unmarked_lazy_imports("x.py", source)
    self.assertLen(found, 2)
    self.assertIn("x.py:3: import json", found[0])
    self.assertIn("x.py:7: from harness import spec", found[1])
    self.assertEqual(unmarked_lazy_imports("x.py", "import os\n"), [])

  def test_launch_reaches_no_tensorflow(self):
    self.assertEqual(tensorflow_reached(harness_sources(), "harness.launch"),
                     [])

  def test_k8s_reaches_no_tensorflow(self):
    self.assertEqual(tensorflow_reached(harness_sources(), "harness.k8s"), [])

  def test_launch_reaching_tensorflow_through_cli_fails(self):
    sources = {
        "launch/__init__.py": "from harness.launch import cli\n",
        "launch/cli.py": "from harness.cli import job\n",
        "cli/__init__.py": "",
        "cli/job.py": ("def f():\n  import tensorflow\n"
                       "from harness._tf import tf\n"),
    }
    self.assertEqual(tensorflow_reached(sources, "harness.launch"), [
        "cli/job.py:3: imports harness._tf.tf (reached from harness.launch "
        "at import time)"])

  def test_launch_importing_tensorflow_or_being_imported_fails(self):
    self.assertLen(layering_violations(
        "launch/cli.py", "from harness._tf import tf\n"), 1)
    self.assertEqual(layering_violations(
        "launch/cli.py", "from harness.cli import binary_flags\n"
        "from harness.launch import supervisor\n"), [])
    self.assertLen(layering_violations(
        "cli/job.py", "from harness.launch import ports\n"), 1)

  def test_binaries_may_wire_cli(self):
    self.assertEqual(layering_violations(
        "main.py", "from harness.cli import flags\n"), [])


if __name__ == "__main__":
  absltest.main()
