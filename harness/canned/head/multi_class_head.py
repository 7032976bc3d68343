"""`MultiClassHead`: softmax cross-entropy over n_classes > 2 (tf.estimator 2.15).

    head = MultiClassHead(n_classes=10, label_vocabulary=None)
    spec = head.create_estimator_spec(features, mode, logits, labels,
                                      optimizer=opt, trainable_variables=vs)

Eval reports accuracy and average_loss (plus regularization_loss when given).
"""

from harness import errors
from harness._tf import tf
from harness.canned.head import base_head
from harness.canned.head import classification
from harness.canned.head import metric_keys
from harness.canned.head import prediction_keys

__all__ = ["MultiClassHead"]

_KEYS = metric_keys.MetricKeys
_PRED = prediction_keys.PredictionKeys


class MultiClassHead(base_head.CannedHead):
  """Single-label multi-class classification with softmax cross-entropy.

  Args:
    n_classes: number of classes, > 2.
    weight_column: a feature key or `numeric_column` holding example weights.
    label_vocabulary: list/tuple of the class strings; else labels are
      integer ids in [0, n_classes).
    loss_reduction: a `tf.keras.losses.Reduction` other than NONE.
    loss_fn: optional `loss_fn(labels, logits[, features])` -> [D0.., 1].
    name: suffixes metric keys with "/name" and scopes the ops.
  """

  def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
               loss_reduction=tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn=None, name=None):
    if n_classes is None:
      raise errors.ConfigError("n_classes cannot be None")
    base_head.validate_n_classes(n_classes)
    if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                       (list, tuple)):
      raise errors.ConfigError(
          "label_vocabulary should be a list or a tuple. Given type: "
          f"{type(label_vocabulary)}")
    if label_vocabulary is not None and len(label_vocabulary) != n_classes:
      raise errors.ConfigError(
          f"label_vocabulary has {len(label_vocabulary)} entries but "
          f"n_classes is {n_classes}. Fix: give one string per class.")
    base_head.validate_loss_reduction(loss_reduction)
    if loss_fn:
      base_head.validate_loss_fn_args(loss_fn)
    self._n_classes = n_classes
    self._weight_column = weight_column
    self._label_vocabulary = label_vocabulary
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name
    self._loss_mean_key = self.summary_key(_KEYS.LOSS_MEAN)
    self._accuracy_key = self.summary_key(_KEYS.ACCURACY)
    self._loss_regularization_key = self.summary_key(
        _KEYS.LOSS_REGULARIZATION)

  @property
  def logits_dimension(self):
    return self._n_classes

  def _processed_labels(self, logits, labels):
    """Labels as int ids in [0, n_classes), shaped [D0.., 1]."""
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._label_vocabulary is None:
      if not labels.dtype.is_integer:
        raise errors.ModelFnError(
            f"Labels dtype should be integer. Instead got {labels.dtype}.")
      label_ids = labels
    else:
      if labels.dtype != tf.string:
        raise errors.ModelFnError(
            "Labels dtype should be string if there is a vocabulary. Instead "
            f"got {labels.dtype}")
      label_ids = base_head.class_id_table(self._label_vocabulary).lookup(
          labels)
    return base_head.check_label_range(label_ids, self._n_classes)

  def _unweighted_loss_and_weights(self, logits, label_ids, features):
    if self._loss_fn:
      unweighted_loss = base_head.call_loss_fn(
          self._loss_fn, labels=label_ids, logits=logits, features=features,
          expected_loss_dim=1)
    else:
      unweighted_loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
          labels=label_ids, logits=logits,
          reduction=tf.compat.v1.losses.Reduction.NONE)
      # Back to [D0.., 1] so it lines up with the weights.
      unweighted_loss = tf.expand_dims(unweighted_loss, axis=-1)
    weights = base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    return unweighted_loss, weights

  def predictions(self, logits, keys=None):
    """logits, probabilities, class_ids, classes, all_class_ids, all_classes
    (or just `keys`)."""
    valid_keys = [_PRED.LOGITS, _PRED.PROBABILITIES, _PRED.CLASS_IDS,
                  _PRED.CLASSES, _PRED.ALL_CLASS_IDS, _PRED.ALL_CLASSES]
    if keys:
      base_head.check_prediction_keys(keys, valid_keys)
    else:
      keys = valid_keys
    logits = base_head.check_logits_final_dim(logits, self.logits_dimension)
    predictions = {}
    with tf.compat.v1.name_scope("predictions"):
      if _PRED.LOGITS in keys:
        predictions[_PRED.LOGITS] = logits
      if _PRED.PROBABILITIES in keys:
        predictions[_PRED.PROBABILITIES] = tf.nn.softmax(
            logits, name=_PRED.PROBABILITIES)
      classification.add_class_predictions(
          predictions, keys, logits, self._label_vocabulary)
      if _PRED.ALL_CLASS_IDS in keys:
        predictions[_PRED.ALL_CLASS_IDS] = base_head.all_class_ids(
            logits, self._n_classes)
      if _PRED.ALL_CLASSES in keys:
        predictions[_PRED.ALL_CLASSES] = base_head.all_classes(
            logits, self._n_classes, self._label_vocabulary)
    return predictions

  def metrics(self, regularization_losses=None):
    """The Keras metric objects eval reports (not yet updated)."""
    with tf.compat.v1.name_scope("metrics"):
      eval_metrics = {
          self._loss_mean_key: tf.keras.metrics.Mean(name=_KEYS.LOSS_MEAN),
          self._accuracy_key: tf.keras.metrics.Accuracy(name=_KEYS.ACCURACY),
      }
      if regularization_losses is not None:
        eval_metrics[self._loss_regularization_key] = tf.keras.metrics.Mean(
            name=_KEYS.LOSS_REGULARIZATION)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    """Updates every metric of `metrics()` with one batch."""
    class_ids = self.predictions(logits, [_PRED.CLASS_IDS])[_PRED.CLASS_IDS]
    logits, label_ids, unweighted_loss, weights = self._checked_labels_and_loss(
        logits, labels, features)
    eval_metrics[self._loss_mean_key].update_state(
        values=unweighted_loss, sample_weight=weights)
    eval_metrics[self._accuracy_key].update_state(
        y_true=label_ids, y_pred=class_ids, sample_weight=weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    return eval_metrics

  def _export_outputs(self, predictions):
    """serving_default and `classification` classify, `predict` returns
    every prediction."""
    return classification.export_outputs(
        predictions, self._n_classes, self._label_vocabulary)
