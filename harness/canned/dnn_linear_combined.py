"""DNNLinearCombined{Classifier,Regressor,Estimator}: 2.15's wide & deep.

    est = harness.DNNLinearCombinedClassifier(
        linear_feature_columns=[shade],
        dnn_feature_columns=[x, tf.feature_column.embedding_column(shade, 4)],
        dnn_hidden_units=[16], n_classes=10)

The logits are the sum of a linear model (scope `linear`, default Ftrl with
learning rate min(0.005, 1/sqrt(#linear columns))) and a DNN (scope `dnn`,
default Adagrad with learning rate 0.001), each trained by its own
optimizer. As in 2.15, the DNN optimizer's `iterations` is the global step
(the linear one keeps its own `training/Ftrl/iter`); with no DNN part the
linear optimizer counts the steps.
"""

import math

from harness import estimator
from harness._tf import tf
from harness.canned import default_heads
from harness.canned import dnn
from harness.canned import dnn_tower
from harness.canned import feature_columns as feature_columns_lib
from harness.canned import linear
from harness.canned import optimizers
from harness.canned import train_ops
from harness.spec import ModeKeys

__all__ = [
    "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
    "DNNLinearCombinedEstimator", "DNNLinearCombinedClassifierV1",
    "DNNLinearCombinedRegressorV1", "DNNLinearCombinedEstimatorV1",
    "dnn_linear_combined_model_fn_v2",
]

# 2.15's historical default learning rates.
_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005
_SUM_OVER_BATCH = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_V1_SUM = tf.compat.v1.losses.Reduction.SUM


def _linear_learning_rate(num_columns):
  return min(_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(num_columns))


def _check_columns(linear_feature_columns, dnn_feature_columns,
                   dnn_hidden_units):
  if not linear_feature_columns and not dnn_feature_columns:
    raise ValueError(
        "Either linear_feature_columns or dnn_feature_columns must be "
        "defined.")
  if dnn_feature_columns and not dnn_hidden_units:
    raise ValueError(
        "dnn_hidden_units must be defined when dnn_feature_columns is "
        "specified.")


def combined_model_fn(features, labels, mode, head, *, linear_feature_columns,
                      linear_optimizer, dnn_feature_columns, dnn_optimizer,
                      dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                      batch_norm, linear_sparse_combiner,
                      loss_reduction=_SUM_OVER_BATCH, v1=False,
                      input_layer_partitioner=None, config=None):
  """The model_fn of the DNNLinearCombined classes (v2, or v1 if `v1`)."""
  dnn.check_features(features)
  dnn_partitioner = None
  if not v1:
    feature_columns_lib.check_v2(tuple(linear_feature_columns) +
                                 tuple(dnn_feature_columns))
  if v1:
    dnn_partitioner, default_input_partitioner = dnn.v1_partitioners(config)
    input_layer_partitioner = (input_layer_partitioner or
                               default_input_partitioner)
  _check_columns(linear_feature_columns, dnn_feature_columns,
                 dnn_hidden_units)
  training = mode == ModeKeys.TRAIN
  parts = []  # (logits, variables, optimizer, learning rate, update ops)
  if dnn_feature_columns:
    logits, variables, updates = dnn_tower.dnn_logits(
        features, mode, units=head.logits_dimension,
        hidden_units=dnn_hidden_units, feature_columns=dnn_feature_columns,
        activation_fn=dnn_activation_fn, dropout=dnn_dropout,
        batch_norm=batch_norm, v1=v1, partitioner=dnn_partitioner,
        input_layer_partitioner=input_layer_partitioner)
    parts.append((logits, variables, dnn_optimizer, _DNN_LEARNING_RATE,
                  updates))
  if linear_feature_columns:
    logits, variables = linear.linear_logits(
        features, units=head.logits_dimension,
        feature_columns=linear_feature_columns,
        sparse_combiner=linear_sparse_combiner,
        partitioner=input_layer_partitioner)
    dnn_tower.layer_summary(logits, "linear")
    parts.append((logits, variables, linear_optimizer,
                  _linear_learning_rate(len(linear_feature_columns)), []))
  logits = parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0]
  train_op_fn = None
  if training:
    train_op_fn = (_v1_train_op_fn(parts) if v1 else
                   _v2_train_op_fn(parts, loss_reduction))
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, logits=logits,
      train_op_fn=train_op_fn)


def dnn_linear_combined_model_fn_v2(
    features, labels, mode, head, linear_feature_columns=None,
    linear_optimizer="Ftrl", dnn_feature_columns=None,
    dnn_optimizer="Adagrad", dnn_hidden_units=None,
    dnn_activation_fn=tf.nn.relu, dnn_dropout=None, config=None,
    batch_norm=False, linear_sparse_combiner="sum",
    loss_reduction=_SUM_OVER_BATCH):
  """The v2 wide & deep model_fn with 2.15's arguments and defaults.

  tf.estimator 2.15's `dnn_linear_combined._dnn_linear_combined_model_fn_v2`,
  for a model_fn of your own around any head: the classes above call the
  same code.
  """
  return combined_model_fn(
      features, labels, mode, head,
      linear_feature_columns=tuple(linear_feature_columns or ()),
      linear_optimizer=linear_optimizer,
      dnn_feature_columns=tuple(dnn_feature_columns or ()),
      dnn_optimizer=dnn_optimizer, dnn_hidden_units=dnn_hidden_units,
      dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
      batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner,
      loss_reduction=loss_reduction, config=config)


def _v2_train_op_fn(parts, loss_reduction):
  # The first part (the DNN if there is one) counts the global step.
  opts = [train_ops.keras_optimizer(opt, rate, count_steps=(i == 0))
          for i, (_, _, opt, rate, _) in enumerate(parts)]

  def train_op_fn(loss):
    loss = train_ops.scale_for_replicas(loss, loss_reduction)
    updates = []
    for opt, (_, variables, _, _, extra) in zip(opts, parts):
      updates.extend(opt.get_updates(loss, variables))
      updates.extend(extra)
    return tf.group(*updates)

  return train_op_fn


def _v1_train_op_fn(parts):
  pairs = [(optimizers.get_optimizer_instance(opt, rate), variables)
           for _, variables, opt, rate, _ in parts]
  updates = [op for part in parts for op in part[4]]
  return train_ops.v1_train_op_fn(pairs, updates)


def _model_fn_for(head, v1, loss_reduction, input_layer_partitioner,
                  **kwargs):
  """Returns the `model_fn(features, labels, mode, config)` of a class."""

  def _model_fn(features, labels, mode, config):
    return combined_model_fn(
        features, labels, mode, head, v1=v1,
        loss_reduction=default_heads.keras_reduction(loss_reduction),
        input_layer_partitioner=input_layer_partitioner, config=config,
        **kwargs)

  return _model_fn


def _parts(linear_feature_columns, linear_optimizer, dnn_feature_columns,
           dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
           batch_norm, linear_sparse_combiner):
  linear_feature_columns = tuple(linear_feature_columns or [])
  dnn_feature_columns = tuple(dnn_feature_columns or [])
  _check_columns(linear_feature_columns, dnn_feature_columns,
                 dnn_hidden_units)
  return dict(
      linear_feature_columns=linear_feature_columns,
      linear_optimizer=linear_optimizer,
      dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
      dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn,
      dnn_dropout=dnn_dropout, batch_norm=batch_norm,
      linear_sparse_combiner=linear_sparse_combiner)


class DNNLinearCombinedClassifier(estimator.Estimator):
  """tf.estimator.DNNLinearCombinedClassifier: wide & deep classification.

  Args:
    model_dir, n_classes, weight_column, label_vocabulary, config,
      warm_start_from, loss_reduction, batch_norm: as `DNNClassifier`'s.
    linear_feature_columns: columns of the linear ("wide") part.
    linear_optimizer: its optimizer ('Ftrl', learning rate
      min(0.005, 1/sqrt(len(linear_feature_columns)))).
    dnn_feature_columns: dense columns of the DNN ("deep") part.
    dnn_optimizer: its optimizer ('Adagrad', learning rate 0.001).
    dnn_hidden_units, dnn_activation_fn, dnn_dropout: as `DNNClassifier`'s
      `hidden_units`, `activation_fn`, `dropout`.
    linear_sparse_combiner: as `LinearClassifier`'s `sparse_combiner`.

  Raises:
    ValueError: neither part has columns, or the DNN part has no
      `dnn_hidden_units`.
  """

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer="Ftrl", dnn_feature_columns=None,
               dnn_optimizer="Adagrad", dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
               weight_column=None, label_vocabulary=None, config=None,
               warm_start_from=None, loss_reduction=_SUM_OVER_BATCH,
               batch_norm=False, linear_sparse_combiner="sum"):
    parts = _parts(linear_feature_columns, linear_optimizer,
                   dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                   dnn_activation_fn, dnn_dropout, batch_norm,
                   linear_sparse_combiner)
    head = default_heads.binary_or_multi_class_head(
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, False, loss_reduction, None, **parts),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(estimator.Estimator):
  """tf.estimator.DNNLinearCombinedRegressor: wide & deep regression.

  Arguments as `DNNLinearCombinedClassifier`'s, with `label_dimension` for
  `n_classes` and `label_vocabulary`.
  """

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer="Ftrl", dnn_feature_columns=None,
               dnn_optimizer="Adagrad", dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               label_dimension=1, weight_column=None, config=None,
               warm_start_from=None, loss_reduction=_SUM_OVER_BATCH,
               batch_norm=False, linear_sparse_combiner="sum"):
    parts = _parts(linear_feature_columns, linear_optimizer,
                   dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                   dnn_activation_fn, dnn_dropout, batch_norm,
                   linear_sparse_combiner)
    head = default_heads.regression_head(label_dimension, weight_column,
                                         loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, False, loss_reduction, None, **parts),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(estimator.Estimator):
  """tf.estimator.DNNLinearCombinedEstimator: wide & deep with a head.

  Arguments as `DNNLinearCombinedClassifier`'s (2.15 took no
  `warm_start_from` or `loss_reduction` here); `head` decides the loss,
  predictions, metrics and export signatures.
  """

  def __init__(self, head, model_dir=None, linear_feature_columns=None,
               linear_optimizer="Ftrl", dnn_feature_columns=None,
               dnn_optimizer="Adagrad", dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, config=None,
               batch_norm=False, linear_sparse_combiner="sum"):
    parts = _parts(linear_feature_columns, linear_optimizer,
                   dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                   dnn_activation_fn, dnn_dropout, batch_norm,
                   linear_sparse_combiner)
    reduction = getattr(head, "loss_reduction", _SUM_OVER_BATCH)
    super().__init__(
        model_fn=_model_fn_for(head, False, reduction, None, **parts),
        model_dir=model_dir, config=config)


class DNNLinearCombinedClassifierV1(estimator.Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedClassifier (v1 optimizers)."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer="Ftrl", dnn_feature_columns=None,
               dnn_optimizer="Adagrad", dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
               weight_column=None, label_vocabulary=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=_V1_SUM,
               batch_norm=False, linear_sparse_combiner="sum"):
    parts = _parts(linear_feature_columns, linear_optimizer,
                   dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                   dnn_activation_fn, dnn_dropout, batch_norm,
                   linear_sparse_combiner)
    head = default_heads.binary_or_multi_class_head(
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, True, loss_reduction,
                               input_layer_partitioner, **parts),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressorV1(estimator.Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedRegressor (v1 optimizers)."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer="Ftrl", dnn_feature_columns=None,
               dnn_optimizer="Adagrad", dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               label_dimension=1, weight_column=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=_V1_SUM,
               batch_norm=False, linear_sparse_combiner="sum"):
    parts = _parts(linear_feature_columns, linear_optimizer,
                   dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                   dnn_activation_fn, dnn_dropout, batch_norm,
                   linear_sparse_combiner)
    head = default_heads.regression_head(label_dimension, weight_column,
                                         loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, True, loss_reduction,
                               input_layer_partitioner, **parts),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedEstimatorV1(estimator.Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedEstimator (v1 optimizers)."""

  def __init__(self, head, model_dir=None, linear_feature_columns=None,
               linear_optimizer="Ftrl", dnn_feature_columns=None,
               dnn_optimizer="Adagrad", dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               input_layer_partitioner=None, config=None, batch_norm=False,
               linear_sparse_combiner="sum"):
    parts = _parts(linear_feature_columns, linear_optimizer,
                   dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                   dnn_activation_fn, dnn_dropout, batch_norm,
                   linear_sparse_combiner)
    reduction = getattr(head, "loss_reduction", _SUM_OVER_BATCH)
    super().__init__(
        model_fn=_model_fn_for(head, True, reduction,
                               input_layer_partitioner, **parts),
        model_dir=model_dir, config=config)
