"""The DNN tower: hidden layers and logits, with 2.15's variable names.

`dnn_logits` builds it for the DNN estimators (`canned/dnn.py`), the DNN
part of the combined ones (`canned/dnn_linear_combined.py`) and 2.15's
`dnn_logit_fn_builder` (`canned/logit_fns.py`): v2 as 2.15's Keras model
named "dnn" (`dnn/hiddenlayer_0/kernel`), v1 with tf.compat.v1 layers under
a partitioned variable scope; each layer's activations are summarised as
2.15 did (`layer_summary`).
"""

import contextlib

import tf_keras

from harness._tf import tf
from harness.canned import feature_columns as feature_columns_lib
from harness.spec import ModeKeys

__all__ = ["dnn_logits", "layer_summary"]


def layer_summary(value, tag):
  """2.15's activation summaries of a layer: zero fraction, histogram."""
  tf.compat.v1.summary.scalar(f"{tag}/fraction_of_zero_values",
                              tf.math.zero_fraction(value))
  tf.compat.v1.summary.histogram(f"{tag}/activation", value)


def dnn_logits(features, mode, *, units, hidden_units, feature_columns,
               activation_fn, dropout, batch_norm, v1=False,
               partitioner=None, input_layer_partitioner=None,
               scope="dnn"):
  """Builds the DNN tower under the variable scope `dnn`.

  Args:
    features: dict of feature tensors.
    mode: a `ModeKeys` value (dropout and batch-norm training behaviour).
    units: logits dimension.
    hidden_units: units of each hidden layer.
    feature_columns: dense feature columns (v2: `DenseFeatures`; v1:
      `input_layer`).
    activation_fn: hidden-layer activation.
    dropout: drop probability, or None.
    batch_norm: batch normalisation after each hidden layer.
    v1: build as 2.15's v1 classes did (v1 layers and input layer).
    partitioner: v1 only: partitioner of the `dnn` variable scope.
    input_layer_partitioner: v1 only: partitioner of the input layer.
    scope: the scope to open, or None for the caller's (v1
      `dnn_logit_fn_builder`).

  Returns:
    (logits, trainable variables, update ops).
  """
  if not isinstance(units, int):
    raise ValueError(f"units must be an int.  Given type: {type(units)}")
  training = mode == ModeKeys.TRAIN
  activation_fn = activation_fn or tf.nn.relu
  init = tf.compat.v1.glorot_uniform_initializer()
  layers, update_ops = [], []
  with _dnn_scope(v1, features, partitioner, scope) as scope_name:
    # 2.15's tags: "dnn/dnn/hiddenlayer_0/..." (v1), "dnn/hiddenlayer_0/...".
    tag_scope = f"{scope_name}/" if v1 and scope_name else ""
    if v1:
      with tf.compat.v1.variable_scope("input_from_feature_columns",
                                       partitioner=input_layer_partitioner):
        net = feature_columns_lib.input_layer(features, feature_columns)
    else:
      input_layer = feature_columns_lib.dense_features(feature_columns)
      layers.append(input_layer)
      net = input_layer(features, training=training)
    for layer_id, width in enumerate(hidden_units):
      name = f"hiddenlayer_{layer_id}"
      dense = _dense(width, activation_fn, init, name, v1)
      layers.append(dense)
      net = dense(net)
      if dropout is not None and training:
        net = _dropout(dropout, v1)(net, training=True)
      if batch_norm:
        norm = _batch_norm(layer_id, v1)
        layers.append(norm)
        net = norm(net, training=training)
        update_ops.extend(norm.updates)
      layer_summary(net, f"{tag_scope}{name}")
    logits_layer = _dense(units, None, init, "logits", v1)
    layers.append(logits_layer)
    logits = logits_layer(net)
    layer_summary(logits, f"{tag_scope}logits")
  return logits, _trainable_variables(layers, v1, scope_name), update_ops


def _trainable_variables(layers, v1, scope_name):
  """The tower's variables: its layers' (v2), or its scope's (v1)."""
  if v1:
    return tf.compat.v1.get_collection(
        tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES,
        scope=(scope_name + "/") if scope_name else None)
  variables = []
  for layer in layers:
    variables.extend(v for v in layer.trainable_variables
                     if all(v is not seen for seen in variables))
  return variables


@contextlib.contextmanager
def _dnn_scope(v1, features, partitioner, name):
  """Yields the name of the `dnn` scope the tower is built in.

  v1 (2.15's v1 layers): a variable scope, whose partitioner the layers
  inherit. v2 (2.15's Keras model named "dnn"): a name scope only, so Keras
  layers name their variables `dnn/...` while `get_variable` users keep
  2.15's names (shared embeddings: `<a>_<b>_shared_embedding`, top level).
  """
  if name is None:
    yield tf.compat.v1.get_variable_scope().name
  elif v1:
    with tf.compat.v1.variable_scope(
        name, values=tuple(features.values()),
        partitioner=partitioner) as scope:
      yield scope.name
  else:
    with tf.compat.v1.name_scope(name) as scope:
      yield scope.rstrip("/")


def _dense(width, activation, init, name, v1):
  if v1:
    return tf.compat.v1.layers.Dense(width, activation=activation,
                                     kernel_initializer=init, name=name)
  return tf_keras.layers.Dense(width, activation=activation,
                               kernel_initializer=init, name=name)


def _dropout(rate, v1):
  if v1:
    return tf.compat.v1.layers.Dropout(rate=rate)
  return tf_keras.layers.Dropout(rate=rate)


def _batch_norm(layer_id, v1):
  # 2.15 used momentum 0.999 (0.99 "crashes on certain problems").
  if v1:
    return tf.compat.v1.layers.BatchNormalization(
        momentum=0.999, trainable=True, name=f"batchnorm_{layer_id}")
  return tf_keras.layers.BatchNormalization(
      momentum=0.999, trainable=True,
      name=f"hiddenlayer_{layer_id}/batchnorm_{layer_id}")
