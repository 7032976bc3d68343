"""tf.estimator 2.15's canned estimators and heads, on harness.

    import harness
    est = harness.DNNClassifier(hidden_units=[32, 16],
                                feature_columns=[...], n_classes=10)

The v2 classes are `tf.estimator.*` (Keras optimizers); the `*V1` classes
are what `tf.compat.v1.estimator.*` names (v1 optimizers, reduction SUM).
Names load lazily, so `import harness.canned` costs nothing until used.
"""

import importlib

# The heads (tf.estimator.*), as harness.canned.head names them.
_HEADS = ("Head", "BinaryClassHead", "MultiClassHead", "MultiLabelHead",
          "RegressionHead", "PoissonRegressionHead", "LogisticRegressionHead",
          "MultiHead")

# Public name -> module that defines it.
_EXPORTS = {
    **{name: "harness.canned.dnn" for name in (
        "DNNClassifier", "DNNRegressor", "DNNEstimator",
        "DNNClassifierV1", "DNNRegressorV1", "DNNEstimatorV1")},
    **{name: "harness.canned.linear" for name in (
        "LinearClassifier", "LinearRegressor", "LinearEstimator",
        "LinearClassifierV1", "LinearRegressorV1", "LinearEstimatorV1")},
    **{name: "harness.canned.dnn_linear_combined" for name in (
        "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
        "DNNLinearCombinedEstimator", "DNNLinearCombinedClassifierV1",
        "DNNLinearCombinedRegressorV1", "DNNLinearCombinedEstimatorV1")},
    **{name: "harness.canned.baseline" for name in (
        "BaselineClassifier", "BaselineRegressor", "BaselineEstimator",
        "BaselineClassifierV1", "BaselineRegressorV1",
        "BaselineEstimatorV1")},
    **{name: "harness.canned.head" for name in _HEADS},
}

# The v2 estimators and heads (tf.estimator.*), grouped.
__all__ = [
    # Estimators.
    "DNNClassifier",
    "DNNRegressor",
    "DNNEstimator",
    "LinearClassifier",
    "LinearRegressor",
    "LinearEstimator",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedRegressor",
    "DNNLinearCombinedEstimator",
    "BaselineClassifier",
    "BaselineRegressor",
    "BaselineEstimator",
    # Heads.
    *_HEADS,
]

# tf.compat.v1.estimator name -> harness.canned name, where they differ.
V1_NAMES = {name[:-2]: name for name in _EXPORTS if name.endswith("V1")}


# Submodules, also reachable as attributes before their first import.
_SUBMODULES = frozenset([
    "baseline", "default_heads", "dnn", "dnn_linear_combined",
    "feature_columns", "head", "linear", "logit_fns", "optimizers",
    "rnn", "train_ops",
])


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f"harness.canned.{name}")
  if name in _EXPORTS:
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
  raise AttributeError(f"module 'harness.canned' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
