"""LinearClassifier, LinearRegressor, LinearEstimator: 2.15's linear models.

    est = harness.LinearClassifier(
        feature_columns=[tf.feature_column.numeric_column("x", shape=[64])],
        weight_column="w", model_dir="/tmp/linear")

Variables are named as 2.15 named them (`linear/linear_model/<column>/
weights`, `linear/linear_model/bias_weights`). The v2 classes (these names)
train with a Keras Ftrl (learning rate 0.2 for a string name); the `*V1`
classes are `tf.compat.v1.estimator.*`.
"""

import math

import tf_keras

from harness import estimator
from harness._tf import tf
from harness.canned import default_heads
from harness.canned import dnn
from harness.canned import feature_columns as feature_columns_lib
from harness.canned import train_ops
from harness.spec import ModeKeys

__all__ = [
    "LinearClassifier", "LinearRegressor", "LinearEstimator",
    "LinearClassifierV1", "LinearRegressorV1", "LinearEstimatorV1",
    "fraction_of_zero", "linear_logits", "linear_model_fn_v2",
]

# 2.15's learning rate for a string optimizer of the linear classes.
_LEARNING_RATE = 0.2
_SUM_OVER_BATCH = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_V1_SUM = tf.compat.v1.losses.Reduction.SUM
_COMBINERS = ("mean", "sqrtn", "sum")


def default_learning_rate(feature_columns):
  """2.15's Ftrl learning rate for `optimizer=None`: min(0.2, 1/sqrt(n))."""
  return min(_LEARNING_RATE, 1.0 / math.sqrt(len(feature_columns)))


def linear_logits(features, *, units, feature_columns, sparse_combiner="sum",
                  partitioner=None, scope="linear"):
  """Builds the linear model under the variable scope `linear`.

  `scope=None` builds in the caller's variable scope (the v1
  `linear_logit_fn_builder`, whose caller opened `linear`).

  Returns:
    (logits, trainable variables: the weights and the bias).
  """
  if sparse_combiner not in _COMBINERS:
    raise ValueError(
        f"sparse_combiner={sparse_combiner!r} is not supported. Choose one of "
        f"{_COMBINERS} (how a multivalent categorical column is reduced).")
  with tf.compat.v1.variable_scope(
      scope or tf.compat.v1.get_variable_scope(),
      values=tuple(features.values()),
      partitioner=partitioner) as scope:
    logits = feature_columns_lib.linear_model(
        features, feature_columns, units=units,
        sparse_combiner=sparse_combiner)
  variables = tf.compat.v1.get_collection(
      tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES,
      scope=(scope.name + "/") if scope.name else None)
  _summaries(variables, units)
  return logits, variables


def _summaries(variables, units):
  bias = [v for v in variables if v.op.name.endswith("/bias_weights")]
  weights = [v for v in variables if v.op.name.endswith("/weights")]
  if bias:
    if units > 1:
      tf.compat.v1.summary.histogram("bias", bias[0])
    else:
      tf.compat.v1.summary.scalar("bias", bias[0][0])
  if weights:
    tf.compat.v1.summary.scalar("fraction_of_zero_weights",
                                fraction_of_zero(weights))


def fraction_of_zero(variables):
  """The fraction of zero entries over all `variables` (the model's sparsity).

  tf.estimator 2.15's `linear._compute_fraction_of_zero`. Entries are counted
  in int64, so a variable of over 2**31 entries counts right; an empty
  variable adds nothing, and only empty ones give NaN.

  Args:
    variables: a list (or a list of lists) of variables or Tensors, of any
      numeric dtypes.

  Returns:
    A float32 scalar Tensor.

  Raises:
    ValueError: `variables` is empty.
  """
  variables = tf.nest.flatten(variables)
  if not variables:
    raise ValueError(
        "Empty list of variables: there is no sparsity to compute. Fix: pass "
        "the model's weight variables.")
  sizes = [tf.size(v, out_type=tf.int64) for v in variables]
  zeros = tf.math.add_n([
      size - tf.math.count_nonzero(v, dtype=tf.int64)
      for size, v in zip(sizes, variables)])
  total = tf.math.add_n(sizes)
  fraction = tf.math.divide(tf.cast(zeros, tf.float64),
                            tf.cast(total, tf.float64))
  return tf.cast(fraction, tf.float32)


def linear_model_fn_v2(features, labels, mode, head, feature_columns,
                       optimizer, config, sparse_combiner="sum"):
  """The model_fn of the v2 linear classes."""
  del config  # Unused, as in 2.15.
  dnn.check_features(features)
  feature_columns_lib.check_v2(feature_columns)
  logits, variables = linear_logits(
      features, units=head.logits_dimension, feature_columns=feature_columns,
      sparse_combiner=sparse_combiner)
  opt = None
  if mode == ModeKeys.TRAIN:
    if optimizer is None:
      optimizer = tf_keras.optimizers.legacy.Ftrl(
          learning_rate=default_learning_rate(feature_columns))
    opt = train_ops.keras_optimizer(optimizer, _LEARNING_RATE)
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=opt,
      trainable_variables=variables, logits=logits)


def linear_model_fn_v1(features, labels, mode, head, feature_columns,
                       optimizer, partitioner, config, sparse_combiner="sum"):
  """The model_fn of the v1 linear classes (2.15's `linear._linear_model_fn`;
  a v1 head gets the optimizer, see `train_ops.v1_head_spec`)."""
  dnn.check_features(features)
  logits, variables = linear_logits(
      features, units=head.logits_dimension, feature_columns=feature_columns,
      sparse_combiner=sparse_combiner,
      partitioner=partitioner or dnn.v1_partitioners(config)[1])
  if mode == ModeKeys.TRAIN and optimizer is None:
    optimizer = tf.compat.v1.train.FtrlOptimizer(
        default_learning_rate(feature_columns))
  return train_ops.v1_head_spec(head, features, labels, mode, logits,
                               optimizer, _LEARNING_RATE, variables)


def validate_sdca_optimizer(feature_columns, n_classes, optimizer,
                            sparse_combiner):
  """2.15's check of a LinearSDCA optimizer given to a LinearClassifier.

  2.15 checked only `LinearSDCA` optimizers; harness has none
  (`tf.estimator.experimental.LinearSDCA` raises NotSupportedError), so
  every optimizer harness accepts passes, as any other did in 2.15.
  """
  del feature_columns, n_classes, optimizer, sparse_combiner


def _model_fn_for(head, feature_columns, optimizer, sparse_combiner, v1=False,
                  partitioner=None):
  """The model_fn every linear class passes to `Estimator` (v1: the v1 one)."""
  columns = tuple(feature_columns or [])

  def _model_fn(features, labels, mode, config):
    if v1:
      return linear_model_fn_v1(features, labels, mode, head, columns,
                                optimizer, partitioner, config,
                                sparse_combiner)
    return linear_model_fn_v2(features, labels, mode, head, columns,
                              optimizer, config, sparse_combiner)

  return _model_fn


class LinearClassifier(estimator.Estimator):
  """tf.estimator.LinearClassifier: logistic / softmax regression.

  Args:
    feature_columns: any `tf.feature_column`s; categorical ones get one
      weight per id (no embedding needed).
    model_dir, n_classes, weight_column, label_vocabulary, config,
      warm_start_from, loss_reduction: as `DNNClassifier`'s.
    optimizer: 'Ftrl' (default, learning rate 0.2) or another name, a
      `tf.keras.optimizers.legacy` instance, or a callable returning one.
    sparse_combiner: how a multivalent categorical column's weights are
      reduced per example: 'sum' (default), 'mean' or 'sqrtn'.
  """

  def __init__(self, feature_columns, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None, optimizer="Ftrl",
               config=None, warm_start_from=None,
               loss_reduction=_SUM_OVER_BATCH, sparse_combiner="sum"):
    head = default_heads.binary_or_multi_class_head(
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, feature_columns, optimizer,
                               sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(estimator.Estimator):
  """tf.estimator.LinearRegressor: linear regression (squared error).

  Arguments as `LinearClassifier`'s, with `label_dimension` for `n_classes`
  and `label_vocabulary`.
  """

  def __init__(self, feature_columns, model_dir=None, label_dimension=1,
               weight_column=None, optimizer="Ftrl", config=None,
               warm_start_from=None, loss_reduction=_SUM_OVER_BATCH,
               sparse_combiner="sum"):
    head = default_heads.regression_head(label_dimension, weight_column,
                                         loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, feature_columns, optimizer,
                               sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimator(estimator.Estimator):
  """tf.estimator.LinearEstimator: a linear model with a given head.

  Arguments as `LinearClassifier`'s; `head` decides the loss, predictions,
  metrics and export signatures.
  """

  def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl",
               config=None, sparse_combiner="sum", warm_start_from=None):
    super().__init__(
        model_fn=_model_fn_for(head, feature_columns, optimizer,
                               sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearClassifierV1(estimator.Estimator):
  """tf.compat.v1.estimator.LinearClassifier (v1 optimizers, SUM)."""

  def __init__(self, feature_columns, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None, optimizer="Ftrl",
               config=None, partitioner=None, warm_start_from=None,
               loss_reduction=_V1_SUM, sparse_combiner="sum"):
    head = default_heads.binary_or_multi_class_head(
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, feature_columns, optimizer,
                               sparse_combiner, v1=True,
                               partitioner=partitioner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressorV1(estimator.Estimator):
  """tf.compat.v1.estimator.LinearRegressor (v1 optimizers, SUM)."""

  def __init__(self, feature_columns, model_dir=None, label_dimension=1,
               weight_column=None, optimizer="Ftrl", config=None,
               partitioner=None, warm_start_from=None,
               loss_reduction=_V1_SUM, sparse_combiner="sum"):
    head = default_heads.regression_head(label_dimension, weight_column,
                                         loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, feature_columns, optimizer,
                               sparse_combiner, v1=True,
                               partitioner=partitioner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimatorV1(estimator.Estimator):
  """tf.compat.v1.estimator.LinearEstimator (v1 optimizers)."""

  def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl",
               config=None, partitioner=None, sparse_combiner="sum",
               warm_start_from=None):
    super().__init__(
        model_fn=_model_fn_for(head, feature_columns, optimizer,
                               sparse_combiner, v1=True,
                               partitioner=partitioner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)
