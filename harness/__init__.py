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

# The public names, each under the module that defines it (loaded on first
# access); `__all__` lists them in this order after the namespaces.
_BY_MODULE = {
    "harness.estimator": ("Estimator",),
    "harness.spec": ("EstimatorSpec", "ModeKeys"),
    "harness.run_config": ("RunConfig", "DistributeConfig"),
    "harness.training": ("TrainSpec", "EvalSpec", "train_and_evaluate"),
    "harness.export.exporter": ("Exporter", "LatestExporter", "BestExporter",
                                "FinalExporter"),
    "harness.warm_start": ("WarmStartSettings", "VocabInfo"),
    "harness.extension": ("add_metrics",),
    "harness.parsing": ("classifier_parse_example_spec",
                        "regressor_parse_example_spec"),
    "harness.hooks": (
        "SessionRunHook", "SessionRunArgs", "SessionRunContext",
        "SessionRunValues", "CheckpointSaverHook", "CheckpointSaverListener",
        "StepCounterHook", "LoggingTensorHook", "StopAtStepHook",
        "NanTensorHook", "NanLossDuringTrainingError", "SummarySaverHook",
        "GlobalStepWaiterHook", "FinalOpsHook", "FeedFnHook", "ProfilerHook",
        "SecondOrStepTimer"),
    "harness.early_stopping": (
        "make_early_stopping_hook", "stop_if_higher_hook", "stop_if_lower_hook",
        "stop_if_no_increase_hook", "stop_if_no_decrease_hook",
        "read_eval_metrics"),
    # Canned estimators, then heads (tf.estimator 2.15's v2 classes).
    "harness.canned": tuple(_canned.__all__),
}
_EXPORTS = {name: module for module, names in _BY_MODULE.items()
            for name in names}
# Namespaces (`canned` is one too, its names being listed themselves).
_NAMESPACES = ("errors", "export", "experimental", "inputs", "tpu")
_SUBMODULES = frozenset(_NAMESPACES + ("canned",))

__version__ = "0.1.0"

__all__ = [*_NAMESPACES, *_EXPORTS]

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
