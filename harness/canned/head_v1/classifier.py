"""The v1 classification heads: binary (sigmoid) and multi-class (softmax).

tf.estimator 2.15's `_BinaryLogisticHeadWithSigmoidCrossEntropyLoss` and
`_MultiClassHeadWithSoftmaxCrossEntropyLoss`, built by the factories below
(the `tensorflow_estimator.python.estimator.canned.head` names)::

    head = binary_logistic_head(thresholds=[0.3], weight_column="w")
    spec = head.create_estimator_spec(features=features, mode=mode,
                                      logits=logits, labels=labels,
                                      optimizer=optimizer)
"""

from harness import errors
from harness._tf import tf
from harness.canned.head import base_head
from harness.canned.head import class_labels
from harness.canned.head import metric_keys
from harness.canned.head import prediction_keys
from harness.canned.head_v1 import base
from harness.canned.head_v1 import metrics
from harness.export import outputs

__all__ = [
    "BinaryLogisticHead", "MultiClassHead", "binary_logistic_head",
    "multi_class_head", "binary_or_multi_class_head",
]

_KEYS = metric_keys.MetricKeys
_PRED = prediction_keys.PredictionKeys
_SUM = tf.compat.v1.losses.Reduction.SUM
_NONE = tf.compat.v1.losses.Reduction.NONE


def _check_vocabulary(label_vocabulary, error_cls):
  if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                     (list, tuple)):
    raise error_cls(
        "label_vocabulary should be a list or a tuple. Given type: "
        f"{type(label_vocabulary)}")


def _check_head_args(label_vocabulary, loss_reduction, loss_fn, error_cls):
  _check_vocabulary(label_vocabulary, error_cls)
  base.validate_loss_reduction(loss_reduction)
  if loss_fn:
    base_head.validate_loss_fn_args(loss_fn)


def _class_predictions(logits, class_logits, n_classes, label_vocabulary):
  """The predictions both classifiers share (ids, classes, all classes)."""
  class_ids = tf.expand_dims(
      tf.compat.v1.math.argmax(class_logits, axis=-1, name=_PRED.CLASS_IDS),
      axis=-1)
  if label_vocabulary:
    classes = class_labels.class_string_table(label_vocabulary).lookup(
        class_ids)
  else:
    classes = tf.strings.as_string(class_ids, name="str_classes")
  return {
      _PRED.LOGITS: logits,
      _PRED.CLASS_IDS: class_ids,
      _PRED.CLASSES: classes,
      _PRED.ALL_CLASS_IDS: class_labels.all_class_ids(logits, n_classes),
      _PRED.ALL_CLASSES: class_labels.all_classes(logits, n_classes,
                                                  label_vocabulary),
  }


def _export_outputs(predictions, n_classes, label_vocabulary, regress=None):
  classifier = class_labels.classification_output(
      scores=predictions[_PRED.PROBABILITIES], n_classes=n_classes,
      label_vocabulary=label_vocabulary)
  signatures = {base_head.DEFAULT_SERVING_KEY: classifier,
                base_head.CLASSIFY_SERVING_KEY: classifier}
  if regress is not None:
    signatures[base_head.REGRESS_SERVING_KEY] = outputs.RegressionOutput(
        value=regress)
  signatures[base_head.PREDICT_SERVING_KEY] = outputs.PredictOutput(
      predictions)
  return signatures


def _mean_metric(values, weights, name):
  return tf.compat.v1.metrics.mean(values=values, weights=weights, name=name)


class MultiClassHead(base.CannedHead):
  """Softmax cross-entropy over `n_classes` (> 2) classes (2.15's v1 head)."""

  def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
               loss_reduction=_SUM, loss_fn=None, name=None):
    if n_classes is None:
      raise errors.ConfigError("n_classes cannot be None")
    self._n_classes = base_head.validate_n_classes(n_classes)
    self._weight_column = weight_column
    self._label_vocabulary = label_vocabulary
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name

  @property
  def logits_dimension(self):
    return self._n_classes

  def _predictions_and_outputs(self, logits):
    predictions = _class_predictions(logits, logits, self._n_classes,
                                     self._label_vocabulary)
    predictions[_PRED.PROBABILITIES] = tf.compat.v1.nn.softmax(
        logits, name=_PRED.PROBABILITIES)
    return predictions, _export_outputs(predictions, self._n_classes,
                                        self._label_vocabulary)

  def _label_ids(self, labels):
    if self._label_vocabulary is None:
      if not labels.dtype.is_integer:
        raise errors.ModelFnError(
            f"Labels dtype should be integer. Instead got {labels.dtype}.")
      return class_labels.check_label_range(labels, self._n_classes)
    if labels.dtype != tf.string:
      raise errors.ModelFnError(
          "Labels dtype should be string if there is a vocabulary. Instead "
          f"got {labels.dtype}")
    ids = class_labels.class_id_table(self._label_vocabulary).lookup(labels)
    return class_labels.check_label_range(ids, self._n_classes)

  def create_loss(self, features, mode, logits, labels):
    """See `_Head`: sparse softmax cross-entropy, weighted and reduced."""
    del mode  # The same in every mode.
    logits = tf.convert_to_tensor(logits)
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    label_ids = self._label_ids(labels)
    if self._loss_fn:
      unweighted_loss = base_head.call_loss_fn(
          self._loss_fn, label_ids, logits, features, expected_loss_dim=1)
    else:
      unweighted_loss = tf.expand_dims(
          tf.compat.v1.losses.sparse_softmax_cross_entropy(
              labels=label_ids, logits=logits, reduction=_NONE), axis=-1)
    return self._loss_spec(unweighted_loss, self._weights(features, logits),
                           label_ids)

  def _metric_kwargs(self, predictions, loss_spec, regularization_loss):
    return {"labels": loss_spec.processed_labels,
            "class_ids": predictions[_PRED.CLASS_IDS],
            "weights": loss_spec.weights,
            "unreduced_loss": loss_spec.unreduced_loss,
            "regularization_loss": regularization_loss}

  def _eval_metric_ops(self, labels, class_ids, weights, unreduced_loss,
                       regularization_loss):
    """The EVAL metric pairs: average loss, accuracy (+ regularization)."""
    key = lambda k: base.summary_key(self._name, k)  # pylint: disable=unnecessary-lambda-assignment
    with tf.compat.v1.name_scope(None, "metrics"):
      ops = {
          key(_KEYS.LOSS_MEAN): _mean_metric(unreduced_loss, weights,
                                             _KEYS.LOSS_MEAN),
          key(_KEYS.ACCURACY): tf.compat.v1.metrics.accuracy(
              labels=labels, predictions=class_ids, weights=weights,
              name=_KEYS.ACCURACY),
      }
      if regularization_loss is not None:
        ops[key(_KEYS.LOSS_REGULARIZATION)] = _mean_metric(
            regularization_loss, None, _KEYS.LOSS_REGULARIZATION)
    return ops


class BinaryLogisticHead(base.CannedHead):
  """Sigmoid cross-entropy for two classes (2.15's v1 binary head)."""

  def __init__(self, weight_column=None, thresholds=None,
               label_vocabulary=None, loss_reduction=_SUM, loss_fn=None,
               name=None):
    self._weight_column = weight_column
    self._thresholds = tuple(thresholds) if thresholds else ()
    self._label_vocabulary = label_vocabulary
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name

  @property
  def logits_dimension(self):
    return 1

  def _predictions_and_outputs(self, logits):
    logistic = tf.math.sigmoid(logits, name=_PRED.LOGISTIC)
    two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1,
                                 name="two_class_logits")
    predictions = _class_predictions(logits, two_class_logits, 2,
                                     self._label_vocabulary)
    predictions[_PRED.LOGISTIC] = logistic
    predictions[_PRED.PROBABILITIES] = tf.compat.v1.nn.softmax(
        two_class_logits, name=_PRED.PROBABILITIES)
    return predictions, _export_outputs(predictions, 2,
                                        self._label_vocabulary,
                                        regress=logistic)

  def create_loss(self, features, mode, logits, labels):
    """See `_Head`: sigmoid cross-entropy, weighted and reduced."""
    del mode  # The same in every mode.
    logits = tf.convert_to_tensor(logits)
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._label_vocabulary is not None:
      labels = class_labels.class_id_table(self._label_vocabulary).lookup(
          labels)
    labels = class_labels.check_label_range(tf.cast(labels, tf.float32), 2)
    if self._loss_fn:
      unweighted_loss = base_head.call_loss_fn(
          self._loss_fn, labels, logits, features, expected_loss_dim=1)
    else:
      unweighted_loss = tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(
          labels=labels, logits=logits)
    return self._loss_spec(unweighted_loss, self._weights(features, logits),
                           labels)

  def _metric_kwargs(self, predictions, loss_spec, regularization_loss):
    return {"labels": loss_spec.processed_labels,
            "logits": predictions[_PRED.LOGITS],
            "logistic": predictions[_PRED.LOGISTIC],
            "class_ids": predictions[_PRED.CLASS_IDS],
            "weights": loss_spec.weights,
            "unreduced_loss": loss_spec.unreduced_loss,
            "regularization_loss": regularization_loss}

  def _eval_metric_ops(self, labels, logits, logistic, class_ids, weights,
                       unreduced_loss, regularization_loss):
    """2.15's binary EVAL metrics, plus three per threshold."""
    del logits  # Part of 2.15's signature; the metrics read `logistic`.
    key = lambda k: base.summary_key(self._name, k)  # pylint: disable=unnecessary-lambda-assignment
    v1_metrics = tf.compat.v1.metrics
    with tf.compat.v1.name_scope(None, "metrics"):
      labels_mean = metrics.labels_mean(labels, weights, _KEYS.LABEL_MEAN)
      ops = {key(_KEYS.LOSS_MEAN): _mean_metric(unreduced_loss, weights,
                                                _KEYS.LOSS_MEAN)}
      for metric_key, metric_fn in ((_KEYS.ACCURACY, v1_metrics.accuracy),
                                    (_KEYS.PRECISION, v1_metrics.precision),
                                    (_KEYS.RECALL, v1_metrics.recall)):
        ops[key(metric_key)] = metric_fn(
            labels=labels, predictions=class_ids, weights=weights,
            name=metric_key)
      ops[key(_KEYS.PREDICTION_MEAN)] = metrics.predictions_mean(
          logistic, weights, _KEYS.PREDICTION_MEAN)
      ops[key(_KEYS.LABEL_MEAN)] = labels_mean
      ops[key(_KEYS.ACCURACY_BASELINE)] = metrics.accuracy_baseline(
          labels_mean)
      ops[key(_KEYS.AUC)] = metrics.auc(labels, logistic, weights,
                                        name=_KEYS.AUC)
      ops[key(_KEYS.AUC_PR)] = metrics.auc(labels, logistic, weights,
                                           curve="PR", name=_KEYS.AUC_PR)
      if regularization_loss is not None:
        ops[key(_KEYS.LOSS_REGULARIZATION)] = _mean_metric(
            regularization_loss, None, _KEYS.LOSS_REGULARIZATION)
      for threshold in self._thresholds:
        for template, metric_fn in (
            (_KEYS.ACCURACY_AT_THRESHOLD, metrics.accuracy_at_threshold),
            (_KEYS.PRECISION_AT_THRESHOLD, metrics.precision_at_threshold),
            (_KEYS.RECALL_AT_THRESHOLD, metrics.recall_at_threshold)):
          name = template % threshold
          ops[key(name)] = metric_fn(labels, logistic, weights, threshold,
                                     name=name)
    return ops


def multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                     loss_reduction=_SUM, loss_fn=None, name=None):
  """2.15's `_multi_class_head_with_softmax_cross_entropy_loss`."""
  _check_head_args(label_vocabulary, loss_reduction, loss_fn,
                   errors.ConfigError)
  return MultiClassHead(
      n_classes=n_classes, weight_column=weight_column,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction,
      loss_fn=loss_fn, name=name)


def binary_logistic_head(weight_column=None, thresholds=None,
                         label_vocabulary=None, loss_reduction=_SUM,
                         loss_fn=None, name=None):
  """2.15's `_binary_logistic_head_with_sigmoid_cross_entropy_loss`."""
  thresholds = tuple(thresholds) if thresholds else ()
  _check_vocabulary(label_vocabulary, errors.ConfigTypeError)
  for threshold in thresholds:
    if threshold <= 0.0 or threshold >= 1.0:
      raise errors.ConfigError(f"thresholds not in (0, 1): {(thresholds,)}.")
  _check_head_args(None, loss_reduction, loss_fn, errors.ConfigError)
  return BinaryLogisticHead(
      weight_column=weight_column, thresholds=thresholds,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction,
      loss_fn=loss_fn, name=name)


def binary_or_multi_class_head(n_classes, weight_column, label_vocabulary,
                               loss_reduction):
  """2.15's `_binary_logistic_or_multi_class_head`."""
  if n_classes == 2:
    return binary_logistic_head(weight_column=weight_column,
                                label_vocabulary=label_vocabulary,
                                loss_reduction=loss_reduction)
  return multi_class_head(n_classes, weight_column=weight_column,
                          label_vocabulary=label_vocabulary,
                          loss_reduction=loss_reduction)
