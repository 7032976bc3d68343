"""harness: the tf.estimator API on current TensorFlow.

    import harness

    est = harness.Estimator(model_fn, model_dir="/tmp/model")
    harness.train_and_evaluate(
        est, harness.TrainSpec(train_input_fn, max_steps=1000),
        harness.EvalSpec(eval_input_fn, steps=10))

Legacy code that says `tf.estimator.X` runs unchanged after
`import harness.compat` (or under `python -m harness.run script.py`).
"""

import importlib as _importlib
import os as _os

# tf.compat.v1.layers and Keras 2 need this before TensorFlow's first
# import. Set here (cheap) so that `import harness; import tensorflow` works;
# the names below load lazily, so `python -m harness.launch` and the
# TF_CONFIG parser start without importing TensorFlow at all.
_os.environ["TF_USE_LEGACY_KERAS"] = "1"

# pylint: disable=g-import-not-at-top,wrong-import-position
from harness import canned as _canned  # Names only: loads no TensorFlow.
from harness import errors as _errors  # No TensorFlow either.
# pylint: enable=g-import-not-at-top,wrong-import-position

# Public name -> module that defines it (loaded on first access).
_EXPORTS = {
    "Estimator": "harness.estimator",
    "DistributeConfig": "harness.run_config",
    "RunConfig": "harness.run_config",
    "EstimatorSpec": "harness.spec",
    "ModeKeys": "harness.spec",
    "EvalSpec": "harness.training",
    "TrainSpec": "harness.training",
    "train_and_evaluate": "harness.training",
    "BestExporter": "harness.export.exporter",
    "Exporter": "harness.export.exporter",
    "FinalExporter": "harness.export.exporter",
    "LatestExporter": "harness.export.exporter",
    "add_metrics": "harness.extension",
    "classifier_parse_example_spec": "harness.parsing",
    "regressor_parse_example_spec": "harness.parsing",
    "VocabInfo": "harness.warm_start",
    "WarmStartSettings": "harness.warm_start",
    "CheckpointSaverHook": "harness.hooks",
    "CheckpointSaverListener": "harness.hooks",
    "FeedFnHook": "harness.hooks",
    "FinalOpsHook": "harness.hooks",
    "GlobalStepWaiterHook": "harness.hooks",
    "LoggingTensorHook": "harness.hooks",
    "NanLossDuringTrainingError": "harness.hooks",
    "NanTensorHook": "harness.hooks",
    "ProfilerHook": "harness.hooks",
    "SecondOrStepTimer": "harness.hooks",
    "SessionRunArgs": "harness.hooks",
    "SessionRunContext": "harness.hooks",
    "SessionRunHook": "harness.hooks",
    "SessionRunValues": "harness.hooks",
    "StepCounterHook": "harness.hooks",
    "StopAtStepHook": "harness.hooks",
    "SummarySaverHook": "harness.hooks",
    "make_early_stopping_hook": "harness.early_stopping",
    "read_eval_metrics": "harness.early_stopping",
    "stop_if_higher_hook": "harness.early_stopping",
    "stop_if_lower_hook": "harness.early_stopping",
    "stop_if_no_decrease_hook": "harness.early_stopping",
    "stop_if_no_increase_hook": "harness.early_stopping",
    # Canned estimators and heads (tf.estimator 2.15's v2 classes).
    **{name: "harness.canned" for name in _canned.__all__},
}
_SUBMODULES = frozenset([
    "canned", "errors", "export", "experimental", "inputs", "tpu"])

__version__ = "0.1.0"

__all__ = [
    # Namespaces.
    "errors",
    "export",
    "experimental",
    "inputs",
    "tpu",
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
    # Canned estimators, then heads.
    *_canned.__all__,
]

# Canned estimators of tf.estimator 2.15 that harness does not provide,
# with the alternative to name.
_NOT_PROVIDED = {
    **dict.fromkeys(
        ("BoostedTreesClassifier", "BoostedTreesEstimator",
         "BoostedTreesRegressor"),
        "its C++ tree kernels are gone from TensorFlow 2.21. Fix: use "
        "TensorFlow Decision Forests (tfdf.keras.GradientBoostedTreesModel) "
        "or keep that job on tf.estimator 2.15"),
}


def __getattr__(name):
  if name in _SUBMODULES:
    return _importlib.import_module(f"harness.{name}")
  if name in _EXPORTS:
    value = getattr(_importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
  if name in _NOT_PROVIDED:
    raise _errors.NotSupportedError(
        f"tf.estimator.{name} is not provided by harness: "
        f"{_NOT_PROVIDED[name]}.")
  raise AttributeError(f"module 'harness' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(__all__))
