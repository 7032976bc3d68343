"""`BinaryClassHead`: sigmoid cross-entropy over one logit (tf.estimator 2.15).

    head = BinaryClassHead(weight_column="w", thresholds=[0.3, 0.7])
    spec = head.create_estimator_spec(features, mode, logits, labels,
                                      optimizer=opt, trainable_variables=vs)

Eval reports accuracy, accuracy_baseline, auc, auc_precision_recall,
average_loss, label/mean, precision, prediction/mean, recall (and, per
threshold, accuracy/precision/recall ``/positive_threshold_<t>``).
"""

from harness import errors
from harness._tf import tf
from harness.canned.head import base_head
from harness.canned.head import classification
from harness.canned.head import metric_keys
from harness.canned.head import prediction_keys

__all__ = ["BinaryClassHead"]

_KEYS = metric_keys.MetricKeys
_PRED = prediction_keys.PredictionKeys


class BinaryClassHead(base_head.CannedHead):
  """Single-label binary classification with `sigmoid_cross_entropy` loss.

  Args:
    weight_column: a feature key or `numeric_column` holding example weights.
    thresholds: floats in (0, 1): extra accuracy/precision/recall metrics.
    label_vocabulary: list/tuple of the two string labels; else labels are
      numbers in [0, 1].
    loss_reduction: a `tf.keras.losses.Reduction` other than NONE.
    loss_fn: optional `loss_fn(labels, logits[, features])` -> [D0.., 1].
    name: suffixes metric keys with "/name" and scopes the ops.
  """

  def __init__(self, weight_column=None, thresholds=None,
               label_vocabulary=None,
               loss_reduction=tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn=None, name=None):
    if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                       (list, tuple)):
      raise errors.ConfigError(
          "label_vocabulary should be a list or a tuple. Given type: "
          f"{type(label_vocabulary)}")
    thresholds = tuple(thresholds) if thresholds else tuple()
    for threshold in thresholds:
      if threshold <= 0.0 or threshold >= 1.0:
        raise errors.ConfigError(f"thresholds not in (0, 1): {(thresholds,)}.")
    base_head.validate_loss_reduction(loss_reduction)
    if loss_fn:
      base_head.validate_loss_fn_args(loss_fn)
    self._weight_column = weight_column
    self._thresholds = thresholds
    self._label_vocabulary = label_vocabulary
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name
    key = self.summary_key
    self._loss_mean_key = key(_KEYS.LOSS_MEAN)
    self._accuracy_key = key(_KEYS.ACCURACY)
    self._precision_key = key(_KEYS.PRECISION)
    self._recall_key = key(_KEYS.RECALL)
    self._prediction_mean_key = key(_KEYS.PREDICTION_MEAN)
    self._label_mean_key = key(_KEYS.LABEL_MEAN)
    self._accuracy_baseline_key = key(_KEYS.ACCURACY_BASELINE)
    self._auc_key = key(_KEYS.AUC)
    self._auc_pr_key = key(_KEYS.AUC_PR)
    self._loss_regularization_key = key(_KEYS.LOSS_REGULARIZATION)
    self._accuracy_keys = tuple(
        key(_KEYS.ACCURACY_AT_THRESHOLD % t) for t in thresholds)
    self._precision_keys = tuple(
        key(_KEYS.PRECISION_AT_THRESHOLD % t) for t in thresholds)
    self._recall_keys = tuple(
        key(_KEYS.RECALL_AT_THRESHOLD % t) for t in thresholds)

  @property
  def logits_dimension(self):
    return 1

  def _processed_labels(self, logits, labels):
    """Labels as float ids in {0, 1}, shaped like logits."""
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._label_vocabulary is not None:
      if labels.dtype != tf.string:
        raise errors.ModelFnError(
            "Labels dtype should be string if there is a vocabulary. Given: "
            f"{labels.dtype}.")
      labels = base_head.class_id_table(self._label_vocabulary).lookup(labels)
    elif labels.dtype == tf.string:
      raise errors.ModelFnError(
          "Labels are strings but BinaryClassHead has no label_vocabulary. "
          "Fix: pass label_vocabulary=[<negative>, <positive>] or feed "
          "labels as numbers in [0, 1].")
    labels = tf.cast(labels, tf.float32)
    return base_head.check_label_range(labels, n_classes=2)

  def _unweighted_loss_and_weights(self, logits, labels, features):
    if self._loss_fn:
      unweighted_loss = base_head.call_loss_fn(
          self._loss_fn, labels=labels, logits=logits, features=features,
          expected_loss_dim=1)
    else:
      unweighted_loss = tf.nn.sigmoid_cross_entropy_with_logits(
          labels=labels, logits=logits)
    weights = base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    return unweighted_loss, weights

  def predictions(self, logits, keys=None):
    """logits, logistic, probabilities, class_ids, classes, all_class_ids,
    all_classes (or just `keys`)."""
    valid_keys = [_PRED.LOGITS, _PRED.LOGISTIC, _PRED.PROBABILITIES,
                  _PRED.CLASS_IDS, _PRED.CLASSES, _PRED.ALL_CLASS_IDS,
                  _PRED.ALL_CLASSES]
    if keys:
      base_head.check_prediction_keys(keys, valid_keys)
    else:
      keys = valid_keys
    logits = base_head.check_logits_final_dim(logits, 1)
    predictions = {}
    with tf.compat.v1.name_scope("predictions"):
      if _PRED.LOGITS in keys:
        predictions[_PRED.LOGITS] = logits
      if _PRED.LOGISTIC in keys:
        predictions[_PRED.LOGISTIC] = tf.sigmoid(logits, name=_PRED.LOGISTIC)
      two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1,
                                   name="two_class_logits")
      if _PRED.PROBABILITIES in keys:
        predictions[_PRED.PROBABILITIES] = tf.nn.softmax(
            two_class_logits, name=_PRED.PROBABILITIES)
      classification.add_class_predictions(
          predictions, keys, two_class_logits, self._label_vocabulary)
      if _PRED.ALL_CLASS_IDS in keys:
        predictions[_PRED.ALL_CLASS_IDS] = base_head.all_class_ids(logits, 2)
      if _PRED.ALL_CLASSES in keys:
        predictions[_PRED.ALL_CLASSES] = base_head.all_classes(
            logits, 2, self._label_vocabulary)
    return predictions

  def metrics(self, regularization_losses=None):
    """The Keras metric objects eval reports (not yet updated)."""
    metrics_lib = tf.keras.metrics
    with tf.compat.v1.name_scope("metrics"):
      eval_metrics = {
          self._loss_mean_key: metrics_lib.Mean(name=_KEYS.LOSS_MEAN),
          self._accuracy_key: metrics_lib.Accuracy(name=_KEYS.ACCURACY),
          self._precision_key: metrics_lib.Precision(name=_KEYS.PRECISION),
          self._recall_key: metrics_lib.Recall(name=_KEYS.RECALL),
          self._prediction_mean_key: metrics_lib.Mean(
              name=_KEYS.PREDICTION_MEAN),
      }
      label_mean = metrics_lib.Mean(name=_KEYS.LABEL_MEAN)
      eval_metrics[self._label_mean_key] = label_mean
      eval_metrics[self._accuracy_baseline_key] = _AccuracyBaseline(
          label_mean)
      # AUC's default summation is "interpolation", as in 2.15.
      eval_metrics[self._auc_key] = metrics_lib.AUC(name=_KEYS.AUC)
      eval_metrics[self._auc_pr_key] = metrics_lib.AUC(
          curve="PR", name=_KEYS.AUC_PR)
      if regularization_losses is not None:
        eval_metrics[self._loss_regularization_key] = metrics_lib.Mean(
            name=_KEYS.LOSS_REGULARIZATION)
      classification.add_threshold_metrics(
          eval_metrics, self._thresholds, self._accuracy_keys,
          self._precision_keys, self._recall_keys)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    """Updates every metric of `metrics()` with one batch."""
    class_ids = self.predictions(logits, [_PRED.CLASS_IDS])[_PRED.CLASS_IDS]
    logits, labels, unweighted_loss, weights = self._checked_labels_and_loss(
        logits, labels, features)
    eval_metrics[self._loss_mean_key].update_state(
        values=unweighted_loss, sample_weight=weights)
    for key in (self._accuracy_key, self._precision_key, self._recall_key):
      eval_metrics[key].update_state(
          y_true=labels, y_pred=class_ids, sample_weight=weights)
    logistic = self.predictions(logits, [_PRED.LOGISTIC])[_PRED.LOGISTIC]
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[self._prediction_mean_key], logistic, weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[self._label_mean_key], labels, weights)
    eval_metrics[self._accuracy_baseline_key].update_state()
    auc_weights = tf.cast(weights, tf.float32) * tf.ones_like(logistic)
    for key in (self._auc_key, self._auc_pr_key):
      eval_metrics[key].update_state(
          y_true=labels, y_pred=logistic, sample_weight=auc_weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    classification.update_threshold_metrics(
        eval_metrics,
        (self._accuracy_keys, self._precision_keys, self._recall_keys),
        labels, logistic, weights)
    return eval_metrics

  def _export_outputs(self, predictions):
    """serving_default and `classification` classify, `regression` returns
    the logistic, `predict` every prediction."""
    return classification.export_outputs(
        predictions, 2, self._label_vocabulary,
        regression_value=predictions[_PRED.LOGISTIC])


class _AccuracyBaseline(tf.keras.metrics.Metric):
  """max(label mean, 1 - label mean): always predicting the commoner class.

  Reads the `label/mean` metric's running total and count, so it needs no
  state of its own; `update_state()` is a no-op kept so the metric has the
  one update op an eval metric is expected to have.
  """

  def __init__(self, label_mean_metric,
               name=metric_keys.MetricKeys.ACCURACY_BASELINE):
    super().__init__(name=name)
    self._label_mean = label_mean_metric

  def update_state(self):  # pylint: disable=arguments-differ
    return tf.constant(0.)  # Keras traces update_state: it returns a Tensor.

  def result(self):
    total = self._label_mean.total
    count = self._label_mean.count
    return tf.math.divide_no_nan(tf.maximum(total, count - total), count)

  def reset_state(self):
    pass
