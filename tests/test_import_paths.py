"""Pins the import paths users, docs and tools rely on (issue 13, layout).

The subpackages (cluster/, state/, core/, distribute/, cli/, launch/) moved
modules out of the flat folder; what users write must not move with them:
`harness.X` names, the top-level API modules, `python -m harness.<binary>`,
setup.py's console scripts and compat/'s `tensorflow_estimator.*` targets.
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
# Every folder of harness/ with an __init__.py; their modules are read
# from the folders (a module split off needs no edit here, only its line in
# docs/ARCHITECTURE.md's module list, which the test below checks).
SUBPACKAGES = tuple(sorted(
    p.parent.name for p in (ROOT / "harness").glob("*/__init__.py")))


def _modules(package):
  """Module names in harness/<package>/ (no __init__, no __main__)."""
  return sorted(p.stem for p in (ROOT / "harness" / package).glob("*.py")
                if p.stem not in ("__init__", "__main__"))
# Names the docs show by their module path.
DOCUMENTED_NAMES = (
    "harness.cluster.tf_config.parse_tf_config",
    "harness.cli.flags.parse",
    "harness.guard.notify_preemption",
    "harness.guard.stop_signal.notify_preemption",
    "harness.state.checkpoints.latest_usable_checkpoint",
    "harness.launch.build_tf_configs",
)
# Public names of modules split in two (issue 13, part 6): each stays at its
# old path, the same object as where it now lives (None: it did not move).
SPLIT_MODULE_NAMES = {
    "harness.k8s": {
        **dict.fromkeys(("K8sConfig", "training_tasks", "CLUSTER_ENV",
                         "TASK_TYPE_ENV", "TASK_INDEX_ENV", "JOB_INDEX_ENV",
                         "CONTAINER", "MODEL_MOUNT",
                         "ENTRYPOINT", "CONFIG_ERROR_EXIT_CODE"),
                        "harness.k8s.config"),
        "SCRATCH_MOUNT": "harness.k8s.policy",
        **dict.fromkeys(("render", "to_yaml"), "harness.k8s.manifests"),
        "tf_config_from_environ": "harness.k8s.entrypoint",
        **dict.fromkeys(("parse_args", "main"), "harness.k8s.cli"),
    },
    "harness.launch": {
        "TIMEOUT_EXIT_CODE": "harness.launch.supervisor",
        **dict.fromkeys(("launch", "build_tf_configs", "task_names", "run"),
                        "harness.launch.cli"),
    },
    # Issue 27: server.py became a package; its names stay at the door.
    "harness.server": {
        "start_server": "harness.server.serve",
        "run": "harness.server.cli",
    },
    "harness.export.outputs": {
        **dict.fromkeys(("ExportOutput", "ClassificationOutput",
                         "RegressionOutput", "PredictOutput", "TrainOutput",
                         "EvalOutput"), "harness.export.output_classes"),
        **dict.fromkeys(("get_export_outputs", "export_outputs_for_mode",
                         "build_all_signature_defs", "DEFAULT_SERVING_KEY",
                         "SINGLE_RECEIVER_DEFAULT_NAME")),
    },
    # Issue 27: run_config.py became a package; its names stay at the door.
    "harness.run_config": {
        "RunConfig": "harness.run_config.config",
        **dict.fromkeys(("DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS",
                         "DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS",
                         "STEPS_PER_LOOP_AUTO"), "harness.fields.table"),
        **dict.fromkeys(("DistributeConfig", "TaskType",
                         "get_default_session_config",
                         "check_supported_config", "INDEPENDENT_WORKER",
                         "STANDALONE_CLIENT"),
                        "harness.run_config.distribution"),
        "resolve_model_dir": "harness.run_config.model_dir",
    },
    # Issue 49: the specs moved to spec/; 2.15's path keeps them.
    "harness.training": {
        **dict.fromkeys(("TrainSpec", "EvalSpec"), "harness.spec.run_specs"),
        "train_and_evaluate": None,
    },
    "harness.compat": dict.fromkeys((
        "install", "check_keras_2", "register_module",
        "ModuleNotProvidedError", "V1_NAMESPACE", "V2_NAMESPACE")),
}
# `python -m` binaries and what `--help` exits with (launch and server used
# absl's help, which exits 1; issue 24 made every one 0).
BINARIES = {"main": 0, "launch": 0, "server": 0, "k8s": 0, "run": 0}


class ImportPathsTest(parameterized.TestCase):

  @parameterized.parameters(*TOP_LEVEL_MODULES)
  def test_top_level_module_imports(self, name):
    self.assertEqual(importlib.import_module(name).__name__, name)

  def test_subpackage_modules_import_and_are_documented(self):
    architecture = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    for package in SUBPACKAGES:
      folder = ROOT / "harness" / package
      self.assertTrue((folder / "__init__.py").exists(),
                      f"harness/{package}/ lacks __init__.py (setup.py's "
                      "find_packages would leave it out)")
      self.assertNotEmpty(_modules(package), f"harness/{package}/")
      for module in _modules(package):
        with self.subTest(module=f"{package}/{module}.py"):
          importlib.import_module(f"harness.{package}.{module}")

  def test_architecture_has_one_line_per_module_and_no_other(self):
    # docs/ARCHITECTURE.md's module list: "- `folder/module.py` — its job",
    # for every file under harness/ (doors too), and for nothing else.
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    listed = re.findall(r"^- `([\w/]+\.py)` — \S", text, re.MULTILINE)
    files = sorted(str(p.relative_to(ROOT / "harness"))
                   for p in (ROOT / "harness").rglob("*.py"))
    self.assertEqual(sorted(listed), files)

  def test_documented_names_resolve(self):
    for dotted in DOCUMENTED_NAMES:
      module, _, name = dotted.rpartition(".")
      self.assertTrue(callable(getattr(importlib.import_module(module), name)),
                      dotted)

  @parameterized.parameters(*sorted(SPLIT_MODULE_NAMES))
  def test_split_module_keeps_its_names(self, module_name):
    module = importlib.import_module(module_name)
    for name, home in SPLIT_MODULE_NAMES[module_name].items():
      self.assertIn(name, dir(module), f"{module_name}.{name}")
      if home is not None:
        self.assertIs(getattr(module, name),
                      getattr(importlib.import_module(home), name),
                      f"{module_name}.{name} is not {home}.{name}")

  def test_console_scripts_resolve(self):
    setup = (ROOT / "setup.py").read_text()
    scripts = re.findall(r'"harness-\w+=([\w.]+):(\w+)"', setup)
    self.assertLen(scripts, 3)
    for module, function in scripts:
      self.assertTrue(callable(getattr(importlib.import_module(module),
                                       function)), f"{module}:{function}")

  def test_compat_alias_targets_import(self):
    # Every "harness.x.y" or "harness.x:name" string in compat/'s installer
    # and its alias table.
    targets = set()
    for module in ("compat/installer.py", "compat/aliases.py"):
      tree = ast.parse((ROOT / "harness" / module).read_text())
      targets |= {
          node.value for node in ast.walk(tree)
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

  @parameterized.parameters(*_modules("cluster"))
  def test_cluster_module_imports_first_in_a_fresh_process(self, module):
    # Import order inside a fresh process is where cycles break (issue 13:
    # tf_config_rules imported first used to fail); cluster/ is TF-free,
    # so each check costs a fraction of a second.
    proc = subprocess.run(
        [sys.executable, "-c", f"import harness.cluster.{module}"],
        capture_output=True, text=True, timeout=120,
        env=conftest.child_env(), cwd=ROOT, check=False)
    self.assertEqual(proc.returncode, 0, proc.stderr[-1500:])

  @parameterized.parameters("", *(f".{m}" for m in _modules("launch")))
  def test_launch_module_imports_first_without_tensorflow(self, module):
    # `python -m harness.launch` forks its tasks before TensorFlow loads: its
    # door and each of its modules, imported first, load no TensorFlow.
    proc = subprocess.run(
        [sys.executable, "-c",
         f"import sys, harness.launch{module}; print(sorted(m for m in "
         "sys.modules if m.split('.')[0] in ('tensorflow', 'keras', "
         "'tf_keras')))"],
        capture_output=True, text=True, timeout=120,
        env=conftest.child_env(), cwd=ROOT, check=False)
    self.assertEqual((proc.returncode, proc.stdout), (0, "[]\n"),
                     proc.stderr[-1500:])

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
