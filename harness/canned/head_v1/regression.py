"""The v1 regression head: mean squared error (2.15's `_regression_head`).

    head = regression_head(label_dimension=2, inverse_link_fn=tf.exp)
    spec = head.create_estimator_spec(features=features, mode=mode,
                                      logits=logits, labels=labels,
                                      optimizer=optimizer)
"""

from harness import errors
from harness._tf import tf
from harness.canned.head import base_head
from harness.canned.head import metric_keys
from harness.canned.head import prediction_keys
from harness.canned.head_v1 import base
from harness.canned.head_v1 import metrics
from harness.export import outputs

__all__ = ["RegressionHead", "regression_head"]

_KEYS = metric_keys.MetricKeys
_PRED = prediction_keys.PredictionKeys
_SUM = tf.compat.v1.losses.Reduction.SUM


class RegressionHead(base.CannedHead):
  """Squared error over `label_dimension` targets (2.15's v1 head)."""

  def __init__(self, label_dimension, weight_column=None, loss_reduction=_SUM,
               loss_fn=None, inverse_link_fn=None, name=None):
    if label_dimension < 1:
      raise errors.ConfigError(f"Invalid label_dimension {label_dimension}.")
    self._logits_dimension = label_dimension
    self._weight_column = weight_column
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._inverse_link_fn = inverse_link_fn
    self._name = name

  @property
  def logits_dimension(self):
    return self._logits_dimension

  def _predictions_and_outputs(self, logits):
    if self._inverse_link_fn:
      value = self._inverse_link_fn(logits)
      predictions = {_PRED.PREDICTIONS: value, _PRED.LOGITS: logits}
    else:
      value = logits
      predictions = {_PRED.PREDICTIONS: value}
    regression = outputs.RegressionOutput(value=value)
    return predictions, {
        base_head.DEFAULT_SERVING_KEY: regression,
        base_head.REGRESS_SERVING_KEY: regression,
        base_head.PREDICT_SERVING_KEY: outputs.PredictOutput(predictions),
    }

  def create_loss(self, features, mode, logits, labels):
    """See `_Head`: squared error, weighted (per logit allowed), reduced."""
    del mode  # The same in every mode.
    logits = tf.convert_to_tensor(logits)
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits,
        expected_labels_dimension=self._logits_dimension)
    labels = tf.cast(labels, tf.float32)
    if self._loss_fn:
      unweighted_loss = base_head.call_loss_fn(
          self._loss_fn, labels, logits, features,
          expected_loss_dim=self._logits_dimension)
    else:
      unweighted_loss = tf.compat.v1.losses.mean_squared_error(
          labels=labels, predictions=logits,
          reduction=tf.compat.v1.losses.Reduction.NONE)
    weights = self._weights(features, logits, allow_per_logit_weights=True)
    return self._loss_spec(unweighted_loss, weights, labels)

  def _metric_kwargs(self, predictions, loss_spec, regularization_loss):
    return {"predicted_value": predictions[_PRED.PREDICTIONS],
            "labels": loss_spec.processed_labels,
            "weights": loss_spec.weights,
            "unreduced_loss": loss_spec.unreduced_loss,
            "regularization_loss": regularization_loss}

  def _eval_metric_ops(self, predicted_value, labels, weights, unreduced_loss,
                       regularization_loss):
    """Average loss, prediction mean, label mean (+ regularization)."""
    key = lambda k: base.summary_key(self._name, k)  # pylint: disable=unnecessary-lambda-assignment
    ops = {
        key(_KEYS.LOSS_MEAN): tf.compat.v1.metrics.mean(
            values=unreduced_loss, weights=weights),
        key(_KEYS.PREDICTION_MEAN): metrics.predictions_mean(
            predicted_value, weights, _KEYS.PREDICTION_MEAN),
        key(_KEYS.LABEL_MEAN): tf.compat.v1.metrics.mean(
            values=labels, weights=weights),
    }
    if regularization_loss is not None:
      ops[key(_KEYS.LOSS_REGULARIZATION)] = tf.compat.v1.metrics.mean(
          values=regularization_loss, name=_KEYS.LOSS_REGULARIZATION)
    return ops


def regression_head(weight_column=None, label_dimension=1,
                    loss_reduction=_SUM, loss_fn=None, inverse_link_fn=None,
                    name=None):
  """2.15's `_regression_head`."""
  base.validate_loss_reduction(loss_reduction)
  if loss_fn:
    base_head.validate_loss_fn_args(loss_fn)
  return RegressionHead(
      weight_column=weight_column, label_dimension=label_dimension,
      loss_reduction=loss_reduction, loss_fn=loss_fn,
      inverse_link_fn=inverse_link_fn, name=name)
