"""Pins the import paths users, docs and tools rely on (issue 13, layout).

The subpackages (cluster/, state/, core/, distribute/, cli/) moved modules
out of the flat folder; what users write must not move with them:
`harness.X` names, the top-level API modules, `python -m harness.<binary>`,
setup.py's console scripts and compat.py's `tensorflow_estimator.*` targets.
"""

import ast
import importlib
import pathlib
import re
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized

import harness
from tests import conftest

ROOT = pathlib.Path(harness.__file__).parent.parent

# Modules users import by path (docs, 2.15's tf.estimator layout, tools).
TOP_LEVEL_MODULES = (
    "harness.errors", "harness.estimator", "harness.run_config",
    "harness.spec", "harness.training", "harness.hooks",
    "harness.early_stopping", "harness.warm_start", "harness.extension",
    "harness.experimental", "harness.inputs", "harness.parsing",
    "harness.keras_lib", "harness.compat", "harness.run", "harness.main",
    "harness.launch", "harness.server", "harness.k8s", "harness.export",
    "harness.export.writer", "harness.canned", "harness.tpu",
)
# The subpackage tree of docs/ARCHITECTURE.md: a move shows in this diff.
SUBPACKAGES = {
    "cluster": {"env_knobs", "jobs", "listen", "netns", "peer_wait", "ports",
                "strategy_kind", "task_facts", "tf_config",
                "tf_config_checks", "tf_config_rules"},
    "state": {"checkpoints", "lease", "paths", "retention", "run_state",
              "storage"},
    "core": {"auto_loop", "evaluation", "input_pipeline", "loop_spec",
             "peers", "preemption", "stall", "step_loop", "step_rate",
             "strategy_classifier", "guard_hook", "stop_signal",
             "train_loop", "watchdog"},
    "distribute": {"evaluator", "graph_strategy", "remote", "remote_servers",
                   "roles", "server_claim", "strategies", "task_devices",
                   "task_servers"},
    "cli": {"bad_flags", "diagnose", "flags", "job", "k8s_policy",
            "legacy_imports", "registry", "results_text",
            "tensorboard_server"},
}
# Names the docs show by their module path.
DOCUMENTED_NAMES = (
    "harness.cluster.tf_config.parse_tf_config",
    "harness.cli.flags.parse",
    "harness.core.preemption.notify_preemption",
    "harness.state.checkpoints.latest_usable_checkpoint",
    "harness.launch.build_tf_configs",
)
# `python -m` binaries and what `--help` exits with (absl's app exits 1).
BINARIES = {"main": 0, "launch": 1, "server": 1, "k8s": 0, "run": 0}


class ImportPathsTest(parameterized.TestCase):

  @parameterized.parameters(*TOP_LEVEL_MODULES)
  def test_top_level_module_imports(self, name):
    self.assertEqual(importlib.import_module(name).__name__, name)

  def test_subpackage_tree_is_the_documented_one(self):
    for package, modules in SUBPACKAGES.items():
      folder = ROOT / "harness" / package
      self.assertTrue((folder / "__init__.py").exists(),
                      f"harness/{package}/ lacks __init__.py (setup.py's "
                      "find_packages would leave it out)")
      found = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
      self.assertEqual(found, modules, f"harness/{package}/")
      for module in modules:
        importlib.import_module(f"harness.{package}.{module}")

  def test_documented_names_resolve(self):
    for dotted in DOCUMENTED_NAMES:
      module, _, name = dotted.rpartition(".")
      self.assertTrue(callable(getattr(importlib.import_module(module), name)),
                      dotted)

  def test_console_scripts_resolve(self):
    setup = (ROOT / "setup.py").read_text()
    scripts = re.findall(r'"harness-\w+=([\w.]+):(\w+)"', setup)
    self.assertLen(scripts, 3)
    for module, function in scripts:
      self.assertTrue(callable(getattr(importlib.import_module(module),
                                       function)), f"{module}:{function}")

  def test_compat_alias_targets_import(self):
    # Every "harness.x.y" or "harness.x:name" string in compat.py.
    tree = ast.parse((ROOT / "harness" / "compat.py").read_text())
    targets = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)
               and re.fullmatch(r"harness(\.\w+)+(:\w+)?", node.value)}
    self.assertGreater(len(targets), 5)
    for target in sorted(targets):
      module, _, name = target.partition(":")
      loaded = importlib.import_module(module)
      if name:
        self.assertTrue(hasattr(loaded, name), target)

  def test_tensorflow_estimator_aliases_import(self):
    import harness.compat  # pylint: disable=g-import-not-at-top,unused-import
    for name in ("tensorflow_estimator.python.estimator.exporter",
                 "tensorflow_estimator.python.estimator.estimator",
                 "tensorflow_estimator.python.estimator.run_config",
                 "tensorflow_estimator.python.estimator.training"):
      self.assertIsNotNone(importlib.import_module(name), name)

  @parameterized.parameters(*sorted(SUBPACKAGES["cluster"]))
  def test_cluster_module_imports_first_in_a_fresh_process(self, module):
    # Import order inside a fresh process is where cycles break (issue 13:
    # tf_config_rules imported first used to fail); cluster/ is TF-free,
    # so each check costs a fraction of a second.
    proc = subprocess.run(
        [sys.executable, "-c", f"import harness.cluster.{module}"],
        capture_output=True, text=True, timeout=120,
        env=conftest.child_env(), cwd=ROOT, check=False)
    self.assertEqual(proc.returncode, 0, proc.stderr[-1500:])

  @parameterized.parameters(*sorted(BINARIES.items()))
  def test_python_m_binary_help(self, binary, exit_code):
    proc = subprocess.run(
        [sys.executable, "-m", f"harness.{binary}", "--help"],
        capture_output=True, text=True, timeout=300,
        env=conftest.child_env(), cwd=ROOT, check=False)
    self.assertEqual(proc.returncode, exit_code,
                     f"python -m harness.{binary} --help: "
                     f"{proc.stdout[-800:]}{proc.stderr[-800:]}")
    self.assertIn(f"harness.{binary}", proc.stdout + proc.stderr)


if __name__ == "__main__":
  absltest.main()
