"""The v1 `_Head` interface and the spec flow its canned heads share.

tf.estimator 2.15's `canned/head.py` (the heads of `tf.compat.v1.estimator`):
a head's `create_estimator_spec(features, mode, logits, labels, optimizer,
train_op_fn, regularization_losses)` calls `_create_tpu_estimator_spec` and
turns what it returns into an `EstimatorSpec` with `as_estimator_spec()`.
A subclass may override `_create_tpu_estimator_spec` (tensorflow_privacy's
DP heads do, to minimise the per-example loss) and build on `create_loss`
and `_eval_metric_ops`::

    head = CannedHead subclass instance
    spec = head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        optimizer=tf.compat.v1.train.AdagradOptimizer(0.05))

The losses are `tf.compat.v1.losses` reductions (SUM by default), the
metrics `tf.compat.v1.metrics` pairs.
"""

import abc
import collections

from harness import errors
from harness import spec as spec_lib
from harness._tf import tf
from harness.canned.head import base_head
from harness.canned.head import metric_keys
from harness.canned.head import spec_builder

__all__ = [
    "Head", "CannedHead", "HeadSpec", "LossSpec", "summary_key",
    "append_update_ops", "validate_loss_reduction",
]

_KEYS = metric_keys.MetricKeys

# 2.15's LossSpec: what `create_loss` returns.
LossSpec = collections.namedtuple(
    "LossSpec",
    ["training_loss", "unreduced_loss", "weights", "processed_labels"])


def summary_key(head_name, val):
  """`val/head_name` for a named head, `val` otherwise (2.15's tags)."""
  return f"{val}/{head_name}" if head_name else val


def append_update_ops(train_op):
  """`train_op` grouped with the graph's UPDATE_OPS (batch-norm moments)."""
  update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
  if update_ops:
    return tf.group(train_op, *update_ops)
  return train_op


def validate_loss_reduction(loss_reduction):
  """A `tf.compat.v1.losses.Reduction` other than NONE, as 2.15 required."""
  reductions = tf.compat.v1.losses.Reduction
  if (loss_reduction not in reductions.all() or
      loss_reduction == reductions.NONE):
    raise errors.ConfigError(
        f"Invalid loss_reduction: {loss_reduction}. The v1 heads take a "
        "tf.compat.v1.losses.Reduction other than NONE: "
        f"{sorted(set(reductions.all()) - {reductions.NONE})}.")


class HeadSpec(collections.namedtuple("HeadSpec", [
    "mode", "predictions", "loss", "train_op", "eval_metrics",
    "export_outputs"])):
  """What the canned v1 heads' `_create_tpu_estimator_spec` returns.

  `eval_metrics` is `(metric_fn, tensors)`; `as_estimator_spec()` calls
  `metric_fn(**tensors)` for the `eval_metric_ops`, as 2.15's
  `_TPUEstimatorSpec` did off TPU.
  """

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metrics=None, export_outputs=None):
    return super().__new__(cls, mode, predictions, loss, train_op,
                           eval_metrics, export_outputs)

  def as_estimator_spec(self):
    eval_metric_ops = None
    if self.eval_metrics:
      metric_fn, tensors = self.eval_metrics
      eval_metric_ops = metric_fn(**tensors)
    return spec_lib.EstimatorSpec(
        mode=self.mode, predictions=self.predictions, loss=self.loss,
        train_op=self.train_op, eval_metric_ops=eval_metric_ops,
        export_outputs=self.export_outputs)


class Head(base_head.HeadBase):
  """tf.estimator 2.15's v1 `_Head`: the top of a model, given its logits.

  A subclass defines `name`, `logits_dimension` (`base_head.HeadBase`) and
  `create_loss`, and either `create_estimator_spec` or
  `_create_tpu_estimator_spec`.
  """

  @abc.abstractmethod
  def create_loss(self, features, mode, logits, labels):
    """Returns a `LossSpec` (training loss, unreduced loss, weights, labels)."""

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, train_op_fn=None,
                            regularization_losses=None):
    """Returns the `EstimatorSpec` of `mode` (arguments by name, as 2.15).

    In TRAIN exactly one of `optimizer` (a `tf.compat.v1.train.Optimizer`:
    `optimizer.minimize(loss, global_step)`) and `train_op_fn` (loss -> op)
    is given.
    """
    try:
      parts = self._create_tpu_estimator_spec(
          features, mode, logits, labels, optimizer, train_op_fn,
          regularization_losses)
    except NotImplementedError:
      raise NotImplementedError(
          "Subclasses of _Head must implement `create_estimator_spec()` or "
          "_create_tpu_estimator_spec().") from None
    return parts.as_estimator_spec()

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, train_op_fn=None,
                                 regularization_losses=None):
    """2.15's hook: a spec with `as_estimator_spec()` (see `HeadSpec`)."""
    raise NotImplementedError(
        "TPUEstimatorSpec not available for this model head.")


class CannedHead(Head):
  """What the binary, multi-class and regression v1 heads share.

  A subclass sets `_name`, `_loss_reduction` and `_weight_column` and
  defines `_predictions_and_outputs(logits)` -> (predictions dict, export
  outputs), `_metric_kwargs(predictions, loss_spec, regularization_loss)`
  -> the arguments of its `_eval_metric_ops`, and `_eval_metric_ops`.
  """

  @property
  def name(self):
    return self._name

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, train_op_fn=None,
                                 regularization_losses=None):
    with tf.compat.v1.name_scope(self._name, "head"):
      logits = base_head.check_logits_final_dim(logits, self.logits_dimension)
      with tf.compat.v1.name_scope(None, "predictions", (logits,)):
        predictions, export_outputs = self._predictions_and_outputs(logits)
      if mode == spec_lib.ModeKeys.PREDICT:
        return HeadSpec(mode, predictions=predictions,
                        export_outputs=export_outputs)
      loss_spec = self.create_loss(features=features, mode=mode,
                                   logits=logits, labels=labels)
      regularization_loss = None
      loss = loss_spec.training_loss
      if regularization_losses:
        regularization_loss = tf.math.add_n(regularization_losses)
        loss = tf.math.add_n([loss, regularization_loss])
      if mode == spec_lib.ModeKeys.EVAL:
        return HeadSpec(
            mode, predictions=predictions, loss=loss,
            eval_metrics=spec_builder.create_eval_metrics_tuple(
                self._eval_metric_ops, self._metric_kwargs(
                    predictions, loss_spec, regularization_loss)))
      train_op = append_update_ops(_train_op(optimizer, train_op_fn, loss))
      mean_loss = None
      if self._loss_reduction == tf.compat.v1.losses.Reduction.SUM:
        # The mean only for SUM, as 2.15 (others skip the extra ops).
        weight_sum = tf.math.reduce_sum(
            loss_spec.weights * tf.ones_like(loss_spec.unreduced_loss))
        mean_loss = loss_spec.training_loss / weight_sum
    with tf.compat.v1.name_scope(""):
      _train_summaries(self._name, loss, mean_loss, regularization_loss)
    return HeadSpec(mode, predictions=predictions, loss=loss,
                    train_op=train_op)

  def _weights(self, features, logits, allow_per_logit_weights=False):
    return base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits,
        allow_per_logit_weights=allow_per_logit_weights)

  def _loss_spec(self, unweighted_loss, weights, processed_labels):
    training_loss = tf.compat.v1.losses.compute_weighted_loss(
        unweighted_loss, weights=weights, reduction=self._loss_reduction)
    return LossSpec(training_loss=training_loss,
                    unreduced_loss=unweighted_loss, weights=weights,
                    processed_labels=processed_labels)


def _train_op(optimizer, train_op_fn, loss):
  if optimizer is not None:
    if train_op_fn is not None:
      raise errors.ModelFnError(
          "train_op_fn and optimizer cannot both be set. Fix: pass one.")
    return optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
  if train_op_fn is not None:
    return train_op_fn(loss)
  raise errors.ModelFnError(
      "train_op_fn and optimizer cannot both be None. Fix: pass a "
      "tf.compat.v1.train optimizer or a train_op_fn(loss) in TRAIN mode.")


def _train_summaries(head_name, loss, mean_loss, regularization_loss):
  tf.compat.v1.summary.scalar(summary_key(head_name, _KEYS.LOSS), loss)
  if mean_loss is not None:
    tf.compat.v1.summary.scalar(
        summary_key(head_name, _KEYS.LOSS_MEAN), mean_loss)
  if regularization_loss is not None:
    tf.compat.v1.summary.scalar(
        summary_key(head_name, _KEYS.LOSS_REGULARIZATION),
        regularization_loss)
