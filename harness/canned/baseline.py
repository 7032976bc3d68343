"""BaselineClassifier, BaselineRegressor, BaselineEstimator (as 2.15).

    est = harness.BaselineClassifier(n_classes=3)

The model ignores the features and learns one bias per logit
(`baseline/bias`, zeros at start), so it predicts the label distribution
(classifiers) or the label mean (regressors) seen in training: the number a
real model has to beat. Default optimizer: Ftrl, learning rate 0.3.
"""

from harness import estimator
from harness._tf import tf
from harness.canned import default_heads
from harness.canned import optimizers
from harness.canned import train_ops
from harness.spec import ModeKeys

__all__ = [
    "BaselineClassifier", "BaselineRegressor", "BaselineEstimator",
    "BaselineClassifierV1", "BaselineRegressorV1", "BaselineEstimatorV1",
]

_LEARNING_RATE = 0.3
_SUM_OVER_BATCH = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_V1_SUM = tf.compat.v1.losses.Reduction.SUM


def _weight_key(weight_column):
  if weight_column is None or isinstance(weight_column, str):
    return weight_column
  key = getattr(weight_column, "key", None)
  if key is None or not hasattr(weight_column, "normalizer_fn"):
    raise TypeError("Weight column must be either a string or NumericColumn."
                    f" Given type: {type(weight_column)}.")
  return key


def baseline_logits(features, units, weight_column, v1=False):
  """Returns (logits [batch, units], [bias]) of the baseline model.

  The batch size comes from the features (the weight feature excluded, so
  that serving does not need it); all features must agree on it.
  """
  if isinstance(features, dict):
    values = [v for k, v in sorted(features.items())
              if k != _weight_key(weight_column)]
  else:
    values = [features]
  if not values:
    raise ValueError(
        "The baseline estimators take the batch size from the features, but "
        "features is empty (or holds only the weight column). Fix: return at "
        "least one feature from input_fn.")
  sizes = [tf.compat.v1.shape(v)[0] for v in values]
  checks = [tf.compat.v1.debugging.assert_equal(sizes[0], s)
            for s in sizes[1:]]
  with tf.control_dependencies(checks):
    with tf.compat.v1.variable_scope("baseline"):
      if v1:
        bias = tf.compat.v1.get_variable(
            "bias", shape=[units],
            initializer=tf.compat.v1.zeros_initializer())
      else:
        bias = tf.Variable(tf.zeros([units]), name="bias")
      logits = tf.math.multiply(bias, tf.ones([sizes[0], units]))
  return logits, [bias]


def baseline_model_fn(features, labels, mode, head, optimizer,
                      weight_column=None, loss_reduction=_SUM_OVER_BATCH,
                      v1=False):
  """The model_fn of the baseline classes (v2, or v1 if `v1`)."""
  logits, variables = baseline_logits(features, head.logits_dimension,
                                      weight_column, v1)
  train_op_fn = None
  if mode == ModeKeys.TRAIN:
    if v1:
      opt = optimizers.get_optimizer_instance(optimizer, _LEARNING_RATE)
      train_op_fn = train_ops.v1_train_op_fn([(opt, variables)])
    else:
      keras_opt = train_ops.keras_optimizer(optimizer, _LEARNING_RATE)
      reduction = default_heads.keras_reduction(loss_reduction)

      def train_op_fn(loss):
        loss = train_ops.scale_for_replicas(loss, reduction)
        return keras_opt.get_updates(loss, variables)[0]

  return head.create_estimator_spec(
      features=features, mode=mode, logits=logits, labels=labels,
      train_op_fn=train_op_fn)


def _model_fn_for(head, optimizer, weight_column, loss_reduction, v1):
  def _model_fn(features, labels, mode, config):
    del config  # Unused, as in 2.15.
    return baseline_model_fn(features, labels, mode, head, optimizer,
                             weight_column, loss_reduction, v1)
  return _model_fn


class BaselineClassifier(estimator.Estimator):
  """tf.estimator.BaselineClassifier: predicts the training label mix.

  Args:
    model_dir, n_classes, weight_column, label_vocabulary, config,
      loss_reduction: as `DNNClassifier`'s.
    optimizer: 'Ftrl' (default, learning rate 0.3) or another name, a
      `tf.keras.optimizers.legacy` instance, or a callable returning one.
  """

  def __init__(self, model_dir=None, n_classes=2, weight_column=None,
               label_vocabulary=None, optimizer="Ftrl", config=None,
               loss_reduction=_SUM_OVER_BATCH):
    head = default_heads.binary_or_multi_class_head(
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, optimizer, weight_column,
                               loss_reduction, False),
        model_dir=model_dir, config=config)


class BaselineRegressor(estimator.Estimator):
  """tf.estimator.BaselineRegressor: predicts the training label mean."""

  def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
               optimizer="Ftrl", config=None,
               loss_reduction=_SUM_OVER_BATCH):
    head = default_heads.regression_head(label_dimension, weight_column,
                                         loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, optimizer, weight_column,
                               loss_reduction, False),
        model_dir=model_dir, config=config)


class BaselineEstimator(estimator.Estimator):
  """tf.estimator.BaselineEstimator: a bias-only model with a given head."""

  def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None):
    super().__init__(
        model_fn=_model_fn_for(
            head, optimizer, None,
            getattr(head, "loss_reduction", _SUM_OVER_BATCH), False),
        model_dir=model_dir, config=config)


class BaselineClassifierV1(estimator.Estimator):
  """tf.compat.v1.estimator.BaselineClassifier (v1 optimizer, SUM)."""

  def __init__(self, model_dir=None, n_classes=2, weight_column=None,
               label_vocabulary=None, optimizer="Ftrl", config=None,
               loss_reduction=_V1_SUM):
    head = default_heads.binary_or_multi_class_head(
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, optimizer, weight_column,
                               loss_reduction, True),
        model_dir=model_dir, config=config)


class BaselineRegressorV1(estimator.Estimator):
  """tf.compat.v1.estimator.BaselineRegressor (v1 optimizer, SUM)."""

  def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
               optimizer="Ftrl", config=None, loss_reduction=_V1_SUM):
    head = default_heads.regression_head(label_dimension, weight_column,
                                         loss_reduction)
    super().__init__(
        model_fn=_model_fn_for(head, optimizer, weight_column,
                               loss_reduction, True),
        model_dir=model_dir, config=config)


class BaselineEstimatorV1(estimator.Estimator):
  """tf.compat.v1.estimator.BaselineEstimator (v1 optimizer)."""

  def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None):
    super().__init__(
        model_fn=_model_fn_for(
            head, optimizer, None,
            getattr(head, "loss_reduction", _SUM_OVER_BATCH), True),
        model_dir=model_dir, config=config)
