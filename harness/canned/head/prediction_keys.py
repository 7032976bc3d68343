"""Prediction dict keys the canned heads return (tf.estimator 2.15's strings).

    for pred in estimator.predict(input_fn):
      pred[PredictionKeys.CLASS_IDS]  # "class_ids"
"""

__all__ = ["PredictionKeys"]


class PredictionKeys:
  """Prediction key strings, as `tf.estimator`'s canned `prediction_keys`."""
  CLASSES = "classes"
  CLASS_IDS = "class_ids"
  ALL_CLASSES = "all_classes"
  ALL_CLASS_IDS = "all_class_ids"
  LOGISTIC = "logistic"
  LOGITS = "logits"
  PREDICTIONS = "predictions"
  PROBABILITIES = "probabilities"
  TOP_K = "top_k"
