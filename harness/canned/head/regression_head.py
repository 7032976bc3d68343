"""Regression heads (tf.estimator 2.15): `RegressionHead` (mean squared
error), `PoissonRegressionHead` (log-Poisson loss, exp link) and
`LogisticRegressionHead` (sigmoid cross-entropy, sigmoid link).

    head = RegressionHead(label_dimension=1, weight_column="w")
    spec = head.create_estimator_spec(features, mode, logits, labels,
                                      optimizer=opt, trainable_variables=vs)

Eval reports average_loss, label/mean and prediction/mean.
"""

from harness import errors
from harness._tf import tf
from harness.canned.head import base_head
from harness.canned.head import metric_keys
from harness.canned.head import prediction_keys
from harness.export import outputs

__all__ = ["RegressionHead", "PoissonRegressionHead",
           "LogisticRegressionHead"]

_KEYS = metric_keys.MetricKeys
_PRED = prediction_keys.PredictionKeys
_SUM_OVER_BATCH_SIZE = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE


class RegressionHead(base_head.CannedHead):
  """Regression with mean squared error loss (or `loss_fn`).

  Args:
    label_dimension: size of the labels' last dimension.
    weight_column: a feature key or `numeric_column` holding example weights
      (per example, or per label dimension).
    loss_reduction: a `tf.keras.losses.Reduction` other than NONE.
    loss_fn: optional `loss_fn(labels, logits[, features])` -> labels' shape.
    inverse_link_fn: optional function logits -> predictions; when set,
      predictions also hold `logits`.
    name: suffixes metric keys with "/name" and scopes the ops.
  """

  def __init__(self, label_dimension=1, weight_column=None,
               loss_reduction=_SUM_OVER_BATCH_SIZE, loss_fn=None,
               inverse_link_fn=None, name=None):
    if label_dimension < 1:
      raise errors.ConfigError(
          f"Invalid label_dimension {label_dimension}. Fix: give the number "
          "of regression labels per example (>= 1).")
    base_head.validate_loss_reduction(loss_reduction)
    if loss_fn:
      base_head.validate_loss_fn_args(loss_fn)
    self._logits_dimension = label_dimension
    self._weight_column = weight_column
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._inverse_link_fn = inverse_link_fn
    self._name = name
    self._loss_mean_key = self.summary_key(_KEYS.LOSS_MEAN)
    self._prediction_mean_key = self.summary_key(_KEYS.PREDICTION_MEAN)
    self._label_mean_key = self.summary_key(_KEYS.LABEL_MEAN)
    self._loss_regularization_key = self.summary_key(
        _KEYS.LOSS_REGULARIZATION)

  @property
  def logits_dimension(self):
    return self._logits_dimension

  def _processed_labels(self, logits, labels):
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits,
        expected_labels_dimension=self._logits_dimension)
    if labels.dtype == tf.string:
      raise errors.ModelFnError(
          "Regression labels must be numbers, got a string Tensor. Fix: "
          "parse them to float in input_fn.")
    return tf.cast(labels, tf.float32)

  def _unweighted_loss_and_weights(self, logits, labels, features):
    if self._loss_fn:
      unweighted_loss = base_head.call_loss_fn(
          self._loss_fn, labels=labels, logits=logits, features=features,
          expected_loss_dim=self._logits_dimension)
    else:
      unweighted_loss = tf.compat.v1.losses.mean_squared_error(
          labels=labels, predictions=logits,
          reduction=tf.compat.v1.losses.Reduction.NONE)
    weights = base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits,
        allow_per_logit_weights=True)
    return unweighted_loss, weights

  def predictions(self, logits, keys=None):
    """`predictions` (and `logits` when there is an inverse link)."""
    del keys  # 2.15's regression heads return every key.
    logits = base_head.check_logits_final_dim(logits, self._logits_dimension)
    with tf.compat.v1.name_scope("predictions"):
      if self._inverse_link_fn:
        return {_PRED.PREDICTIONS: self._inverse_link_fn(logits),
                _PRED.LOGITS: logits}
      return {_PRED.PREDICTIONS: logits}

  def metrics(self, regularization_losses=None):
    """The Keras metric objects eval reports (not yet updated)."""
    with tf.compat.v1.name_scope("metrics"):
      eval_metrics = {
          self._loss_mean_key: tf.keras.metrics.Mean(name=_KEYS.LOSS_MEAN),
          self._prediction_mean_key: tf.keras.metrics.Mean(
              name=_KEYS.PREDICTION_MEAN),
          self._label_mean_key: tf.keras.metrics.Mean(name=_KEYS.LABEL_MEAN),
      }
      if regularization_losses is not None:
        eval_metrics[self._loss_regularization_key] = tf.keras.metrics.Mean(
            name=_KEYS.LOSS_REGULARIZATION)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    """Updates every metric of `metrics()` with one batch."""
    predicted = self.predictions(logits)[_PRED.PREDICTIONS]
    logits, processed, unweighted_loss, weights = self._checked_labels_and_loss(
        logits, labels, features)
    eval_metrics[self._loss_mean_key].update_state(
        values=unweighted_loss, sample_weight=weights)
    # 2.15 averages the labels as fed (not reshaped) with the weights.
    eval_metrics[self._label_mean_key].update_state(
        values=labels, sample_weight=weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[self._prediction_mean_key], predicted, weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    return eval_metrics

  def _export_outputs(self, predictions):
    """serving_default and `regression` regress, `predict` returns every
    prediction."""
    regressor = outputs.RegressionOutput(value=predictions[_PRED.PREDICTIONS])
    return {
        base_head.DEFAULT_SERVING_KEY: regressor,
        base_head.REGRESS_SERVING_KEY: regressor,
        base_head.PREDICT_SERVING_KEY: outputs.PredictOutput(predictions),
    }


class PoissonRegressionHead(RegressionHead):
  """Poisson regression: `tf.nn.log_poisson_loss`, predictions exp(logits).

  `compute_full_loss` adds the constant Stirling term, as in 2.15.
  """

  def __init__(self, label_dimension=1, weight_column=None,
               loss_reduction=_SUM_OVER_BATCH_SIZE, compute_full_loss=True,
               name=None):
    self._compute_full_loss = compute_full_loss
    super().__init__(
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction, loss_fn=self._poisson_loss,
        inverse_link_fn=tf.math.exp, name=name)

  def _poisson_loss(self, labels, logits):
    return tf.nn.log_poisson_loss(
        targets=labels, log_input=logits,
        compute_full_loss=self._compute_full_loss)


class LogisticRegressionHead(RegressionHead):
  """Logistic regression: labels in [0, 1], sigmoid cross-entropy loss,
  predictions sigmoid(logits); regression export, no AUC."""

  def __init__(self, weight_column=None,
               loss_reduction=_SUM_OVER_BATCH_SIZE, name=None):
    super().__init__(
        label_dimension=1, weight_column=weight_column,
        loss_reduction=loss_reduction, loss_fn=self._logistic_loss,
        inverse_link_fn=tf.math.sigmoid, name=name)

  def _logistic_loss(self, labels, logits):
    labels = base_head.check_label_range(
        labels, n_classes=2, message="Labels must be in range [0, 1]")
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                   logits=logits)
