"""Every use the canned estimators make of TensorFlow's feature columns.

TF 2.21 still ships `tf.feature_column` (marked for removal), and each kind
the canned estimators take works in their graphs (numeric, bucketized,
categorical with vocabulary list/file/identity/hash, crossed, embedding,
indicator, weighted, shared embeddings; checked by
tests/test_canned_estimators.py), so harness adds no column of its own.
This module is the one place a later TF release can break::

    net = feature_columns.dense_features(columns)(features)   # v2 DNN input
    net = feature_columns.input_layer(features, columns)      # v1 DNN input
    logits = feature_columns.linear_model(features, columns, units=3)
"""

import tf_keras

from harness._tf import tf

__all__ = ["check_v2", "dense_features", "input_layer", "linear_model"]


def check_v2(columns):
  """Raises 2.15's error for a v1-only column given to a v2 class.

  (In TF 2.21 `tf.compat.v1.feature_column.*` mostly returns v2 columns; the
  v1-only one left is `shared_embedding_columns`.)
  """
  v2_class = tf.__internal__.feature_column.FeatureColumn
  for column in columns:
    if not isinstance(column, v2_class):
      raise ValueError(
          "Received a feature column from TensorFlow v1, but this is a "
          "TensorFlow v2 Estimator. Please either use v2 feature columns "
          "(accessible via tf.feature_column.* in TF 2.x) with this "
          "Estimator, or switch to a v1 Estimator for use with v1 feature "
          "columns (accessible via tf.compat.v1.estimator.* and "
          f"tf.compat.v1.feature_column.*, respectively. Given: {column!r}")


def dense_features(columns, name="input_from_feature_columns/input_layer"):
  """The v2 classes' DNN input: a Keras `DenseFeatures` layer.

  Its variables are named `<name scope>/<name>/<column>/...`; it also takes
  v2 shared embeddings, which `input_layer` refuses.
  """
  return tf_keras.layers.DenseFeatures(list(columns), name=name)


def input_layer(features, columns):
  """The v1 classes' DNN input (`tf.compat.v1.feature_column.input_layer`)."""
  return tf.compat.v1.feature_column.input_layer(features, list(columns))


def linear_model(features, columns, *, units, sparse_combiner):
  """Linear logits (`tf.compat.v1.feature_column.linear_model`).

  Variables `<variable scope>/linear_model/<column>/weights` and
  `.../bias_weights`, as 2.15's v1 and v2 linear models named them.
  """
  return tf.compat.v1.feature_column.linear_model(
      features, list(columns), units=units, sparse_combiner=sparse_combiner)
