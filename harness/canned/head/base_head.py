"""The `Head` interface (tf.estimator 2.15's v2 `tf.estimator.Head`) and the
checks, losses and train-op plumbing every canned head shares.

A head turns logits into predictions, a loss, eval metrics, a train op and
export signatures; a model_fn only builds the logits::

    head = harness.canned.head.MultiClassHead(n_classes=3)
    logits = tf.compat.v1.layers.dense(net, head.logits_dimension)
    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        optimizer=tf.keras.optimizers.legacy.Adagrad(0.05),
        trainable_variables=tf.compat.v1.trainable_variables())

Error sentences follow 2.15 where a program may match on them; the errors are
`ValueError`s (harness `ConfigError` / `ModelFnError`) as there.
"""

import abc

from harness import errors
from harness import spec as spec_lib
from harness._tf import tf
# 2.15 kept these in base_head; programs import them from there.
from harness.canned.head.class_labels import all_class_ids  # pylint: disable=unused-import
from harness.canned.head.class_labels import all_classes  # pylint: disable=unused-import
from harness.canned.head.class_labels import check_label_range  # pylint: disable=unused-import
from harness.canned.head.class_labels import class_id_table  # pylint: disable=unused-import
from harness.canned.head.class_labels import class_string_table  # pylint: disable=unused-import
from harness.canned.head.class_labels import classification_output  # pylint: disable=unused-import
from harness.canned.head.spec_builder import build_estimator_spec  # pylint: disable=unused-import
from harness.canned.head.spec_builder import create_eval_metrics_tuple  # pylint: disable=unused-import
from harness.canned.head.spec_builder import create_estimator_spec_summary  # pylint: disable=unused-import
from harness.canned.head.spec_builder import create_estimator_spec_train_op  # pylint: disable=unused-import
from harness.canned.head.spec_builder import validate_trainable_variables  # pylint: disable=unused-import
from harness.canned.head.spec_builder import validate_update_ops  # pylint: disable=unused-import
from harness.canned.head.spec_builder import validate_v2_optimizer  # pylint: disable=unused-import
from harness.canned.head.weights import get_weights_and_check_match_logits  # pylint: disable=unused-import

__all__ = [  # tf.estimator 2.15's base_head names.
    "Head", "DEFAULT_SERVING_KEY", "CLASSIFY_SERVING_KEY",
    "REGRESS_SERVING_KEY", "PREDICT_SERVING_KEY",
    "check_dense_labels_match_logits_and_reshape",
    "get_weights_and_check_match_logits", "check_logits_final_dim",
    "validate_loss_fn_args", "validate_loss_reduction", "validate_update_ops",
    "validate_v2_optimizer", "validate_trainable_variables",
    "validate_n_classes", "call_loss_fn", "check_prediction_keys",
    "all_class_ids", "all_classes", "classification_output",
    "check_label_range", "update_metric_with_broadcast_weights",
    "create_eval_metrics_tuple", "create_estimator_spec_train_op",
    "create_estimator_spec_summary",
]

DEFAULT_SERVING_KEY = "serving_default"
# A local convention of tf.estimator's heads, kept for serving compatibility.
CLASSIFY_SERVING_KEY = "classification"
REGRESS_SERVING_KEY = "regression"
PREDICT_SERVING_KEY = "predict"

LABEL_NONE_ERR_MSG = (
    "You must provide a labels Tensor. Given: None. Suggested troubleshooting "
    "steps: Check that your data contains your label feature. Check that your "
    "input_fn properly parses and returns labels.")
_MISMATCHED_LABEL_DIM_ERR_MSG = (
    "Mismatched label shape. Expected labels dimension={}.  Received {}. "
    "Suggested Fix: If your classifier expects one-hot encoding label, check "
    "your n_classes argument to the estimator and/or the shape of your label. "
    "Otherwise, check the shape of your label.")
_LABEL_SHAPE_ERR_MSG = (
    "labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your "
    "n_classes argument to the head and/or the shape of your label.")


class HeadBase(abc.ABC):
  """What every head declares, v2 (`Head`) or v1 (`canned/head_v1`'s)."""

  @property
  @abc.abstractmethod
  def name(self):
    """The name of this head (a string or None)."""

  @property
  @abc.abstractmethod
  def logits_dimension(self):
    """Size of the last dimension of the logits `Tensor`."""


class Head(HeadBase):
  """Interface for the head/top of a model (tf.estimator 2.15's v2 Head)."""

  @property
  @abc.abstractmethod
  def loss_reduction(self):
    """One of `tf.keras.losses.Reduction`: how the training loss is reduced."""

  @abc.abstractmethod
  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    """Returns the scalar regularized training loss."""

  @abc.abstractmethod
  def predictions(self, logits, keys=None):
    """Returns a dict of prediction `Tensor`s keyed by prediction key."""

  @abc.abstractmethod
  def metrics(self, regularization_losses=None):
    """Returns a dict of (not yet updated) Keras `Metric` objects."""

  @abc.abstractmethod
  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    """Updates `eval_metrics` for one batch and returns the dict."""

  def summary_key(self, key):
    """`key` with `/<name>` added for a named head (2.15's summary tags)."""
    return f"{key}/{self.name}" if self.name else key

  _summary_key = summary_key  # 2.15's name, which subclasses call.

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None):
    """Returns the `EstimatorSpec` a model_fn can return for `mode`."""
    if not self._builds_tpu_spec():
      raise NotImplementedError(
          "Subclasses of Head must implement `create_estimator_spec()` or "
          "_create_tpu_estimator_spec().")
    return self._create_tpu_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        optimizer=optimizer, trainable_variables=trainable_variables,
        train_op_fn=train_op_fn, update_ops=update_ops,
        regularization_losses=regularization_losses).as_estimator_spec()

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, trainable_variables=None,
                                 train_op_fn=None, update_ops=None,
                                 regularization_losses=None):
    """2.15's hook: a subclass may build its spec here (a TPU-shaped spec)."""
    raise NotImplementedError(
        "TPUEstimatorSpec not available for this model head.")

  def _builds_tpu_spec(self):
    """Whether a subclass overrides 2.15's `_create_tpu_estimator_spec`."""
    return self._create_tpu_estimator_spec.__func__ is not (
        _BASE_TPU_SPEC_HOOK)


_BASE_TPU_SPEC_HOOK = vars(Head)["_create_tpu_estimator_spec"]


class CannedHead(Head):
  """What harness's single heads share (Binary/MultiClass/MultiLabel/Regression).

  A subclass sets `_name` and `_loss_reduction`, and defines
  `_processed_labels`, `_unweighted_loss_and_weights` and `_export_outputs`
  (the SavedModel signatures of its predictions).
  """

  @property
  def name(self):
    return self._name

  @property
  def loss_reduction(self):
    return self._loss_reduction

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    """Regularized training loss, reduced by `loss_reduction`."""
    del mode  # The same in every mode.
    return self._labels_loss(labels, logits, features, regularization_losses)

  def _checked_labels_and_loss(self, logits, labels, features):
    """(logits, processed labels, unweighted loss, weights) of the canned
    heads: their `_processed_labels` and `_unweighted_loss_and_weights`."""
    logits = check_logits_final_dim(logits, self.logits_dimension)
    processed = self._processed_labels(logits, labels)
    unweighted_loss, weights = self._unweighted_loss_and_weights(
        logits, processed, features)
    return logits, processed, unweighted_loss, weights

  def _labels_loss(self, labels, logits, features, regularization_losses):
    """The canned heads' `loss`: `_checked_labels_and_loss`, reduced and
    regularized."""
    with tf.compat.v1.name_scope("losses"):
      _, _, unweighted_loss, weights = self._checked_labels_and_loss(
          logits, labels, features)
      training_loss = compute_weighted_loss(
          unweighted_loss, weights, self.loss_reduction)
      return regularized(training_loss, regularization_losses)

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None):
    """The EstimatorSpec of `mode`, exporting `_export_outputs`."""
    if self._builds_tpu_spec():
      return Head.create_estimator_spec(
          self, features, mode, logits, labels=labels, optimizer=optimizer,
          trainable_variables=trainable_variables, train_op_fn=train_op_fn,
          update_ops=update_ops, regularization_losses=regularization_losses)
    return build_estimator_spec(
        self, features, mode, logits, labels, self._export_outputs,
        optimizer=optimizer, trainable_variables=trainable_variables,
        train_op_fn=train_op_fn, update_ops=update_ops,
        regularization_losses=regularization_losses)


def check_dense_labels_match_logits_and_reshape(labels, logits,
                                                expected_labels_dimension):
  """Checks labels are [D0..DN, dim] (or [D0..DN] when dim is 1); reshapes."""
  if labels is None:
    raise errors.ModelFnError(LABEL_NONE_ERR_MSG)
  with tf.compat.v1.name_scope("labels", values=(labels, logits)) as scope:
    labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
    if isinstance(labels, tf.sparse.SparseTensor):
      raise errors.ModelFnError(
          f"SparseTensor labels are not supported. Labels must be a Tensor of "
          f"shape [D0, D1, ..., DN, {expected_labels_dimension}], e.g. "
          f"[batch_size, {expected_labels_dimension}]. Fix: in your input_fn, "
          "use tf.sparse.to_dense() to turn labels into a Tensor.")
    if (labels.shape.ndims is not None and logits.shape.ndims is not None and
        labels.shape.ndims == logits.shape.ndims - 1):
      labels = tf.expand_dims(labels, -1)
    assert_rank = tf.compat.v1.debugging.assert_rank_at_least(
        labels, 2,
        message=_LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension))
    with tf.control_dependencies([assert_rank]):
      static_shape = labels.shape
      if static_shape.ndims is not None:
        final_dim = static_shape[-1]
        if final_dim is not None and final_dim != expected_labels_dimension:
          raise errors.ModelFnError(_MISMATCHED_LABEL_DIM_ERR_MSG.format(
              expected_labels_dimension, final_dim))
      logits_shape = tf.shape(logits)
      expected_shape = tf.concat(
          [logits_shape[:-1], [expected_labels_dimension]], axis=0)
      labels_shape = tf.shape(labels)
      assert_dimension = tf.compat.v1.debugging.assert_equal(
          expected_shape, labels_shape,
          message=_LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension),
          data=["expected_labels_shape: ", expected_shape,
                "labels_shape: ", labels_shape])
      with tf.control_dependencies([assert_dimension]):
        return tf.identity(labels, name=scope)


def check_logits_final_dim(logits, expected_logits_dimension):
  """Casts logits to float32 and checks they are [D0..DN, dimension]."""
  with tf.compat.v1.name_scope("logits", values=(logits,)) as scope:
    logits = tf.cast(logits, tf.float32)
    logits_shape = tf.shape(logits)
    assert_rank = tf.compat.v1.debugging.assert_rank_at_least(
        logits, 2, data=[logits_shape],
        message="logits shape must be [D0, D1, ... DN, logits_dimension]")
    with tf.control_dependencies([assert_rank]):
      static_shape = logits.shape
      if static_shape.ndims is not None and static_shape[-1] is not None:
        if (isinstance(expected_logits_dimension, int) and
            static_shape[-1] != expected_logits_dimension):
          raise errors.ModelFnError(
              "logits shape must be [D0, D1, ... DN, logits_dimension], "
              f"got {static_shape}.")
        return logits
      assert_dimension = tf.compat.v1.debugging.assert_equal(
          expected_logits_dimension, logits_shape[-1], data=[logits_shape],
          message="logits shape must be [D0, D1, ... DN, logits_dimension]")
      with tf.control_dependencies([assert_dimension]):
        return tf.identity(logits, name=scope)


def validate_loss_fn_args(loss_fn):
  """`loss_fn` takes labels and logits, optionally features/loss_reduction."""
  args = spec_lib.fn_args(loss_fn)
  for required in ("labels", "logits"):
    if required not in args:
      raise errors.ConfigError(
          f"loss_fn must contain argument: {required}. Given arguments: "
          f"{args}")
  invalid = sorted(
      set(args) - {"labels", "logits", "features", "loss_reduction"})
  if invalid:
    raise errors.ConfigError(f"loss_fn has unexpected args: {invalid}")


def validate_loss_reduction(loss_reduction):
  reductions = tf.keras.losses.Reduction
  if (loss_reduction not in reductions.all() or
      loss_reduction == reductions.NONE):
    raise errors.ConfigError(
        f"Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` "
        f"for valid options: {sorted(set(reductions.all()) - {'none'})}.")


def validate_n_classes(n_classes):
  """Multi-class heads need n_classes > 2 (BinaryClassHead covers 2)."""
  if isinstance(n_classes, int) and n_classes <= 2:
    raise errors.ConfigError(
        f"n_classes must be > 2: {n_classes}. Fix: use BinaryClassHead for "
        "two classes.")
  return n_classes


def call_loss_fn(loss_fn, labels, logits, features, expected_loss_dim=1):
  """Calls a user `loss_fn` and checks it returns [D0..DN, expected_dim]."""
  kwargs = {}
  if "features" in spec_lib.fn_args(loss_fn):
    kwargs["features"] = features
  with tf.compat.v1.name_scope("call_loss_fn"):
    unweighted_loss = loss_fn(labels=labels, logits=logits, **kwargs)
    logits_shape = tf.shape(logits, name="logits_shape")
    expected = tf.concat([logits_shape[:-1], [expected_loss_dim]], axis=0,
                         name="expected_loss_shape")
    loss_shape = tf.shape(unweighted_loss, name="loss_shape")
    check = tf.debugging.Assert(
        tf.reduce_all(tf.equal(loss_shape, expected)),
        data=["loss_fn must return Tensor of shape "
              f"[D0, D1, ... DN, {expected_loss_dim}]. ",
              "logits_shape: ", logits_shape, "loss_shape: ", loss_shape],
        name="check_loss_shape")
    with tf.control_dependencies([check]):
      return tf.identity(unweighted_loss)


def check_prediction_keys(pred_keys, valid_keys):
  for key in pred_keys:
    if key not in valid_keys:
      raise errors.ModelFnError(
          f"Prediction key must be in PredictionKeys, given: {key}."
          f"Valid prediction keys include {valid_keys}.")


def update_metric_with_broadcast_weights(eval_metric, values, weights):
  values = tf.cast(values, tf.float32)
  if weights is not None:
    weights = tf.cast(weights, tf.float32) * tf.ones_like(values)
  eval_metric.update_state(values=values, sample_weight=weights)


def compute_weighted_loss(unweighted_loss, weights, loss_reduction):
  """Keras' weighted reduction: SUM, or SUM / number of loss elements."""
  weighted = tf.cast(unweighted_loss, tf.float32) * tf.cast(weights, "float32")
  total = tf.reduce_sum(weighted)
  if loss_reduction == tf.keras.losses.Reduction.SUM:
    return total
  count = tf.cast(tf.size(weighted), tf.float32)
  return tf.math.divide_no_nan(total, count, name="value")


def regularized(training_loss, regularization_losses):
  if regularization_losses is None:
    return training_loss
  return training_loss + tf.math.add_n(regularization_losses)
