"""The alias table of `harness.compat`: 2.15 module paths -> harness objects.

    compat_aliases.LAYOUT["run_config"]
    # ({"RunConfig": "harness.run_config:RunConfig", ...},
    #  ("harness.run_config",))

`LAYOUT` maps each module path of tensorflow_estimator 2.15 under
`tensorflow_estimator.python.estimator` to its explicit names
(`{name: "harness.module:attr"}`) and the harness modules whose public names
it forwards; `NAMESPACE_PARTS` does the same for the `tf.estimator` API
namespaces, `V1_CANNED` for the v1 canned classes of
`tf.compat.v1.estimator`. `AliasModule` is the module type that forwards
each attribute access through such an entry, and raises
`NotSupportedError` (with the `*_WHY` reason) for a name harness lacks.
`harness.compat` installs these modules; nothing here touches
`sys.modules` or TensorFlow.
"""

import importlib
import importlib.machinery
import types

from harness import errors

__all__ = ["AliasModule", "LAYOUT", "NAMESPACE_PARTS", "V1_CANNED",
           "V1_HEAD_NAMES", "WHY_BY_PACKAGE", "MARKER", "FIX", "CANNED_WHY",
           "TPU_WHY"]

MARKER = "_harness_alias"

FIX = ("Fix: use the tf.estimator name harness provides (see "
       "`dir(harness)`), express the model as a model_fn, or keep that job "
       "on tf.estimator 2.15.")
CANNED_WHY = ("harness provides the canned modules dnn, linear, "
              "dnn_linear_combined, baseline, rnn, optimizers, metric_keys, "
              "prediction_keys, head (the v1 heads) and head.* (the v2 "
              "heads), not this one (BoostedTrees, KMeans, TimeSeries and "
              "the sequential heads are not provided). Fix: use those "
              "classes, express the model as a model_fn, or keep that "
              "job on tf.estimator 2.15.")
TPU_WHY = ("harness provides TPUEstimator for CPU/GPU (use_tpu=False) "
           "through the tpu, tpu.tpu_estimator, tpu.tpu_config and tpu.util "
           "modules only. Fix: import TPUEstimator, TPUEstimatorSpec, RunConfig, "
           "TPUConfig from tensorflow_estimator.python.estimator.tpu."
           "tpu_estimator / tpu_config, or keep that job on tf.estimator "
           "2.15.")


class AliasModule(types.ModuleType):
  """A module whose public names forward, on each access, to harness.

  Lookup order: real attributes (child alias modules), `names` (explicit
  `{name: "module:attr"}`), `unsupported` (`{name: why}`), then the public
  names (`__all__`, or the module's own `__getattr__`) of each module in
  `sources`. Anything else public raises `NotSupportedError`.
  """

  def __init__(self, name, display, *, names=None, sources=(),
               unsupported=None, why=None, is_package=False):
    super().__init__(name, f"Alias of `{display}`, forwarding to harness.")
    state = self.__dict__
    state[MARKER] = True
    state["_harness_display"] = display
    state["_harness_names"] = dict(names or {})
    state["_harness_sources"] = tuple(sources)
    state["_harness_unsupported"] = dict(unsupported or {})
    state["_harness_why"] = why
    state["__spec__"] = importlib.machinery.ModuleSpec(
        name, None, is_package=is_package)
    if is_package:
      state["__path__"] = []

  def __getattr__(self, name):
    if name.startswith("_") and name not in self.__dict__["_harness_names"]:
      # Tools probe modules for dunders and private hooks; those must stay
      # ordinary AttributeErrors.
      raise AttributeError(
          f"module {self.__name__!r} has no attribute {name!r}")
    return _lookup(self.__dict__, name)

  def __dir__(self):
    names = set(self.__dict__["_harness_names"])
    for source in self.__dict__["_harness_sources"]:
      names.update(getattr(importlib.import_module(source), "__all__", ()))
    names.update(k for k in self.__dict__ if not k.startswith("_"))
    return sorted(names) + ["__name__", "__doc__"]


def _resolve(target):
  module_name, _, attr = target.partition(":")
  return getattr(importlib.import_module(module_name), attr)


def _lookup(state, name):
  """Returns the harness object `name` of an alias module, or raises."""
  display = state["_harness_display"]
  if name in state["_harness_names"]:
    return _resolve(state["_harness_names"][name])
  if name in state["_harness_unsupported"]:
    raise errors.NotSupportedError(
        f"{display}.{name}: {state['_harness_unsupported'][name]}")
  for source in state["_harness_sources"]:
    module = importlib.import_module(source)
    if name in getattr(module, "__all__", ()):
      return getattr(module, name)
    module_getattr = module.__dict__.get("__getattr__")
    if module_getattr is not None:
      try:
        return module_getattr(name)  # May raise its own NotSupportedError.
      except AttributeError:
        pass
  why = state["_harness_why"] or (
      "harness implements tf.estimator's public Estimator API, not every "
      f"symbol of tensorflow_estimator 2.15. {FIX}")
  raise errors.NotSupportedError(
      f"{display}.{name} is not provided by harness: {why}")


def _names(module, *attrs):
  return {attr: f"{module}:{attr}" for attr in attrs}


def _canned_names(module, *classes):
  """{2.15 name: harness target} of a canned module: X is v1, XV2 is v2."""
  names = {}
  for cls in classes:
    names[cls] = f"harness.canned.{module}:{cls}V1"
    names[f"{cls}V2"] = f"harness.canned.{module}:{cls}"
  return names


# tf.compat.v1.estimator names whose class differs from tf.estimator's.
V1_CANNED = {
    **_canned_names("dnn", "DNNClassifier", "DNNRegressor", "DNNEstimator"),
    **_canned_names("linear", "LinearClassifier", "LinearRegressor",
                    "LinearEstimator"),
    **_canned_names("dnn_linear_combined", "DNNLinearCombinedClassifier",
                    "DNNLinearCombinedRegressor",
                    "DNNLinearCombinedEstimator"),
    **_canned_names("baseline", "BaselineClassifier", "BaselineRegressor",
                    "BaselineEstimator"),
}
V1_CANNED = {k: v for k, v in V1_CANNED.items() if not k.endswith("V2")}


def _v1_head_names():
  """2.15's `canned.head` (the v1 heads): {private name: harness target}."""
  head, v1 = "harness.canned.head", "harness.canned.head_v1"
  names = {
      "_Head": f"{v1}:Head",
      "LossSpec": f"{v1}:LossSpec",
      "_summary_key": f"{v1}.base:summary_key",
      "_append_update_ops": f"{v1}.base:append_update_ops",
      "_create_eval_metrics_tuple":
          f"{head}.spec_builder:create_eval_metrics_tuple",
      "_get_weights_and_check_match_logits":
          f"{head}.weights:get_weights_and_check_match_logits",
      "_assert_range": f"{head}.class_labels:check_label_range",
      "_indicator_labels_mean": f"{v1}.metrics:labels_mean",
      "_binary_logistic_head_with_sigmoid_cross_entropy_loss":
          f"{v1}:binary_logistic_head",
      "_BinaryLogisticHeadWithSigmoidCrossEntropyLoss":
          f"{v1}:BinaryLogisticHead",
      "_multi_class_head_with_softmax_cross_entropy_loss":
          f"{v1}:multi_class_head",
      "_MultiClassHeadWithSoftmaxCrossEntropyLoss": f"{v1}:MultiClassHead",
      "_regression_head": f"{v1}:regression_head",
      "_RegressionHeadWithMeanSquaredErrorLoss": f"{v1}:RegressionHead",
      "_binary_logistic_or_multi_class_head":
          f"{v1}:binary_or_multi_class_head",
  }
  for key in ("DEFAULT", "CLASSIFY", "REGRESS", "PREDICT"):
    names[f"_{key}_SERVING_KEY"] = f"{head}.base_head:{key}_SERVING_KEY"
  for name in ("check_dense_labels_match_logits_and_reshape",
               "check_logits_final_dim", "validate_loss_fn_args",
               "validate_n_classes", "call_loss_fn"):
    names[f"_{name}"] = f"{head}.base_head:{name}"
  for name in ("all_class_ids", "all_classes", "classification_output"):
    names[f"_{name}"] = f"{head}.class_labels:{name}"
  for name in ("accuracy_baseline", "predictions_mean", "auc",
               "accuracy_at_threshold", "precision_at_threshold",
               "recall_at_threshold"):
    names[f"_{name}"] = f"{v1}.metrics:{name}"
  return names


V1_HEAD_NAMES = _v1_head_names()


# The tf.estimator API namespaces: (relative path, sources, unsupported).
NAMESPACE_PARTS = (
    ("", ("harness",), {}),
    ("export", ("harness.export",), {}),
    ("experimental", ("harness.experimental",), {}),
    ("inputs", ("harness.inputs",), {}),
    ("tpu", ("harness.tpu",), {}),  # TPUEstimator on CPU/GPU.
)

# tensorflow_estimator 2.15's module layout under
# `tensorflow_estimator.python.estimator` (and `tensorflow.python.estimator`):
# relative path -> (explicit names, fallback harness modules).
LAYOUT = {
    "": ({}, ()),
    "estimator": ({
        **_names("harness", "Estimator", "VocabInfo", "WarmStartSettings"),
        "EstimatorV2": "harness:Estimator",
        # Private helpers legacy code is known to call.
        "_write_dict_to_summary": "harness.core.evaluation:write_dict_to_summary",
        # API-usage gauges (tensorflow_privacy's DP estimators set one).
        "_estimator_api_gauge": "harness.compat.gauges:ESTIMATOR_API",
        "_canned_estimator_api_gauge":
            "harness.compat.gauges:CANNED_ESTIMATOR_API",
        "_load_global_step_from_checkpoint_dir":
            "harness.training:load_global_step_from_checkpoint_dir",
    }, ("harness.estimator",)),
    "estimator_lib": ({}, ("harness",)),
    "run_config": (_names("harness.run_config", "RunConfig", "TaskType"),
                   ("harness.run_config",)),
    "model_fn": ({
        **_names("harness.spec", "EstimatorSpec", "ModeKeys",
                 "verify_model_fn_args"),
        "LOSS_METRIC_KEY": "harness.core.evaluation:LOSS_METRIC_KEY",
        "call_logit_fn": "harness.canned.logit_fns:call_logit_fn",
        # 2.15's heads built this TPU-shaped spec, then `as_estimator_spec()`;
        # custom heads (tensorflow_privacy's DP heads) still do.
        "_TPUEstimatorSpec": "harness.tpu.tpu_spec:TPUEstimatorSpec",
    }, ("harness.spec",)),
    "mode_keys": (_names("harness.spec", "ModeKeys"), ()),
    "training": ({
        **_names("harness.training", "_TrainingExecutor",
                 "_ContinuousEvalListener"),
        "_StopAtSecsHook": "harness.hooks:StopAtSecsHook",
        # What the evaluation loops hand to a _ContinuousEvalListener.
        "_EvalResult": "harness.distribute.eval_result:EvalResult",
        "_EvalStatus": "harness.distribute.eval_result:EvalStatus",
    }, ("harness.training",)),
    "exporter": ({}, ("harness.export.exporter",)),
    "extenders": ({}, ("harness.extension",)),
    "early_stopping": (_names(
        "harness.early_stopping", "_StopOnPredicateHook",
        "_CheckForStoppingHook"), ("harness.early_stopping",)),
    "util": ({
        **_names("harness.spec", "fn_args"),
        **_names("harness.core.input_pipeline", "parse_input_fn_result"),
        "_DatasetInitializerHook":
            "harness.core.input_pipeline:DatasetInitializerHook",
    }, ()),
    # 2.15's export-version filters, by their 2.15 (underscore) names too.
    "gc": ({**_names("harness.export.gc", "Path"), **{
        f"_{name}": f"harness.export.gc:{name}" for name in (
            "largest_export_versions", "one_of_every_n_export_versions",
            "mod_export_version", "union", "negation", "get_paths")}},
           ("harness.export.gc",)),
    "keras_lib": (_names("harness.keras_lib", "model_to_estimator",
                         "FormattedKeyError"), ()),
    "keras": (_names("harness.keras_lib", "model_to_estimator",
                     "FormattedKeyError"), ()),
    "export": ({}, ("harness.export",)),
    "export.export": ({}, ("harness.export.receivers",)),
    "export.export_output": ({}, ("harness.export.outputs",)),
    "export.export_lib": (_names(
        "harness.export.writer", "get_timestamped_export_dir"), (
            "harness.export.receivers", "harness.export.outputs")),
    "hooks": ({}, ()),
    "hooks.hooks": (_names("harness.hooks", "_StopAtCheckpointStepHook"),
                    ("harness.hooks",)),
    "hooks.basic_session_run_hooks": ({}, ("harness.hooks",)),
    "hooks.session_run_hook": ({}, ("harness.hooks",)),
    "inputs": ({}, ("harness.inputs",)),
    "inputs.inputs": ({}, ("harness.inputs",)),
    "inputs.numpy_io": (_names("harness.inputs", "numpy_input_fn"), ()),
    "inputs.pandas_io": (_names("harness.inputs", "pandas_input_fn"), ()),
    "canned": ({}, ()),
    "canned.parsing_utils": ({
        "classifier_parse_example_spec_v2":
            "harness.parsing:classifier_parse_example_spec",
        "regressor_parse_example_spec_v2":
            "harness.parsing:regressor_parse_example_spec",
    }, ("harness.parsing",)),
    # Canned estimators: `X` is the v1 class there, `XV2` the v2 one.
    "canned.dnn": ({
        **_canned_names("dnn", "DNNClassifier", "DNNRegressor",
                        "DNNEstimator"),
        "_dnn_model_fn": "harness.canned.dnn:dnn_model_fn_v1",
    }, ("harness.canned.dnn",)),
    "canned.linear": ({
        **_canned_names("linear", "LinearClassifier", "LinearRegressor",
                        "LinearEstimator"),
        "_compute_fraction_of_zero": "harness.canned.linear:fraction_of_zero",
        "_linear_model_fn": "harness.canned.linear:linear_model_fn_v1",
        "_validate_linear_sdca_optimizer_for_linear_classifier":
            "harness.canned.linear:validate_sdca_optimizer",
    }, ("harness.canned.linear",)),
    "canned.dnn_linear_combined": ({
        **_canned_names("dnn_linear_combined", "DNNLinearCombinedClassifier",
                        "DNNLinearCombinedRegressor",
                        "DNNLinearCombinedEstimator"),
        "_dnn_linear_combined_model_fn_v2": (
            "harness.canned.dnn_linear_combined:"
            "dnn_linear_combined_model_fn_v2"),
    }, ("harness.canned.dnn_linear_combined",)),
    "canned.baseline": (_canned_names(
        "baseline", "BaselineClassifier", "BaselineRegressor",
        "BaselineEstimator"), ("harness.canned.baseline",)),
    "canned.optimizers": ({}, ("harness.canned.optimizers",)),
    "canned.rnn": (_names("harness.canned.rnn", "_make_rnn_layer"),
                   ("harness.canned.rnn",)),
    "canned.head": (V1_HEAD_NAMES, ()),
    "canned.metric_keys": ({}, ("harness.canned.head.metric_keys",)),
    "canned.prediction_keys": ({}, ("harness.canned.head.prediction_keys",)),
    "head": ({}, ("harness.canned.head",)),
    "head.head_utils": ({
        "_DEFAULT_SERVING_KEY": "harness.export.outputs:DEFAULT_SERVING_KEY",
    }, ("harness.canned.default_heads",)),
    **{f"head.{module}": ({}, (f"harness.canned.head.{module}",))
       for module in ("base_head", "binary_class_head", "multi_class_head",
                      "multi_label_head", "regression_head", "multi_head")},
    # TPUEstimator on CPU/GPU (use_tpu=False), harness/tpu/.
    "tpu": ({}, ("harness.tpu",)),
    "tpu.tpu_estimator": ({
        "_tpu_estimator_gauge": "harness.compat.gauges:TPU_ESTIMATOR",
    }, ("harness.tpu.tpu_estimator", "harness.tpu.tpu_spec", "harness.tpu")),
    "tpu.tpu_config": ({}, ("harness.tpu.tpu_config",)),
    "tpu.util": (_names("harness.tpu.tpu_config", "parse_iterations_per_loop",
                        "IterationsPerLoop"), ()),
}
# Packages whose unknown names are canned estimators or TPU code.
WHY_BY_PACKAGE = {"canned": CANNED_WHY, "head": CANNED_WHY,
                   "tpu": TPU_WHY}
