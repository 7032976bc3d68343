"""Eval metric names the canned heads report (tf.estimator 2.15's strings).

    eval_results = estimator.evaluate(input_fn)
    eval_results[MetricKeys.AUC]  # "auc"
"""

__all__ = ["MetricKeys"]


class MetricKeys:
  """Metric key strings, as `tf.estimator`'s canned `metric_keys`."""
  LOSS = "loss"
  LOSS_MEAN = "average_loss"
  LOSS_REGULARIZATION = "regularization_loss"

  ACCURACY = "accuracy"
  PRECISION = "precision"
  RECALL = "recall"
  # Best accuracy from always predicting one class; a trained model beats it.
  ACCURACY_BASELINE = "accuracy_baseline"
  AUC = "auc"
  AUC_PR = "auc_precision_recall"
  LABEL_MEAN = "label/mean"
  PREDICTION_MEAN = "prediction/mean"

  # Per threshold in (0, 1), applied to the logistic output.
  ACCURACY_AT_THRESHOLD = "accuracy/positive_threshold_%g"
  PRECISION_AT_THRESHOLD = "precision/positive_threshold_%g"
  RECALL_AT_THRESHOLD = "recall/positive_threshold_%g"

  # Per constraint on a competing metric, in (0, 1).
  PRECISION_AT_RECALL = "precision_at_recall_%g"
  RECALL_AT_PRECISION = "recall_at_precision_%g"
  SENSITIVITY_AT_SPECFICITY = "sensitivity_at_specficity_%g"
  SPECFICITY_AT_SENSITIVITY = "specficity_at_sensitivity_%g"

  # Per class id.
  PROBABILITY_MEAN_AT_CLASS = "probability_mean/class%d"
  AUC_AT_CLASS = "auc/class%d"
  AUC_PR_AT_CLASS = "auc_precision_recall/class%d"

  # Per class name (with a label vocabulary).
  PROBABILITY_MEAN_AT_NAME = "probability_mean/%s"
  AUC_AT_NAME = "auc/%s"
  AUC_PR_AT_NAME = "auc_precision_recall/%s"
