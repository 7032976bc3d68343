"""The weight column of a head: its tensor, checked against the logits.

tf.estimator 2.15 kept `get_weights_and_check_match_logits` in `base_head`,
which hands it on under that name::

    weights = get_weights_and_check_match_logits(
        features=features, weight_column="w", logits=logits)
"""

from harness import errors
from harness._tf import tf

__all__ = ["get_weights_and_check_match_logits"]


def _weight_tensor(features, weight_column):
  """The dense float weights named by `weight_column` (a key or a column)."""
  if isinstance(weight_column, str):
    weight_column = tf.feature_column.numeric_column(
        key=weight_column, shape=(1,))
  numeric_type = type(tf.feature_column.numeric_column("_"))
  if not isinstance(weight_column, numeric_type):
    raise TypeError(
        "Weight column must be either a string or NumericColumn. Given type: "
        f"{type(weight_column)}.")
  if weight_column.key not in features:
    raise errors.InputFnError(
        f"weight_column {weight_column.key!r} is not among the features "
        f"{sorted(features)}. Fix: return it from input_fn as "
        f"features[{weight_column.key!r}] (a float or int Tensor).")
  raw = tf.compat.v1.convert_to_tensor_or_sparse_tensor(  # numpy: as 2.15
      features[weight_column.key])
  if isinstance(raw, tf.sparse.SparseTensor) or not (
      raw.dtype.is_floating or raw.dtype.is_integer):
    raise errors.InputFnError(
        "Weight column should be castable to float. Given dtype: "
        f"{raw.dtype}")
  weights = tf.cast(raw, tf.float32)
  if weight_column.normalizer_fn is not None:
    weights = weight_column.normalizer_fn(weights)
  if weights.shape.ndims == 1:  # [D0] -> [D0, 1], as the column's shape (1,).
    weights = tf.expand_dims(weights, -1)
  return weights


def get_weights_and_check_match_logits(features, weight_column, logits,
                                       allow_per_logit_weights=False):
  """Returns weights shaped [D0..DN, 1] (or per logit), or 1. when unset."""
  if weight_column is None:
    return 1.
  err_msg = ("weights shape must be [D0, D1, ... DN]" +
             (", [D0, D1, ... DN, 1] or [D0, D1, ... DN, logits_dimension]"
              if allow_per_logit_weights else " or [D0, D1, ... DN, 1]"))
  with tf.compat.v1.name_scope("weights") as scope:
    weights = tf.cast(_weight_tensor(features, weight_column), tf.float32,
                      name="weights")
    weights_shape = tf.shape(weights, name="weights_shape")
    logits_shape = tf.shape(logits, name="logits_shape")
    data = ["logits_shape: ", logits_shape, "weights_shape: ", weights_shape]
    if (weights.shape.ndims is not None and logits.shape.ndims is not None
        and weights.shape.ndims == logits.shape.ndims - 1):  # [D0, ... DN]
      check = tf.compat.v1.debugging.assert_equal(
          logits_shape[:-1], weights_shape, message=err_msg, data=data)
      with tf.control_dependencies([check]):
        return tf.expand_dims(weights, -1, name=scope)
    supported = tf.concat([logits_shape[:-1], [1]], axis=0)
    if allow_per_logit_weights:
      check = tf.debugging.Assert(tf.reduce_any([
          tf.reduce_all(tf.equal(logits_shape, weights_shape)),
          tf.reduce_all(tf.equal(supported, weights_shape))]),
                                  data=[err_msg] + data)
    else:
      check = tf.compat.v1.debugging.assert_equal(
          supported, weights_shape, message=err_msg, data=data)
    with tf.control_dependencies([check]):
      return tf.identity(weights, name=scope)
