"""Pins the public API: a change to harness.__all__ shows in this diff."""

import ast
import pathlib

from absl.testing import absltest

import harness

EXPECTED_ALL = [
    "errors", "export", "experimental", "inputs", "tpu",
    "Estimator", "EstimatorSpec", "ModeKeys", "RunConfig", "DistributeConfig",
    "TrainSpec", "EvalSpec", "train_and_evaluate",
    "Exporter", "LatestExporter", "BestExporter", "FinalExporter",
    "WarmStartSettings", "VocabInfo", "add_metrics",
    "classifier_parse_example_spec", "regressor_parse_example_spec",
    "SessionRunHook", "SessionRunArgs", "SessionRunContext",
    "SessionRunValues", "CheckpointSaverHook", "CheckpointSaverListener",
    "StepCounterHook", "LoggingTensorHook", "StopAtStepHook", "NanTensorHook",
    "NanLossDuringTrainingError", "SummarySaverHook", "GlobalStepWaiterHook",
    "FinalOpsHook", "FeedFnHook", "ProfilerHook", "SecondOrStepTimer",
    "make_early_stopping_hook", "stop_if_higher_hook", "stop_if_lower_hook",
    "stop_if_no_increase_hook", "stop_if_no_decrease_hook",
    "read_eval_metrics",
    "DNNClassifier", "DNNRegressor", "DNNEstimator", "LinearClassifier",
    "LinearRegressor", "LinearEstimator", "DNNLinearCombinedClassifier",
    "DNNLinearCombinedRegressor", "DNNLinearCombinedEstimator",
    "BaselineClassifier", "BaselineRegressor", "BaselineEstimator",
    "Head", "BinaryClassHead", "MultiClassHead", "MultiLabelHead",
    "RegressionHead", "PoissonRegressionHead", "LogisticRegressionHead",
    "MultiHead",
]

HARNESS_DIR = pathlib.Path(harness.__file__).parent
# Edges may import the core; the core never imports edges or examples.
# (Step 1 of issue 13 keeps this module-level rule; tests/test_layering.py
# holds the folder rules.)
EDGE_MODULES = {"main", "launch", "k8s", "server", "run", "compat",
                "keras_lib"}
CORE_MUST_NOT_IMPORT = ("model_fns", "input_fns", "harness.cli") + tuple(
    f"harness.{m}" for m in EDGE_MODULES)
NO_TF_MODULES = {"cluster/tf_config.py", "errors.py", "launch.py",
                 "state/paths.py", "cluster/ports.py", "cli/bad_flags.py",
                 "cluster/listen.py", "cluster/netns.py",
                 "cli/k8s_policy.py", "cli/tensorboard_server.py",
                 "core/stall.py", "cluster/peer_wait.py",
                 "cli/legacy_imports.py"}


def _imports(path):
  tree = ast.parse(path.read_text())
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name
    elif isinstance(node, ast.ImportFrom) and node.module:
      yield node.module
      for alias in node.names:
        yield f"{node.module}.{alias.name}"


class PublicApiTest(absltest.TestCase):

  def test_all_is_pinned(self):
    self.assertEqual(harness.__all__, EXPECTED_ALL)

  def test_every_public_name_resolves(self):
    for name in harness.__all__:
      self.assertIsNotNone(getattr(harness, name), name)

  def test_boosted_trees_say_not_supported_naming_the_alternative(self):
    with self.assertRaisesRegex(harness.errors.NotSupportedError,
                                "BoostedTreesRegressor.*Decision Forests"):
      harness.BoostedTreesRegressor  # pylint: disable=pointless-statement

  def test_core_does_not_import_edges_or_examples(self):
    for path in HARNESS_DIR.rglob("*.py"):
      if (path.stem in EDGE_MODULES or path.name == "__init__.py"
          or path.parent.name == "cli"):
        continue
      for name in _imports(path):
        self.assertFalse(
            any(name == m or name.startswith(m + ".")
                for m in CORE_MUST_NOT_IMPORT),
            f"{path.relative_to(HARNESS_DIR)} imports edge/example {name}")

  def test_config_modules_do_not_import_tensorflow(self):
    for filename in NO_TF_MODULES:
      path = HARNESS_DIR / filename
      self.assertTrue(path.exists(), f"{filename}: no such module")
      for name in _imports(path):
        self.assertFalse(name.startswith(("tensorflow", "harness._tf")),
                         f"{filename} imports {name}")

  def test_private_tensorflow_imports_live_in_one_module(self):
    offenders = set()
    for path in HARNESS_DIR.rglob("*.py"):
      for name in _imports(path):
        if name.startswith("tensorflow.python"):
          offenders.add(path.name)
    self.assertLessEqual(offenders, {"_tf_private.py"})


if __name__ == "__main__":
  absltest.main()
