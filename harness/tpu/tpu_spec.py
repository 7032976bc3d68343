"""`TPUEstimatorSpec` and its CPU/GPU meaning (tf.estimator 2.15's).

A TPU model_fn returns `TPUEstimatorSpec(mode, ..., eval_metrics=(metric_fn,
tensors), scaffold_fn=fn, host_call=(fn, tensors))`. Off-TPU,
`as_estimator_spec()` turns it into an `EstimatorSpec` as 2.15 did:

* `eval_metrics`: `metric_fn(*tensors)` (a list) or `metric_fn(**tensors)`
  (a dict) gives `eval_metric_ops`;
* `scaffold_fn()` gives the `Scaffold`;
* `host_call`: `fn(*tensors)` / `fn(**tensors)` is built once and its ops
  run on the host every step by a hook (training and evaluation), which
  also initialises and flushes v2 summary writers the fn created.
"""

import collections
import inspect

from harness import _tf_private
from harness import errors
from harness import spec as spec_lib
from harness._tf import tf

__all__ = ["TPUEstimatorSpec", "HostCallHook", "check_host_call",
           "call_host_fn"]


def check_host_call(name, host_call):
  """Checks a `(fn, tensors)` pair of eval_metrics / host_call (2.15 rules).

  Raises:
    ModelFnError: not a pair, fn not callable, tensors not a list/tuple/
      dict, or a list whose length does not match fn's arguments.
  """
  where = f"TPUEstimatorSpec.{name}"
  if not isinstance(host_call, (tuple, list)):
    raise errors.ModelFnError(
        f"{where} should be tuple or list, given: {host_call!r:.100}. Fix: "
        f"pass {name}=(fn, [tensors]) or (fn, {{name: tensor}}).")
  if len(host_call) != 2:
    raise errors.ModelFnError(
        f"{where} should have two elements (fn, tensors); it has "
        f"{len(host_call)}.")
  fn, tensors = host_call
  if not callable(fn):
    raise errors.ModelFnError(f"{where}[0] should be a function, given: "
                              f"{fn!r:.100}.")
  if not isinstance(tensors, (tuple, list, dict)):
    raise errors.ModelFnError(
        f"{where}[1] should be tuple or list, or dict; given "
        f"{type(tensors).__name__}.")
  if isinstance(tensors, (tuple, list)):
    args = spec_lib.fn_args(fn)
    if len(tensors) != len(args) and not _takes_varargs(fn):
      raise errors.ModelFnError(
          f"In {where}, length of tensors {len(tensors)} does not match "
          f"method args of the function, which takes {len(args)} "
          f"({list(args)}). Fix: pass one tensor per argument of the fn.")


def _takes_varargs(fn):
  try:
    parameters = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError):
    return True  # Cannot tell: let the call itself report.
  return any(p.kind == p.VAR_POSITIONAL for p in parameters)


def call_host_fn(host_call):
  """Calls `fn(*tensors)` or `fn(**tensors)` of a `(fn, tensors)` pair."""
  fn, tensors = host_call
  if isinstance(tensors, dict):
    return fn(**tensors)
  return fn(*tensors)


class HostCallHook(tf.compat.v1.train.SessionRunHook):
  """Runs a host_call's ops every step; initialises/flushes v2 writers."""

  def __init__(self, ops):
    self._ops = [] if ops is None else ops
    self._init_ops = []
    self._flush_ops = []

  def begin(self):
    self._init_ops = list(tf.compat.v1.get_collection(
        _tf_private.SUMMARY_WRITER_INIT_KEY))
    # Each writer initialiser takes the writer resource as input 0.
    self._flush_ops = [tf.raw_ops.FlushSummaryWriter(writer=op.inputs[0])
                       for op in self._init_ops]

  def after_create_session(self, session, coord):
    del coord
    if self._init_ops:
      session.run(self._init_ops)

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._ops)

  def end(self, session):
    if self._flush_ops:
      session.run(self._flush_ops)


class TPUEstimatorSpec(
    collections.namedtuple("TPUEstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metrics",
        "export_outputs", "scaffold_fn", "host_call", "training_hooks",
        "evaluation_hooks", "prediction_hooks"])):
  """What a TPU `model_fn` returns (tf.estimator 2.15's fields and order).

  See `EstimatorSpec` for `mode`, `predictions`, `loss`, `train_op` and
  `export_outputs`. `eval_metrics` is `(metric_fn, tensors)`, `tensors` a
  list (positional arguments) or dict (keyword arguments); `scaffold_fn`
  returns a `Scaffold`; `host_call` is `(fn, tensors)` whose result runs on
  the host every step.
  """

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metrics=None, export_outputs=None, scaffold_fn=None,
              host_call=None, training_hooks=None, evaluation_hooks=None,
              prediction_hooks=None):
    if eval_metrics is not None:
      check_host_call("eval_metrics", eval_metrics)
    if host_call is not None:
      check_host_call("host_call", host_call)
    if scaffold_fn is not None and not callable(scaffold_fn):
      raise errors.ModelFnError(
          f"TPUEstimatorSpec.scaffold_fn must be callable (it returns a "
          f"Scaffold), given: {scaffold_fn!r:.100}.")
    training_hooks = tuple(training_hooks or [])
    evaluation_hooks = tuple(evaluation_hooks or [])
    prediction_hooks = tuple(prediction_hooks or [])
    for hook in training_hooks + evaluation_hooks + prediction_hooks:
      if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
        raise TypeError(
            f"All hooks must be SessionRunHook instances, given: {hook!r}")
    return super().__new__(
        cls, mode=mode, predictions=predictions, loss=loss,
        train_op=train_op, eval_metrics=eval_metrics,
        export_outputs=export_outputs, scaffold_fn=scaffold_fn,
        host_call=host_call, training_hooks=training_hooks,
        evaluation_hooks=evaluation_hooks, prediction_hooks=prediction_hooks)

  def as_estimator_spec(self):
    """The equivalent `EstimatorSpec`, as train/eval off-TPU use it."""
    return self.to_estimator_spec(lift_host_fns=False)

  def to_estimator_spec(self, *, lift_host_fns):
    """The equivalent `EstimatorSpec` (TPUEstimator's model_fn call).

    `lift_host_fns`: build scaffold_fn's ops outside a training loop.

    Under steps_per_loop > 1, model_fn runs inside a `tf.while_loop` body;
    on a TPU, 2.15 called `scaffold_fn` on the host, outside the loop, and
    so does this (`tf.init_scope`): its `init_from_checkpoint` then sets
    the variables' initialisers in the training graph itself.
    """
    eval_metric_ops = None
    if self.eval_metrics is not None and self.mode != spec_lib.ModeKeys.TRAIN:
      # TRAIN ignores eval_metric_ops (2.15's Estimator never ran them
      # there); not building the metrics keeps the training graph lean.
      eval_metric_ops = call_host_fn(self.eval_metrics)
    hooks = ()
    if self.host_call is not None:
      hooks = (HostCallHook(call_host_fn(self.host_call)),)
    scaffold = None
    if self.scaffold_fn is not None:
      if lift_host_fns:
        with tf.init_scope():
          scaffold = self.scaffold_fn()
      else:
        scaffold = self.scaffold_fn()
    return spec_lib.EstimatorSpec(
        mode=self.mode, predictions=self.predictions, loss=self.loss,
        train_op=self.train_op, eval_metric_ops=eval_metric_ops,
        export_outputs=self.export_outputs, scaffold=scaffold,
        training_hooks=self.training_hooks + hooks,
        evaluation_hooks=self.evaluation_hooks + hooks,
        prediction_hooks=self.prediction_hooks + hooks)
