"""harness: the tf.estimator API on current TensorFlow.

    import harness

    est = harness.Estimator(model_fn, model_dir="/tmp/model")
    harness.train_and_evaluate(
        est, harness.TrainSpec(train_input_fn, max_steps=1000),
        harness.EvalSpec(eval_input_fn, steps=10))

Legacy code that says `tf.estimator.X` runs unchanged after
`import harness.compat` (or under `python -m harness.run script.py`).
"""

# Importing harness._tf first sets TF_USE_LEGACY_KERAS=1 and quiets
# TensorFlow before anything else touches it.
from harness import _tf  # pylint: disable=unused-import

from harness import errors
from harness import export
from harness import experimental
from harness import inputs
# The core.
from harness.estimator import Estimator
from harness.run_config import DistributeConfig
from harness.run_config import RunConfig
from harness.spec import EstimatorSpec
from harness.spec import ModeKeys
from harness.training import EvalSpec
from harness.training import TrainSpec
from harness.training import train_and_evaluate
# Exporters.
from harness.exporter import BestExporter
from harness.exporter import Exporter
from harness.exporter import FinalExporter
from harness.exporter import LatestExporter
# Warm start, metrics, parsing specs.
from harness.extension import add_metrics
from harness.parsing import classifier_parse_example_spec
from harness.parsing import regressor_parse_example_spec
from harness.warm_start import VocabInfo
from harness.warm_start import WarmStartSettings
# Hooks, as tf.estimator exported them.
from harness.hooks import CheckpointSaverHook
from harness.hooks import CheckpointSaverListener
from harness.hooks import FeedFnHook
from harness.hooks import FinalOpsHook
from harness.hooks import GlobalStepWaiterHook
from harness.hooks import LoggingTensorHook
from harness.hooks import NanLossDuringTrainingError
from harness.hooks import NanTensorHook
from harness.hooks import ProfilerHook
from harness.hooks import SecondOrStepTimer
from harness.hooks import SessionRunArgs
from harness.hooks import SessionRunContext
from harness.hooks import SessionRunHook
from harness.hooks import SessionRunValues
from harness.hooks import StepCounterHook
from harness.hooks import StopAtStepHook
from harness.hooks import SummarySaverHook
# Early stopping (also in harness.experimental, as in tf.estimator).
from harness.early_stopping import make_early_stopping_hook
from harness.early_stopping import read_eval_metrics
from harness.early_stopping import stop_if_higher_hook
from harness.early_stopping import stop_if_lower_hook
from harness.early_stopping import stop_if_no_decrease_hook
from harness.early_stopping import stop_if_no_increase_hook

__version__ = "0.1.0"

__all__ = [
    # Namespaces.
    "errors",
    "export",
    "experimental",
    "inputs",
    # Core.
    "Estimator",
    "EstimatorSpec",
    "ModeKeys",
    "RunConfig",
    "DistributeConfig",
    "TrainSpec",
    "EvalSpec",
    "train_and_evaluate",
    # Exporters.
    "Exporter",
    "LatestExporter",
    "BestExporter",
    "FinalExporter",
    # Warm start, metrics, parsing.
    "WarmStartSettings",
    "VocabInfo",
    "add_metrics",
    "classifier_parse_example_spec",
    "regressor_parse_example_spec",
    # Hooks.
    "SessionRunHook",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunValues",
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "StepCounterHook",
    "LoggingTensorHook",
    "StopAtStepHook",
    "NanTensorHook",
    "NanLossDuringTrainingError",
    "SummarySaverHook",
    "GlobalStepWaiterHook",
    "FinalOpsHook",
    "FeedFnHook",
    "ProfilerHook",
    "SecondOrStepTimer",
    # Early stopping.
    "make_early_stopping_hook",
    "stop_if_higher_hook",
    "stop_if_lower_hook",
    "stop_if_no_increase_hook",
    "stop_if_no_decrease_hook",
    "read_eval_metrics",
]

# Canned estimators of tf.estimator 2.15 that harness does not provide.
_CANNED = frozenset([
    "BaselineClassifier", "BaselineEstimator", "BaselineRegressor",
    "BoostedTreesClassifier", "BoostedTreesEstimator",
    "BoostedTreesRegressor", "DNNClassifier", "DNNEstimator",
    "DNNLinearCombinedClassifier", "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor", "DNNRegressor", "LinearClassifier",
    "LinearEstimator", "LinearRegressor", "BinaryClassHead", "Head",
    "LogisticRegressionHead", "MultiClassHead", "MultiHead",
    "MultiLabelHead", "PoissonRegressionHead", "RegressionHead",
])


def __getattr__(name):
  if name in _CANNED:
    raise errors.NotSupportedError(
        f"tf.estimator.{name} (a canned estimator or head) is not provided "
        "by harness. Fix: express the model as a model_fn (harness runs any "
        "model_fn, and checkpoints written by the canned estimator restore "
        "by variable name), or keep that job on tf.estimator 2.15.")
  raise AttributeError(f"module 'harness' has no attribute {name!r}")
