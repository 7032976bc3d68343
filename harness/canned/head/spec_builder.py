"""How a head's EstimatorSpec is built: train op, TRAIN summaries, and the
PREDICT / EVAL / TRAIN flow every single head shares (tf.estimator 2.15's
`base_head.create_estimator_spec_train_op` and friends; `base_head`
re-exports them under their 2.15 names).

    train_op = create_estimator_spec_train_op(
        head_name=None, optimizer=tf.keras.optimizers.legacy.Adagrad(0.05),
        trainable_variables=tf.compat.v1.trainable_variables(),
        regularized_training_loss=loss)
"""

from harness import errors
from harness import spec as spec_lib
from harness._tf import tf
from harness.canned.head import metric_keys

__all__ = [
    "build_estimator_spec", "create_eval_metrics_tuple",
    "create_estimator_spec_train_op",
    "create_estimator_spec_summary", "validate_update_ops",
    "validate_v2_optimizer", "validate_trainable_variables",
]


def create_eval_metrics_tuple(fn, kwargs):
  """`(metric_fn, tensors)` for a TPU-shaped spec's `eval_metrics`.

  The Tensors of `kwargs` are passed in the tuple; the other values are
  bound into the returned function, which `fn` receives all of.
  """
  tensors = {k: v for k, v in kwargs.items() if tf.is_tensor(v)}
  others = {k: v for k, v in kwargs.items() if k not in tensors}

  def metric_fn(**given):
    return fn(**others, **given)

  return metric_fn, tensors


def validate_update_ops(update_ops=None):
  if update_ops is not None and not isinstance(update_ops, (list, tuple)):
    raise errors.ModelFnError(
        f"update_ops should be a list or a tuple. Given type: "
        f"{type(update_ops)}.")


def validate_v2_optimizer(optimizer):
  """Only Keras OptimizerV2 (`tf.keras.optimizers.legacy.*`) has the graph-mode
  `get_updates` 2.15's heads use; the Keras 2.11+ optimizers do not."""
  if isinstance(optimizer, tf.keras.optimizers.legacy.Optimizer):
    return
  if isinstance(optimizer, tf.keras.optimizers.Optimizer):
    if callable(getattr(optimizer, "get_updates", None)):
      return  # A subclass that builds its own graph-mode updates.
    raise errors.ConfigError(
        f"The given optimizer {optimizer!r} is a new-style Keras optimizer; "
        "heads build train ops in graph mode through OptimizerV2.get_updates "
        "as tf.estimator 2.15 did. Fix: use tf.keras.optimizers.legacy."
        f"{type(optimizer).__name__} (same arguments) or an optimizer name "
        "string such as 'Adagrad'.")
  raise errors.ConfigError(
      "The given optimizer is not a tf.keras.optimizers.Optimizer instance. "
      f"Given: {optimizer}")


def validate_trainable_variables(trainable_variables=None):
  if trainable_variables is None:
    raise errors.ModelFnError(
        "trainable_variables cannot be None. Given None. Fix: pass "
        "trainable_variables=tf.compat.v1.trainable_variables() (or the "
        "model's list) with the optimizer.")
  if not isinstance(trainable_variables, (list, tuple)):
    raise errors.ModelFnError(
        "trainable_variables should be a list or a tuple. Given type: "
        f"{type(trainable_variables)}.")


def create_estimator_spec_train_op(
    head_name, optimizer=None, trainable_variables=None, train_op_fn=None,
    update_ops=None, regularized_training_loss=None,
    loss_reduction=tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE):
  """The train op: `optimizer.get_updates(loss, vars)` or `train_op_fn(loss)`.

  Built under the root name scope `training`, so a Keras optimizer's slots
  are named `training/<Optimizer>/<var>/<slot>` exactly as 2.15 saved them.
  With SUM_OVER_BATCH_SIZE the loss is divided by the replicas in sync.
  """
  del head_name
  validate_update_ops(update_ops)
  with tf.compat.v1.name_scope(None):  # Reset any enclosing name scope.
    with tf.compat.v1.name_scope("training"):
      if optimizer is not None:
        if train_op_fn is not None:
          raise errors.ModelFnError(
              "train_op_fn and optimizer cannot both be set.")
        validate_v2_optimizer(optimizer)
        validate_trainable_variables(trainable_variables)
        if loss_reduction == tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE:
          replicas = tf.distribute.get_strategy().num_replicas_in_sync
          if replicas > 1:
            regularized_training_loss *= 1. / replicas
        train_op = optimizer.get_updates(
            regularized_training_loss, list(trainable_variables))[0]
      elif train_op_fn is not None:
        train_op = train_op_fn(regularized_training_loss)
      else:
        raise errors.ModelFnError(
            "train_op_fn and optimizer cannot both be None.")
      if update_ops is not None:
        train_op = tf.group(train_op, *update_ops)
      return train_op


def create_estimator_spec_summary(regularized_training_loss,
                                  regularization_losses=None,
                                  summary_key_fn=None):
  """TRAIN summaries: the loss and, when given, the regularization loss."""
  keys = metric_keys.MetricKeys
  with tf.compat.v1.name_scope(None):
    loss_key = summary_key_fn(keys.LOSS) if summary_key_fn else keys.LOSS
    tf.compat.v1.summary.scalar(loss_key, regularized_training_loss)
    if regularization_losses is not None:
      reg_key = (summary_key_fn(keys.LOSS_REGULARIZATION) if summary_key_fn
                 else keys.LOSS_REGULARIZATION)
      tf.compat.v1.summary.scalar(reg_key,
                                  tf.math.add_n(regularization_losses))


def build_estimator_spec(head, features, mode, logits, labels,
                         export_outputs_fn, optimizer=None,
                         trainable_variables=None, train_op_fn=None,
                         update_ops=None, regularization_losses=None):
  """The EstimatorSpec every single head builds, as 2.15's heads did.

  PREDICT: `head.predictions(logits)` and `export_outputs_fn(predictions)`.
  EVAL: the regularized training loss (Estimator averages it over batches
  as `loss`) and `head.metrics()` updated once. TRAIN: the train op from the
  optimizer or `train_op_fn`, and the loss summary.
  """
  mode_keys = spec_lib.ModeKeys
  with tf.compat.v1.name_scope(head.name, "head"):
    predictions = head.predictions(logits)
    if mode == mode_keys.PREDICT:
      return spec_lib.EstimatorSpec(
          mode=mode_keys.PREDICT, predictions=predictions,
          export_outputs=export_outputs_fn(predictions))
    if mode not in (mode_keys.TRAIN, mode_keys.EVAL):
      raise errors.ModelFnError(f"mode={mode} unrecognized")
    loss = head.loss(labels=labels, logits=logits, features=features,
                     mode=mode, regularization_losses=regularization_losses)
    if mode == mode_keys.EVAL:
      eval_metrics = head.metrics(regularization_losses=regularization_losses)
      updated = head.update_metrics(
          eval_metrics, features, logits, labels,
          regularization_losses=regularization_losses)
      return spec_lib.EstimatorSpec(
          mode=mode_keys.EVAL, predictions=predictions, loss=loss,
          eval_metric_ops=updated)
    train_op = create_estimator_spec_train_op(
        head_name=head.name, optimizer=optimizer,
        trainable_variables=trainable_variables, train_op_fn=train_op_fn,
        update_ops=update_ops, regularized_training_loss=loss,
        loss_reduction=head.loss_reduction)
  create_estimator_spec_summary(loss, regularization_losses,
                                summary_key_fn=head.summary_key)
  return spec_lib.EstimatorSpec(
      mode=mode_keys.TRAIN, predictions=predictions, loss=loss,
      train_op=train_op)
