"""Pins the public API: a change to harness.__all__ shows in this diff."""

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

# The import rules live in tests/test_layering.py and
# tests/test_tf_private_guard.py.


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


if __name__ == "__main__":
  absltest.main()
