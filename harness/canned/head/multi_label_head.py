"""`MultiLabelHead`: independent sigmoid per class (tf.estimator 2.15).

    head = MultiLabelHead(n_classes=3, thresholds=[0.5],
                          classes_for_class_based_metrics=[0, 2])

Labels are a multi-hot [D0.., n_classes] Tensor, or a SparseTensor of class
ids (or of strings, with `label_vocabulary`). Eval reports average_loss, auc,
auc_precision_recall, per threshold accuracy/precision/recall, and per class
probability_mean / auc / auc_precision_recall.
"""

from harness import errors
from harness._tf import tf
from harness.canned.head import base_head
from harness.canned.head import classification
from harness.canned.head import metric_keys
from harness.canned.head import prediction_keys

__all__ = ["MultiLabelHead"]

_KEYS = metric_keys.MetricKeys
_PRED = prediction_keys.PredictionKeys


class MultiLabelHead(base_head.CannedHead):
  """Multi-label classification: sigmoid cross-entropy averaged over classes.

  Args:
    n_classes: number of classes, > 1.
    weight_column: a feature key or `numeric_column` holding example weights.
    thresholds: floats in (0, 1): accuracy/precision/recall per threshold.
    label_vocabulary: n_classes strings, for string SparseTensor labels.
    loss_reduction: a `tf.keras.losses.Reduction` other than NONE.
    loss_fn: optional `loss_fn(labels, logits[, features])` -> [D0.., 1].
    classes_for_class_based_metrics: class ids (or vocabulary strings) that
      get per-class metrics.
    name: suffixes metric keys with "/name" and scopes the ops.
  """

  def __init__(self, n_classes, weight_column=None, thresholds=None,
               label_vocabulary=None,
               loss_reduction=tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn=None, classes_for_class_based_metrics=None, name=None):
    if n_classes is None or n_classes < 2:
      raise errors.ConfigError(
          f"n_classes must be > 1 for multi-label classification. Given: "
          f"{n_classes}")
    thresholds = tuple(thresholds) if thresholds else tuple()
    for threshold in thresholds:
      if threshold <= 0.0 or threshold >= 1.0:
        raise errors.ConfigError(
            f"thresholds must be in (0, 1) range. Given: {threshold}")
    if label_vocabulary is not None:
      if not isinstance(label_vocabulary, (list, tuple)):
        raise errors.ConfigError(
            "label_vocabulary must be a list or tuple. Given type: "
            f"{type(label_vocabulary)}")
      if len(label_vocabulary) != n_classes:
        raise errors.ConfigError(
            f"Length of label_vocabulary must be n_classes ({n_classes}). "
            f"Given: {len(label_vocabulary)}")
    if loss_fn:
      base_head.validate_loss_fn_args(loss_fn)
    base_head.validate_loss_reduction(loss_reduction)
    class_ids = self._class_ids_for_metrics(
        classes_for_class_based_metrics, label_vocabulary, n_classes)
    self._n_classes = n_classes
    self._weight_column = weight_column
    self._thresholds = thresholds
    self._label_vocabulary = label_vocabulary
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._classes_for_class_based_metrics = class_ids
    self._name = name
    key = self.summary_key
    self._loss_mean_key = key(_KEYS.LOSS_MEAN)
    self._auc_key = key(_KEYS.AUC)
    self._auc_pr_key = key(_KEYS.AUC_PR)
    self._loss_regularization_key = key(_KEYS.LOSS_REGULARIZATION)
    self._accuracy_keys = tuple(
        key(_KEYS.ACCURACY_AT_THRESHOLD % t) for t in thresholds)
    self._precision_keys = tuple(
        key(_KEYS.PRECISION_AT_THRESHOLD % t) for t in thresholds)
    self._recall_keys = tuple(
        key(_KEYS.RECALL_AT_THRESHOLD % t) for t in thresholds)
    if label_vocabulary is None:
      names = [(_KEYS.PROBABILITY_MEAN_AT_CLASS % c, _KEYS.AUC_AT_CLASS % c,
                _KEYS.AUC_PR_AT_CLASS % c) for c in class_ids]
    else:
      names = [(_KEYS.PROBABILITY_MEAN_AT_NAME % label_vocabulary[c],
                _KEYS.AUC_AT_NAME % label_vocabulary[c],
                _KEYS.AUC_PR_AT_NAME % label_vocabulary[c])
               for c in class_ids]
    self._prob_keys = tuple(key(n[0]) for n in names)
    self._auc_keys = tuple(key(n[1]) for n in names)
    self._auc_pr_keys = tuple(key(n[2]) for n in names)

  @staticmethod
  def _class_ids_for_metrics(classes, label_vocabulary, n_classes):
    if not classes:
      return tuple()
    classes = tuple(classes)
    if isinstance(classes[0], str):
      if not label_vocabulary:
        raise errors.ConfigError(
            "label_vocabulary must be provided when "
            "classes_for_class_based_metrics are strings.")
      return tuple(label_vocabulary.index(c) for c in classes)
    for class_id in classes:
      if class_id < 0 or class_id >= n_classes:
        raise errors.ConfigError(
            "All classes_for_class_based_metrics must be in range "
            f"[0, {n_classes - 1}]. Given: {class_id}")
    return classes

  @property
  def logits_dimension(self):
    return self._n_classes

  def _processed_labels(self, logits, labels):
    """Multi-hot int64 labels [D0.., n_classes]."""
    if labels is None:
      raise errors.ModelFnError(base_head.LABEL_NONE_ERR_MSG)
    if isinstance(labels, tf.sparse.SparseTensor):
      if labels.dtype == tf.string:
        if self._label_vocabulary is None:
          raise errors.ModelFnError(
              "String SparseTensor labels need label_vocabulary. Fix: pass "
              "label_vocabulary=[...] (n_classes strings) to MultiLabelHead.")
        ids = base_head.class_id_table(self._label_vocabulary).lookup(
            labels.values)
        labels = tf.sparse.SparseTensor(labels.indices, ids,
                                        labels.dense_shape)
      elif not labels.values.dtype.is_integer:
        raise errors.ModelFnError(
            f"Labels dtype should be integer. Instead got {labels.dtype}.")
      checked = base_head.check_label_range(
          labels.values, self._n_classes,
          message=("labels must be an integer SparseTensor with values in "
                   f"[0, {self._n_classes})"))
      with tf.control_dependencies([checked]):
        processed = tf.sparse.to_indicator(labels, self._n_classes)
      processed = tf.cast(processed, tf.int64)
    else:
      processed = base_head.check_label_range(
          tf.convert_to_tensor(labels), 2,
          message="labels must be an integer indicator Tensor with values in "
                  "[0, 1]")
    return base_head.check_dense_labels_match_logits_and_reshape(
        labels=processed, logits=logits,
        expected_labels_dimension=self.logits_dimension)

  def _unweighted_loss_and_weights(self, logits, processed_labels, features):
    if self._loss_fn:
      unweighted_loss = base_head.call_loss_fn(
          self._loss_fn, labels=processed_labels, logits=logits,
          features=features, expected_loss_dim=1)
    else:
      unweighted_loss = tf.compat.v1.losses.sigmoid_cross_entropy(
          multi_class_labels=processed_labels, logits=logits,
          reduction=tf.compat.v1.losses.Reduction.NONE)
      unweighted_loss = tf.reduce_mean(unweighted_loss, axis=-1,
                                       keepdims=True)
    weights = base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    return unweighted_loss, weights

  def predictions(self, logits, keys=None):
    """logits, probabilities, classes (every class string), or `keys`."""
    valid_keys = [_PRED.LOGITS, _PRED.PROBABILITIES, _PRED.CLASSES]
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
        predictions[_PRED.PROBABILITIES] = tf.sigmoid(
            logits, name=_PRED.PROBABILITIES)
      if _PRED.CLASSES in keys:
        predictions[_PRED.CLASSES] = base_head.all_classes(
            logits, self._n_classes, self._label_vocabulary)
    return predictions

  def metrics(self, regularization_losses=None):
    """The Keras metric objects eval reports (not yet updated)."""
    metrics_lib = tf.keras.metrics
    with tf.compat.v1.name_scope("metrics"):
      eval_metrics = {
          self._loss_mean_key: metrics_lib.Mean(name=_KEYS.LOSS_MEAN),
          self._auc_key: metrics_lib.AUC(name=_KEYS.AUC),
          self._auc_pr_key: metrics_lib.AUC(curve="PR", name=_KEYS.AUC_PR),
      }
      if regularization_losses is not None:
        eval_metrics[self._loss_regularization_key] = metrics_lib.Mean(
            name=_KEYS.LOSS_REGULARIZATION)
      classification.add_threshold_metrics(
          eval_metrics, self._thresholds, self._accuracy_keys,
          self._precision_keys, self._recall_keys)
      for i in range(len(self._classes_for_class_based_metrics)):
        eval_metrics[self._prob_keys[i]] = metrics_lib.Mean(
            name=self._prob_keys[i])
        eval_metrics[self._auc_keys[i]] = metrics_lib.AUC(
            name=self._auc_keys[i])
        eval_metrics[self._auc_pr_keys[i]] = metrics_lib.AUC(
            curve="PR", name=self._auc_pr_keys[i])
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    """Updates every metric of `metrics()` with one batch."""
    logits, processed, unweighted_loss, weights = self._checked_labels_and_loss(
        logits, labels, features)
    probabilities = self.predictions(
        logits, [_PRED.PROBABILITIES])[_PRED.PROBABILITIES]
    eval_metrics[self._loss_mean_key].update_state(
        values=unweighted_loss, sample_weight=weights)
    for key in (self._auc_key, self._auc_pr_key):
      eval_metrics[key].update_state(
          y_true=processed, y_pred=probabilities, sample_weight=weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    classification.update_threshold_metrics(
        eval_metrics,
        (self._accuracy_keys, self._precision_keys, self._recall_keys),
        processed, probabilities, weights)
    for i, class_id in enumerate(self._classes_for_class_based_metrics):
      class_probabilities = probabilities[..., class_id:class_id + 1]
      class_labels = processed[..., class_id:class_id + 1]
      base_head.update_metric_with_broadcast_weights(
          eval_metrics[self._prob_keys[i]], class_probabilities, weights)
      for key in (self._auc_keys[i], self._auc_pr_keys[i]):
        eval_metrics[key].update_state(
            y_true=class_labels, y_pred=class_probabilities,
            sample_weight=weights)
    return eval_metrics

  def _export_outputs(self, predictions):
    """serving_default and `classification` classify, `predict` returns
    every prediction."""
    return classification.export_outputs(
        predictions, self._n_classes, self._label_vocabulary)
