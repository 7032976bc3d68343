"""The head each canned estimator builds from its own arguments.

As 2.15's `head_utils.binary_or_multi_class_head`: `n_classes == 2` gets a
`BinaryClassHead`, more a `MultiClassHead`; regressors a `RegressionHead`.
The v1 classes (`tf.compat.v1.estimator.*`) take a
`tf.compat.v1.losses.Reduction`; it is mapped here to the Keras reduction the
heads take (SUM and SUM_OVER_BATCH_SIZE have one; the others raise).
"""

from harness._tf import tf
from harness.canned import head as heads_lib

__all__ = [
    "binary_or_multi_class_head",
    "regression_head",
    "keras_reduction",
]

# tf.compat.v1.losses.Reduction value -> tf.keras.losses.Reduction value.
_V1_TO_KERAS = {
    tf.compat.v1.losses.Reduction.SUM: tf.keras.losses.Reduction.SUM,
    tf.compat.v1.losses.Reduction.SUM_OVER_BATCH_SIZE:
        tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
}


def keras_reduction(loss_reduction):
  """Returns the Keras reduction for a v1 or Keras `loss_reduction` value."""
  keras_values = (tf.keras.losses.Reduction.SUM,
                  tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
                  tf.keras.losses.Reduction.AUTO,
                  tf.keras.losses.Reduction.NONE)
  if loss_reduction in keras_values:
    return loss_reduction
  if loss_reduction in _V1_TO_KERAS:
    return _V1_TO_KERAS[loss_reduction]
  raise ValueError(
      f"loss_reduction={loss_reduction!r} is not supported by harness's "
      "canned estimators: they take tf.compat.v1.losses.Reduction.SUM or "
      "SUM_OVER_BATCH_SIZE, or the tf.keras.losses.Reduction of the same "
      "name. Fix: pass one of those (the 2.15 defaults are SUM for "
      "tf.compat.v1.estimator.* and SUM_OVER_BATCH_SIZE for tf.estimator.*).")


def binary_or_multi_class_head(n_classes, weight_column, label_vocabulary,
                               loss_reduction):
  """Returns the classifier head 2.15 chose for these arguments."""
  heads = heads_lib
  loss_reduction = keras_reduction(loss_reduction)
  if n_classes == 2:
    return heads.BinaryClassHead(
        weight_column=weight_column, label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction)
  return heads.MultiClassHead(
      n_classes, weight_column=weight_column,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)


def regression_head(label_dimension, weight_column, loss_reduction):
  """Returns the regression head 2.15's regressors used."""
  return heads_lib.RegressionHead(
      label_dimension=label_dimension, weight_column=weight_column,
      loss_reduction=keras_reduction(loss_reduction))
