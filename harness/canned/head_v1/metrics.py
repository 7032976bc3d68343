"""The `tf.compat.v1.metrics` pairs the v1 heads report in EVAL.

Each function returns a `(value, update_op)` pair under the name scope
2.15 used, so the metric variables are named as there::

    eval_metric_ops["auc"] = metrics.auc(labels, logistic, weights, name="auc")
"""

from harness._tf import tf

__all__ = [
    "labels_mean", "predictions_mean", "accuracy_baseline", "auc",
    "accuracy_at_threshold", "precision_at_threshold",
    "recall_at_threshold",
]


def _broadcast(weights, values):
  if weights is None:
    return None
  return tf.compat.v2.__internal__.ops.broadcast_weights(weights, values)


def labels_mean(labels, weights=None, name=None):
  """Mean of the (0/1) labels."""
  with tf.compat.v1.name_scope(name, "labels_mean", (labels, weights)) as scope:
    labels = tf.cast(labels, tf.float32, name="labels")
    return tf.compat.v1.metrics.mean(
        labels, weights=_broadcast(weights, labels), name=scope)


def predictions_mean(predictions, weights=None, name=None):
  """Mean of the predictions (the logistic, or the regression value)."""
  with tf.compat.v1.name_scope(name, "predictions_mean",
                               (predictions, weights)) as scope:
    predictions = tf.cast(predictions, tf.float32, name="predictions")
    return tf.compat.v1.metrics.mean(
        predictions, weights=_broadcast(weights, predictions), name=scope)


def accuracy_baseline(mean_pair):
  """Accuracy of always predicting the majority class: max(m, 1 - m)."""
  with tf.compat.v1.name_scope(None, "accuracy_baseline", mean_pair):
    value, update_op = mean_pair
    return (tf.math.maximum(value, 1. - value, name="value"),
            tf.math.maximum(update_op, 1 - update_op, name="update_op"))


def auc(labels, predictions, weights=None, curve="ROC", name=None):
  with tf.compat.v1.name_scope(name, "auc",
                               (predictions, labels, weights)) as scope:
    predictions = tf.cast(predictions, tf.float32, name="predictions")
    return tf.compat.v1.metrics.auc(
        labels=labels, predictions=predictions,
        weights=_broadcast(weights, predictions), curve=curve, name=scope)


def accuracy_at_threshold(labels, predictions, weights, threshold, name=None):
  with tf.compat.v1.name_scope(name, f"accuracy_at_{threshold}",
                               (predictions, labels, weights)) as scope:
    threshold_predictions = tf.compat.v1.to_float(
        tf.math.greater_equal(predictions, threshold))
    return tf.compat.v1.metrics.accuracy(
        labels=labels, predictions=threshold_predictions, weights=weights,
        name=scope)


def _squeezed(metric_fn, labels, predictions, weights, threshold, scope):
  value, update_op = metric_fn(
      labels=labels, predictions=predictions, thresholds=(threshold,),
      weights=weights, name=scope)
  return tf.squeeze(value), tf.squeeze(update_op)


def precision_at_threshold(labels, predictions, weights, threshold, name=None):
  with tf.compat.v1.name_scope(name, f"precision_at_{threshold}",
                               (predictions, labels, weights)) as scope:
    return _squeezed(tf.compat.v1.metrics.precision_at_thresholds, labels,
                     predictions, weights, threshold, scope)


def recall_at_threshold(labels, predictions, weights, threshold, name=None):
  with tf.compat.v1.name_scope(name, f"recall_at_{threshold}",
                               (predictions, labels, weights)) as scope:
    return _squeezed(tf.compat.v1.metrics.recall_at_thresholds, labels,
                     predictions, weights, threshold, scope)
