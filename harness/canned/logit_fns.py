"""tf.compat.v1.estimator.experimental's logit_fn helpers (as 2.15).

A logit_fn maps features to logits; a model_fn then hands the logits to a
head. 2.15's v1 canned model_fns opened the variable scope (`dnn`,
`linear`) and called the builders' logit_fns inside it, and so should
their callers here::

    logit_fn = dnn_logit_fn_builder(
        units=3, hidden_units=[8], feature_columns=columns,
        activation_fn=tf.nn.relu, dropout=None, input_layer_partitioner=None,
        batch_norm=False)
    with tf.compat.v1.variable_scope("dnn"):
      logits = call_logit_fn(logit_fn, features, mode, params, config)
"""

from harness._tf import tf
from harness.canned import dnn_tower
from harness.canned import linear
from harness.spec import fn_args

__all__ = ["call_logit_fn", "dnn_logit_fn_builder", "linear_logit_fn_builder"]


def call_logit_fn(logit_fn, features, mode, params, config):
  """Calls `logit_fn` with the arguments it takes; checks what it returns.

  Args:
    logit_fn: `fn(features[, mode][, params][, config])`.
    features, mode, params, config: passed on when `logit_fn` names them
      (`features` always).

  Returns:
    The logits: a `Tensor`, or a dict from string to `Tensor`.

  Raises:
    ValueError: `logit_fn` returned anything else.
  """
  args = fn_args(logit_fn)
  given = {"mode": mode, "params": params, "config": config}
  result = logit_fn(features=features,
                    **{k: v for k, v in given.items() if k in args})
  is_dict = isinstance(result, dict) and all(
      isinstance(k, str) and isinstance(v, tf.Tensor)
      for k, v in result.items())
  if not (is_dict or isinstance(result, tf.Tensor)):
    raise ValueError(
        "logit_fn should return a Tensor or a dictionary mapping strings to "
        f"Tensors.  logit_fn returned: {result!r}")
  return result


def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn,
                         dropout, input_layer_partitioner, batch_norm):
  """Returns `dnn_logit_fn(features, mode)`: 2.15's v1 DNN tower.

  Build it inside the caller's variable scope (2.15's v1 DNN opened `dnn`),
  so variables are named `<scope>/hiddenlayer_0/kernel`, ...

  Raises:
    ValueError: `units` is not an int.
  """
  if not isinstance(units, int):
    raise ValueError(f"units must be an int.  Given type: {type(units)}")

  def dnn_logit_fn(features, mode):
    logits, _, _ = dnn_tower.dnn_logits(
        features, mode, units=units, hidden_units=hidden_units,
        feature_columns=feature_columns, activation_fn=activation_fn,
        dropout=dropout, batch_norm=batch_norm, v1=True,
        input_layer_partitioner=input_layer_partitioner, scope=None)
    return logits

  return dnn_logit_fn


def linear_logit_fn_builder(units, feature_columns, sparse_combiner="sum"):
  """Returns `linear_logit_fn(features)`: 2.15's linear model.

  Build it inside the caller's variable scope (2.15's v1 Linear opened
  `linear`), so variables are named `<scope>/linear_model/<column>/weights`.
  """

  def linear_logit_fn(features):
    logits, _ = linear.linear_logits(
        features, units=units, feature_columns=feature_columns,
        sparse_combiner=sparse_combiner, scope=None)
    return logits

  return linear_logit_fn
