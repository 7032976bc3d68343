"""DNNClassifier, DNNRegressor, DNNEstimator: tf.estimator 2.15's DNN models.

    est = harness.DNNClassifier(
        hidden_units=[32, 16],
        feature_columns=[tf.feature_column.numeric_column("x", shape=[64])],
        n_classes=10, model_dir="/tmp/dnn")
    est.train(input_fn, steps=1000)

Variables are named as 2.15 named them (`dnn/hiddenlayer_0/kernel`,
`dnn/input_from_feature_columns/input_layer/<column>_embedding/...`,
`dnn/logits/bias`), so model_dirs written by 2.15 restore by name. The v2
classes (these names) train with Keras optimizers; the `*V1` classes are
`tf.compat.v1.estimator.*` (v1 optimizers, loss reduction SUM).
"""

from harness import errors
from harness import estimator
from harness._tf import tf
from harness.canned import default_heads
from harness.canned import dnn_tower
from harness.canned import feature_columns as feature_columns_lib
from harness.canned import train_ops
from harness.spec import ModeKeys

__all__ = [
    "DNNClassifier", "DNNRegressor", "DNNEstimator",
    "DNNClassifierV1", "DNNRegressorV1", "DNNEstimatorV1",
    "dnn_model_fn_v2",
]

# 2.15's default learning rate of the v1 classes' string optimizers.
_LEARNING_RATE = 0.05
_SUM_OVER_BATCH = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_V1_SUM = tf.compat.v1.losses.Reduction.SUM


def check_features(features):
  if not isinstance(features, dict):
    raise ValueError("features should be a dictionary of `Tensor`s. "
                     f"Given type: {type(features)}")


def v1_partitioners(config):
  """Returns 2.15's v1 (layer, input layer) partitioners for `config`.

  One part per parameter server at most (so with no parameter servers each
  variable is one part, saved as `<name>/part_0` as 2.15's v1 classes did);
  the input layer is split only in slices of 64 MiB or more.
  """
  num_ps = config.num_ps_replicas if config else 0
  return (tf.compat.v1.min_max_variable_partitioner(max_partitions=num_ps),
          tf.compat.v1.min_max_variable_partitioner(
              max_partitions=num_ps, min_slice_size=64 << 20))


def dnn_model_fn_v2(features, labels, mode, head, hidden_units,
                    feature_columns, optimizer="Adagrad",
                    activation_fn=tf.nn.relu, dropout=None, config=None,
                    use_tpu=False, batch_norm=False):
  """The model_fn of the v2 DNN classes (a string optimizer: Keras lr)."""
  del config  # Unused, as in 2.15.
  if use_tpu:
    raise errors.NotSupportedError(
        "dnn_model_fn_v2(use_tpu=True): harness does not run TPUEstimator. "
        "Fix: pass use_tpu=False (the default).")
  check_features(features)
  feature_columns_lib.check_v2(feature_columns)
  logits, variables, update_ops = dnn_tower.dnn_logits(
      features, mode, units=head.logits_dimension, hidden_units=hidden_units,
      feature_columns=feature_columns, activation_fn=activation_fn,
      dropout=dropout, batch_norm=batch_norm)
  opt = (train_ops.keras_optimizer(optimizer) if mode == ModeKeys.TRAIN
         else None)
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=opt,
      logits=logits, trainable_variables=variables, update_ops=update_ops)


def dnn_model_fn_v1(features, labels, mode, head, hidden_units,
                    feature_columns, optimizer="Adagrad",
                    activation_fn=tf.nn.relu, dropout=None,
                    input_layer_partitioner=None, config=None,
                    use_tpu=False, batch_norm=False):
  """The model_fn of the v1 DNN classes (v1 optimizer, lr 0.05).

  2.15's `dnn._dnn_model_fn`. A v1 head (`harness.canned.head_v1`) gets the
  optimizer itself, as in 2.15 (it minimises its own loss: a DP head's
  per-example loss); a v2 head gets a `train_op_fn`.
  """
  if use_tpu:
    raise errors.NotSupportedError(
        "_dnn_model_fn(use_tpu=True): harness does not run TPUEstimator. "
        "Fix: pass use_tpu=False (the default).")
  check_features(features)
  partitioner, default_input_partitioner = v1_partitioners(config)
  logits, variables, update_ops = dnn_tower.dnn_logits(
      features, mode, units=head.logits_dimension, hidden_units=hidden_units,
      feature_columns=feature_columns, activation_fn=activation_fn,
      dropout=dropout, batch_norm=batch_norm, v1=True,
      partitioner=partitioner,
      input_layer_partitioner=(input_layer_partitioner or
                               default_input_partitioner))
  return train_ops.v1_head_spec(head, features, labels, mode, logits,
                               optimizer, _LEARNING_RATE, variables,
                               update_ops)


def _model_fn_for(head, hidden_units, feature_columns, optimizer,
                  activation_fn, dropout, batch_norm, v1=False,
                  input_layer_partitioner=None):
  """The model_fn every DNN class passes to `Estimator` (v1: the v1 one)."""
  columns = tuple(feature_columns or [])

  def _model_fn(features, labels, mode, config):
    if v1:
      return dnn_model_fn_v1(
          features, labels, mode, head, hidden_units, columns, optimizer,
          activation_fn, dropout, input_layer_partitioner, config,
          batch_norm=batch_norm)
    return dnn_model_fn_v2(
        features, labels, mode, head, hidden_units, columns, optimizer,
        activation_fn, dropout, config, batch_norm=batch_norm)

  return _model_fn


class DNNClassifier(estimator.Estimator):
  """tf.estimator.DNNClassifier: a feed-forward classifier.

  Sigmoid cross-entropy for `n_classes=2`, softmax otherwise; arguments and
  defaults are 2.15's.

  Args:
    hidden_units: units of each hidden layer, e.g. `[64, 32]`.
    feature_columns: dense `tf.feature_column`s (numeric, bucketized,
      embedding, indicator, shared embeddings).
    model_dir: where checkpoints and summaries go (a temporary directory if
      None and `config.model_dir` is unset).
    n_classes: number of classes, > 1.
    weight_column: feature key (str) or `numeric_column` of per-example
      loss weights.
    label_vocabulary: the string labels, in class-id order; None means
      integer labels in [0, n_classes).
    optimizer: 'Adagrad' (default, Keras learning rate 0.001), 'Adam',
      'Ftrl', 'RMSProp', 'SGD', a `tf.keras.optimizers.legacy` instance, or a
      callable returning one.
    activation_fn: hidden-layer activation (`tf.nn.relu`).
    dropout: probability of dropping a hidden unit in training, or None.
    config: a `RunConfig`.
    warm_start_from: checkpoint path or `WarmStartSettings`.
    loss_reduction: `tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE`
      (default) or `SUM`.
    batch_norm: batch normalisation after each hidden layer.
  """

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               n_classes=2, weight_column=None, label_vocabulary=None,
               optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None,
               config=None, warm_start_from=None,
               loss_reduction=_SUM_OVER_BATCH, batch_norm=False):
    head = default_heads.binary_or_multi_class_head(
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, hidden_units, feature_columns, optimizer,
                               activation_fn, dropout, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(estimator.Estimator):
  """tf.estimator.DNNRegressor: a feed-forward regressor (squared error).

  Arguments as `DNNClassifier`'s, with `label_dimension` (regression targets
  per example) for `n_classes` and `label_vocabulary`.
  """

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               label_dimension=1, weight_column=None, optimizer="Adagrad",
               activation_fn=tf.nn.relu, dropout=None, config=None,
               warm_start_from=None, loss_reduction=_SUM_OVER_BATCH,
               batch_norm=False):
    head = default_heads.regression_head(label_dimension, weight_column,
                                         loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, hidden_units, feature_columns, optimizer,
                               activation_fn, dropout, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNEstimator(estimator.Estimator):
  """tf.estimator.DNNEstimator: a feed-forward model with a given head.

  Arguments as `DNNClassifier`'s; `head` (e.g. `MultiLabelHead(3)`) decides
  the loss, predictions, metrics and export signatures.
  """

  def __init__(self, head, hidden_units, feature_columns, model_dir=None,
               optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None,
               config=None, warm_start_from=None, batch_norm=False):
    super().__init__(
        model_fn=_model_fn_for(head, hidden_units, feature_columns, optimizer,
                               activation_fn, dropout, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNClassifierV1(estimator.Estimator):
  """tf.compat.v1.estimator.DNNClassifier (v1 optimizers, reduction SUM)."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               n_classes=2, weight_column=None, label_vocabulary=None,
               optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=_V1_SUM,
               batch_norm=False):
    head = default_heads.binary_or_multi_class_head(
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, hidden_units, feature_columns, optimizer,
                               activation_fn, dropout, batch_norm, v1=True,
                               input_layer_partitioner=input_layer_partitioner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressorV1(estimator.Estimator):
  """tf.compat.v1.estimator.DNNRegressor (v1 optimizers, reduction SUM)."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               label_dimension=1, weight_column=None, optimizer="Adagrad",
               activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=_V1_SUM,
               batch_norm=False):
    head = default_heads.regression_head(label_dimension, weight_column,
                                         loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, hidden_units, feature_columns, optimizer,
                               activation_fn, dropout, batch_norm, v1=True,
                               input_layer_partitioner=input_layer_partitioner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNEstimatorV1(estimator.Estimator):
  """tf.compat.v1.estimator.DNNEstimator (v1 optimizers)."""

  def __init__(self, head, hidden_units, feature_columns, model_dir=None,
               optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, batch_norm=False):
    super().__init__(
        model_fn=_model_fn_for(head, hidden_units, feature_columns, optimizer,
                               activation_fn, dropout, batch_norm, v1=True,
                               input_layer_partitioner=input_layer_partitioner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)
