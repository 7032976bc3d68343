"""ModeKeys, EstimatorSpec, and how `model_fn` / `input_fn` are called.

tf.estimator 2.15's rules (its `model_fn` module); the field checks are in
`harness.spec.checks`. Imported through the door, `harness.spec`.
"""

import collections
import copy
import functools
import inspect

from harness import errors
from harness._tf import tf
from harness.export import outputs as export_outputs_lib
from harness.spec import checks as spec_checks

__all__ = [
    "ModeKeys",
    "EstimatorSpec",
    "fn_args",
    "verify_model_fn_args",
    "call_model_fn",
    "call_input_fn",
    "DATASET_FN_ATTR",
    "check_hooks",
    "VALID_MODEL_FN_ARGS",
]


class ModeKeys:
  """The three modes a `model_fn` is called in (values as tf.estimator)."""
  TRAIN = "train"
  EVAL = "eval"
  PREDICT = "infer"


VALID_MODEL_FN_ARGS = frozenset(
    ["features", "labels", "mode", "params", "self", "config"])

_SPEC_FIELDS = [
    "mode", "predictions", "loss", "train_op", "eval_metric_ops",
    "export_outputs", "training_chief_hooks", "training_hooks", "scaffold",
    "evaluation_hooks", "prediction_hooks",
]


def fn_args(fn):
  """Names of the arguments `fn` accepts (partials and callables included).

  As tf.estimator 2.15 (TensorFlow's `function_utils.fn_args`): arguments a
  `functools.partial` binds, by position or by keyword, are left out, so a
  model_fn with extra arguments bound by a partial passes the signature check.
  """
  if isinstance(fn, functools.partial):
    bound = set(fn.keywords or ())
    args = fn_args(fn.func)[len(fn.args):]
    return tuple(arg for arg in args if arg not in bound)
  if inspect.isclass(fn) or not (inspect.isfunction(fn) or inspect.ismethod(fn)):
    if hasattr(fn, "__call__") and not inspect.isfunction(fn):
      target = fn.__call__
    else:
      target = fn
  else:
    target = fn
  try:
    sig = inspect.signature(target)
  except (TypeError, ValueError):
    return ()
  return tuple(
      name for name, p in sig.parameters.items()
      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


# tf.estimator 2.15's sentences for a hook that is not a SessionRunHook.
HOOKS_SENTENCE_SPECS = "All hooks must be `SessionRunHook` instances, given: "
HOOKS_SENTENCE_ESTIMATOR = "Hooks must be a SessionRunHook, given: "
HOOKS_SENTENCE_MODEL_FN = "All hooks must be SessionRunHook instances, given: "


def check_hooks(hooks, where, error_cls=errors.ConfigTypeError,
                sentence=HOOKS_SENTENCE_ESTIMATOR):
  """Returns `hooks` as a list after checking each is a SessionRunHook.

  Args:
    hooks: an iterable of hooks, or None.
    where: what held them, for the message ("TrainSpec.hooks", ...).
    error_cls: the HarnessError class to raise (a TypeError, as 2.15's).
    sentence: 2.15's sentence for that place, the hook follows it.
  """
  hooks = list(hooks or ())
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise error_cls(
          f"{sentence}{hook}\n{where} holds {hook!r}, which is not a "
          "tf.compat.v1.train.SessionRunHook. Fix: pass SessionRunHook "
          "objects (subclass it for your own).")
  return hooks


def _validate_hooks(hooks, name):
  return tuple(check_hooks(hooks, f"EstimatorSpec.{name}",
                           errors.ModelFnTypeError, HOOKS_SENTENCE_MODEL_FN))


def _default_export_outputs(export_outputs, predictions):
  return export_outputs_lib.get_export_outputs(export_outputs, predictions)


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _SPEC_FIELDS)):
  """What a `model_fn` returns: the ops and objects one mode needs.

  Validated as tf.estimator 2.15 did: TRAIN needs `loss` and `train_op`, EVAL
  needs `loss`, PREDICT needs `predictions`; `loss` is a scalar or shape [1]
  (reshaped to a scalar); `eval_metric_ops` values are `(value, update_op)`
  pairs or tf_keras `Metric` objects; `export_outputs` defaults to
  `{"serving_default": PredictOutput(predictions)}` in PREDICT mode.
  """

  __slots__ = ()

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metric_ops=None, export_outputs=None,
              training_chief_hooks=None, training_hooks=None, scaffold=None,
              evaluation_hooks=None, prediction_hooks=None):
    # None passes, as in 2.15 (its tests build specs with mode=None).
    if mode not in (None, ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
      raise errors.ModelFnError(
          f"EstimatorSpec mode must be one of ModeKeys.TRAIN/EVAL/PREDICT "
          f"('train', 'eval', 'infer'), given: {mode!r}.")
    graph = tf.compat.v1.get_default_graph()
    train_op = spec_checks.validate_train_op(train_op, mode, graph)
    loss = spec_checks.validate_loss(loss, mode)
    if loss is not None:
      spec_checks.check_in_graph(loss, "loss", graph)
    predictions = spec_checks.validate_predictions(predictions, mode, graph)
    eval_metric_ops = spec_checks.validate_metric_ops(eval_metric_ops, graph)
    if mode == ModeKeys.PREDICT or export_outputs is not None:
      export_outputs = _default_export_outputs(export_outputs, predictions)
    training_chief_hooks = _validate_hooks(
        training_chief_hooks, "training_chief_hooks")
    training_hooks = _validate_hooks(training_hooks, "training_hooks")
    evaluation_hooks = _validate_hooks(evaluation_hooks, "evaluation_hooks")
    prediction_hooks = _validate_hooks(prediction_hooks, "prediction_hooks")
    if scaffold is None:
      scaffold = tf.compat.v1.train.Scaffold()
    elif not isinstance(scaffold, tf.compat.v1.train.Scaffold):
      raise errors.ModelFnTypeError(
          f"scaffold must be tf.train.Scaffold. Given: {scaffold}. Fix: pass "
          "a tf.compat.v1.train.Scaffold, or None for the default one.")
    return super().__new__(
        cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=eval_metric_ops, export_outputs=export_outputs,
        training_chief_hooks=training_chief_hooks,
        training_hooks=training_hooks, scaffold=scaffold,
        evaluation_hooks=evaluation_hooks, prediction_hooks=prediction_hooks)

  def _replace(self, **kwds):
    if "mode" in kwds and self.mode != kwds["mode"]:
      raise errors.ModelFnError(
          "mode of EstimatorSpec cannot be changed. Fix: build a new "
          "EstimatorSpec for the other mode.")
    fields = self._asdict()
    fields.update(kwds)
    return EstimatorSpec(**fields)


def verify_model_fn_args(model_fn, params):
  """Checks `model_fn`'s signature against tf.estimator's rules.

  Raises:
    ModelFnError: `features` missing, an unknown argument, or `params` given
      to an Estimator whose model_fn does not accept it.
  """
  args = set(fn_args(model_fn))
  if "features" not in args:
    raise errors.ModelFnError(
        f"model_fn ({model_fn!r}) must include features argument. Its "
        f"arguments are {sorted(args)}; allowed: "
        f"{sorted(VALID_MODEL_FN_ARGS - {'self'})}.")
  if params is not None and "params" not in args:
    raise errors.ModelFnError(
        f"model_fn ({model_fn!r}) does not include params argument, but "
        f"params ({params!r}) is passed to Estimator. Fix: add `params` to "
        "model_fn's arguments, or do not pass params.")
  unexpected = sorted(args - VALID_MODEL_FN_ARGS)
  if unexpected:
    raise errors.ModelFnError(
        f"model_fn ({model_fn!r}) has following not expected args: "
        f"{unexpected}. Allowed: features, labels, mode, params, config. "
        "Fix: bind extra arguments with functools.partial, or read them "
        "from params.")
  return args


def model_fn_kwargs(model_fn, labels, mode, params, config):
  """The keyword arguments besides `features` that `model_fn` declares."""
  args = fn_args(model_fn)
  kwargs = {}
  if "labels" in args:
    kwargs["labels"] = labels
  elif labels is not None:
    raise errors.ModelFnError(
        "model_fn does not take labels, but input_fn returns labels. Fix: "
        "add a `labels` argument to model_fn, or return features only.")
  if "mode" in args:
    kwargs["mode"] = mode
  if "params" in args:
    kwargs["params"] = params
  if "config" in args:
    kwargs["config"] = config
  return kwargs


def call_model_fn(model_fn, features, labels, mode, params, config):
  """Calls `model_fn` with the arguments it declares; checks its result."""
  kwargs = model_fn_kwargs(model_fn, labels, mode, params, config)
  result = model_fn(features=features, **kwargs)
  if not isinstance(result, EstimatorSpec):
    raise errors.ModelFnError(
        f"model_fn should return an EstimatorSpec. It returned "
        f"{type(result).__name__}: {result!r:.200}.")
  return result


# An input_fn of harness's own (`harness.inputs.numpy_input_fn`, ...) that
# returns Tensors, as 2.15's did, carries under this name a function of no
# arguments returning the same batches as a `tf.data.Dataset`;
# `call_input_fn` returns that Dataset instead.
DATASET_FN_ATTR = "harness_dataset_fn"


def call_input_fn(input_fn, mode, params, config, input_context=None):
  """Calls `input_fn` with the arguments it declares, on the CPU.

  Returns:
    Whatever input_fn returns: a `tf.data.Dataset`, a `(features, labels)`
    tuple, or features alone; for an input_fn with `DATASET_FN_ATTR`, the
    Dataset of the batches it would return.
  """
  dataset_fn = getattr(input_fn, DATASET_FN_ATTR, None)
  if dataset_fn is not None:
    with tf.compat.v1.device("/cpu:0"):
      return dataset_fn()
  if not callable(input_fn):
    raise errors.InputFnError(
        f"input_fn must be callable, given: {input_fn!r}. Fix: pass the "
        "function itself, e.g. input_fn=train_input_fn (not "
        "train_input_fn()), or wrap it in a lambda.")
  args = fn_args(input_fn)
  kwargs = {}
  if "params" in args:
    kwargs["params"] = copy.deepcopy(params)
  if "config" in args:
    kwargs["config"] = config
  if input_context is not None and "input_context" in args:
    kwargs["input_context"] = input_context
  if "mode" in args:
    kwargs["mode"] = mode
  with tf.compat.v1.device("/cpu:0"):
    return input_fn(**kwargs)
