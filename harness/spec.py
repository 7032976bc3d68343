"""ModeKeys, EstimatorSpec, and how `model_fn` / `input_fn` are called.

The rules here are tf.estimator 2.15's, so that a `model_fn` that worked there
works here, and one that was rejected there is rejected here with a message
that says what to change::

    def model_fn(features, labels, mode, params):
      logits = tf.compat.v1.layers.dense(features["x"], 10)
      ...
      return harness.EstimatorSpec(mode, loss=loss, train_op=train_op)
"""

import collections
import copy
import functools
import inspect

from harness import errors
from harness._tf import tf
from harness.export import outputs as export_outputs_lib

__all__ = [
    "ModeKeys",
    "EstimatorSpec",
    "fn_args",
    "verify_model_fn_args",
    "call_model_fn",
    "call_input_fn",
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

  Positional arguments bound by `functools.partial` are left out, keyword
  arguments bound by it are kept, as tf.estimator did.
  """
  if isinstance(fn, functools.partial):
    args = fn_args(fn.func)
    args = args[len(fn.args):]
    return tuple(args)
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


def _is_tensor_like(value):
  return isinstance(value, (tf.Tensor, tf.Operation, tf.Variable)) or (
      tf.is_tensor(value))


def _enclosing_graphs(graph):
  """`graph` and, inside a loop body's function graph, the graphs around it."""
  graphs = []
  while graph is not None:
    graphs.append(graph)
    graph = getattr(graph, "outer_graph", None)
  return graphs


def _check_in_graph(value, name, graph):
  items = value.values() if isinstance(value, dict) else [value]
  graphs = _enclosing_graphs(graph)
  for item in items:
    item_graph = getattr(item, "graph", None)
    if item_graph is not None and not any(item_graph is g for g in graphs):
      raise errors.ModelFnError(
          f"{name} with {item!r} must be from the default graph. Possible "
          "causes: the model_fn built it in another tf.Graph, or kept a "
          "tensor from an earlier call (model_fn is called once per mode, "
          "each time in a fresh graph). Fix: create every tensor inside "
          "model_fn.")


# The op that reshapes a loss of unknown size (e.g. [batch, 1]) to a scalar.
LOSS_TO_SCALAR_OP = "loss_reshaped_to_scalar"


def _validate_loss(loss, mode):
  if loss is None:
    if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
      raise errors.ModelFnError(
          f"Missing loss: EstimatorSpec(mode={mode!r}) needs `loss`, a "
          "scalar Tensor (TRAIN and EVAL modes require it).")
    return None
  if not tf.is_tensor(loss):
    loss = tf.convert_to_tensor(loss) if not isinstance(loss, tf.Operation) else loss
  if isinstance(loss, tf.Operation) or not tf.is_tensor(loss):
    raise errors.ModelFnError(
        f"loss must be a Tensor, given: {loss!r}. Fix: return the scalar "
        "loss value, not the op that minimizes it.")
  num = loss.shape.num_elements()
  if num not in (None, 1):
    raise errors.ModelFnError(
        f"Loss must be scalar, given: {loss!r} with shape {loss.shape}. "
        "Fix: reduce it, e.g. tf.reduce_mean(per_example_loss).")
  if not loss.shape.is_compatible_with(tf.TensorShape([])):
    # Named so that a run-time failure (more than one value) is told apart
    # from an input problem (harness.cli.diagnose).
    loss = tf.reshape(loss, [], name=LOSS_TO_SCALAR_OP)
  return loss


def _validate_metric_ops(eval_metric_ops):
  if eval_metric_ops is None:
    return {}
  if not isinstance(eval_metric_ops, dict):
    raise errors.ModelFnError(
        f"eval_metric_ops must be a dict, given: {eval_metric_ops!r}.")
  metric_cls = _keras_metric_class()
  for key, value in eval_metric_ops.items():
    if metric_cls is not None and isinstance(value, metric_cls):
      continue
    if not isinstance(value, (tuple, list)) or len(value) != 2:
      raise errors.ModelFnError(
          "Values of eval_metric_ops must be (metric_value, update_op) "
          f"tuples, given: {value!r} for key: {key!r}. Fix: use a "
          "tf.compat.v1.metrics.* result or a tf_keras Metric object.")
  return dict(eval_metric_ops)


def _keras_metric_class():
  try:
    return tf.keras.metrics.Metric
  except AttributeError:  # pragma: no cover - tf_keras always has it.
    return None


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
    if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
      raise errors.ModelFnError(
          f"EstimatorSpec mode must be one of ModeKeys.TRAIN/EVAL/PREDICT "
          f"('train', 'eval', 'infer'), given: {mode!r}.")
    graph = tf.compat.v1.get_default_graph()
    if predictions is None and mode == ModeKeys.PREDICT:
      raise errors.ModelFnError(
          "Missing predictions: EstimatorSpec(mode='infer') needs "
          "`predictions`, a Tensor or a dict of Tensors.")
    if predictions is not None:
      if isinstance(predictions, dict):
        predictions = dict(predictions)
        for key, value in predictions.items():
          if not tf.is_tensor(value):
            raise errors.ModelFnError(
                f"predictions[{key!r}] must be a Tensor, given: {value!r}.")
      elif not tf.is_tensor(predictions):
        raise errors.ModelFnError(
            f"predictions must be a Tensor or a dict of Tensors, given: "
            f"{predictions!r}.")
      _check_in_graph(predictions, "predictions", graph)
    loss = _validate_loss(loss, mode)
    if loss is not None:
      _check_in_graph(loss, "loss", graph)
    if train_op is None:
      if mode == ModeKeys.TRAIN:
        raise errors.ModelFnError(
            "Missing train_op: EstimatorSpec(mode='train') needs `train_op`, "
            "e.g. optimizer.minimize(loss, global_step="
            "tf.compat.v1.train.get_global_step()).")
    else:
      if not (isinstance(train_op, tf.Operation) or tf.is_tensor(train_op)):
        raise errors.ModelFnError(
            f"train_op must be an Operation or Tensor, given: {train_op!r}.")
      _check_in_graph(train_op, "train_op", graph)
    eval_metric_ops = _validate_metric_ops(eval_metric_ops)
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
      raise errors.ModelFnError(
          f"scaffold must be tf.compat.v1.train.Scaffold. Given: {scaffold!r}")
    return super().__new__(
        cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=eval_metric_ops, export_outputs=export_outputs,
        training_chief_hooks=training_chief_hooks,
        training_hooks=training_hooks, scaffold=scaffold,
        evaluation_hooks=evaluation_hooks, prediction_hooks=prediction_hooks)

  def _replace(self, **kwds):
    if "mode" in kwds and self.mode != kwds["mode"]:
      raise errors.ModelFnError(
          "mode of EstimatorSpec cannot be changed by _replace.")
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
        f"model_fn should return an EstimatorSpec, it returned "
        f"{type(result).__name__}: {result!r:.200}.")
  return result


def call_input_fn(input_fn, mode, params, config, input_context=None):
  """Calls `input_fn` with the arguments it declares, on the CPU.

  Returns:
    Whatever input_fn returns: a `tf.data.Dataset`, a `(features, labels)`
    tuple, or features alone.
  """
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
