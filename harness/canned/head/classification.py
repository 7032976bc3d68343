"""What the classification heads (binary, multi-class, multi-label) share:
the class_ids/classes predictions, the per-threshold metrics and the export
signatures.

    with tf.compat.v1.name_scope("predictions"):
      classification.add_class_predictions(predictions, keys, logits, vocab)
"""

from harness.canned.head import base_head
from harness.canned.head import prediction_keys
from harness.export import outputs
from harness._tf import tf

_PRED = prediction_keys.PredictionKeys


def add_class_predictions(predictions, keys, class_logits, label_vocabulary):
  """Adds class_ids / classes (argmax of `class_logits`) where `keys` ask.

  Call inside the head's "predictions" name scope: the op names are 2.15's.
  """
  if _PRED.CLASS_IDS not in keys and _PRED.CLASSES not in keys:
    return
  class_ids = tf.expand_dims(
      tf.argmax(class_logits, axis=-1, name=_PRED.CLASS_IDS), -1)
  if _PRED.CLASS_IDS in keys:
    predictions[_PRED.CLASS_IDS] = class_ids
  if _PRED.CLASSES in keys:
    if label_vocabulary is not None:
      classes = base_head.class_string_table(label_vocabulary).lookup(
          class_ids)
    else:
      classes = tf.strings.as_string(class_ids, name="str_classes")
    predictions[_PRED.CLASSES] = classes


def add_threshold_metrics(eval_metrics, thresholds, accuracy_keys,
                          precision_keys, recall_keys):
  """Adds an accuracy, a precision and a recall metric per threshold."""
  metrics_lib = tf.keras.metrics
  for i, threshold in enumerate(thresholds):
    eval_metrics[accuracy_keys[i]] = metrics_lib.BinaryAccuracy(
        name=accuracy_keys[i], threshold=threshold)
    eval_metrics[precision_keys[i]] = metrics_lib.Precision(
        name=precision_keys[i], thresholds=threshold)
    eval_metrics[recall_keys[i]] = metrics_lib.Recall(
        name=recall_keys[i], thresholds=threshold)


def update_threshold_metrics(eval_metrics, threshold_keys, labels,
                             probabilities, weights):
  """Updates the metrics `add_threshold_metrics` added, one batch;
  `threshold_keys` is (accuracy_keys, precision_keys, recall_keys)."""
  for keys in zip(*threshold_keys):
    for key in keys:
      eval_metrics[key].update_state(
          y_true=labels, y_pred=probabilities, sample_weight=weights)


def export_outputs(predictions, n_classes, label_vocabulary,
                   regression_value=None):
  """serving_default and `classification` classify (plus `regression` when
  `regression_value` is given), `predict` returns every prediction."""
  classifier = base_head.classification_output(
      scores=predictions[_PRED.PROBABILITIES], n_classes=n_classes,
      label_vocabulary=label_vocabulary)
  signatures = {
      base_head.DEFAULT_SERVING_KEY: classifier,
      base_head.CLASSIFY_SERVING_KEY: classifier,
  }
  if regression_value is not None:
    signatures[base_head.REGRESS_SERVING_KEY] = outputs.RegressionOutput(
        value=regression_value)
  signatures[base_head.PREDICT_SERVING_KEY] = outputs.PredictOutput(
      predictions)
  return signatures
