"""Parsing specs for `tf.io.parse_example` that include the label and weight.

As tf.estimator 2.15's `classifier_parse_example_spec` and
`regressor_parse_example_spec`::

    spec = parsing.classifier_parse_example_spec(
        feature_columns, label_key="clicked", label_dtype=tf.int64,
        weight_column="example_weight")
    features = tf.io.parse_example(serialized, spec)
    labels = features.pop("clicked")

Feature columns may be v1 (`tf.compat.v1.feature_column`) or v2
(`tf.feature_column`) columns.
"""

from harness import errors
from harness._tf import tf

__all__ = ["classifier_parse_example_spec", "regressor_parse_example_spec"]


def _feature_column_classes():
  # Every tf.feature_column.* column on TF 2.x derives from one of these.
  v2_base = type(tf.feature_column.numeric_column("x")).__mro__
  return tuple(
      cls for cls in v2_base
      if cls.__name__ in ("FeatureColumn", "_FeatureColumn"))


def _numeric_column_class():
  return type(tf.feature_column.numeric_column("x"))


def _parse_spec_of_columns(feature_columns):
  if isinstance(feature_columns, (str, bytes)) or not hasattr(
      feature_columns, "__iter__"):
    raise errors.ConfigError(
        f"feature_columns must be an iterable of feature columns, given: "
        f"{feature_columns!r}.")
  feature_columns = list(feature_columns)
  classes = _feature_column_classes()
  for column in feature_columns:
    if not isinstance(column, classes):
      raise errors.ConfigError(
          "All feature_columns must be _FeatureColumn instances. Given: "
          f"{column!r}. Fix: build it with tf.feature_column.*.")
  return tf.compat.v1.feature_column.make_parse_example_spec(feature_columns)


def _add_label_and_weight(parsing_spec, label_key, label_spec, weight_column):
  """Adds the label's and the weight's FixedLenFeature to `parsing_spec`."""
  if label_key is None:
    raise errors.ConfigError(
        "label_key must be set (the tf.Example key holding the label), "
        "given: None.")
  if label_key in parsing_spec:
    raise errors.ConfigError(
        "label should not be used as feature. label_key: "
        f"{label_key}, features: {parsing_spec.keys()}")
  parsing_spec[label_key] = label_spec
  if weight_column is None:
    return parsing_spec
  if isinstance(weight_column, str):
    weight_column = tf.feature_column.numeric_column(weight_column)
  if not isinstance(weight_column, _numeric_column_class()):
    raise errors.ConfigError(
        "weight_column should be an instance of "
        "tf.feature_column.numeric_column. Given type: "
        f"{type(weight_column)} value: {weight_column}")
  if weight_column.key in parsing_spec:
    raise errors.ConfigError(
        "weight_column should not be used as feature. weight_column: "
        f"{weight_column.key}, features: {parsing_spec.keys()}")
  parsing_spec.update(weight_column.parse_example_spec)
  return parsing_spec


def classifier_parse_example_spec(feature_columns, label_key,
                                  label_dtype=tf.int64, label_default=None,
                                  weight_column=None):
  """Returns the parse_example spec of a classifier's features, label, weight.

  Args:
    feature_columns: iterable of feature columns.
    label_key: the tf.Example key of the label.
    label_dtype: the label's dtype (tf.string with a label vocabulary).
    label_default: the label of examples that lack `label_key`; None makes
      a missing label an error.
    weight_column: None, a key, or a `numeric_column` for example weights.

  Returns:
    A dict from key to `FixedLenFeature` / `VarLenFeature`; the label is
    `FixedLenFeature((1,), label_dtype, label_default)`.

  Raises:
    ConfigError (ValueError): the label or weight key is also a feature, a
      column is not a feature column, `weight_column` is not numeric, or
      `label_key` is None.
  """
  parsing_spec = _parse_spec_of_columns(feature_columns)
  label_spec = tf.io.FixedLenFeature((1,), label_dtype, label_default)
  return _add_label_and_weight(parsing_spec, label_key, label_spec,
                               weight_column)


def regressor_parse_example_spec(feature_columns, label_key,
                                 label_dtype=tf.float32, label_default=None,
                                 label_dimension=1, weight_column=None):
  """Returns the parse_example spec of a regressor's features, label, weight.

  Args:
    feature_columns: iterable of feature columns.
    label_key: the tf.Example key of the label.
    label_dtype: the label's dtype.
    label_default: the label of examples that lack `label_key`; None makes
      a missing label an error.
    label_dimension: regression targets per example.
    weight_column: None, a key, or a `numeric_column` for example weights.

  Returns:
    A dict from key to `FixedLenFeature` / `VarLenFeature`; the label is
    `FixedLenFeature((label_dimension,), label_dtype, label_default)`.

  Raises:
    ConfigError (ValueError): as `classifier_parse_example_spec`.
  """
  parsing_spec = _parse_spec_of_columns(feature_columns)
  label_spec = tf.io.FixedLenFeature(
      (label_dimension,), label_dtype, label_default)
  return _add_label_and_weight(parsing_spec, label_key, label_spec,
                               weight_column)
