"""How a canned model_fn hands logits, variables and optimizers to its head.

v2 classes (as 2.15's `tf.estimator.*`): one Keras optimizer whose
`iterations` is the global step, passed to `head.create_estimator_spec`,
which builds `optimizer.get_updates(loss, trainable_variables)` under the
name scope `training` (slots `training/<Optimizer>/<variable>/<slot>`).
Several optimizers (DNNLinearCombined) go through a `train_op_fn` instead,
with only the first one counting the global step.

v1 classes (as 2.15's `tf.compat.v1.estimator.*`): `tf.compat.v1.train`
optimizers minimise the loss over their variables (slots
`<variable>/<Optimizer>`) in a `train_op_fn`, then the global step is
incremented once. A v1 head (`harness.canned.head_v1`, 2.15's `_Head`) is
handed the optimizer instead, as 2.15's v1 model_fns did:
`optimizer.minimize(loss, global_step)` inside the head.
"""

from harness._tf import tf
from harness.canned import optimizers
from harness.canned import head_v1
from harness.spec import ModeKeys

__all__ = ["keras_optimizer", "scale_for_replicas", "v1_train_op_fn",
           "v1_head_spec"]


def keras_optimizer(optimizer, learning_rate=None, count_steps=True):
  """Returns the Keras optimizer of a v2 model_fn (call in TRAIN mode only).

  Args:
    optimizer: name, instance or callable (see `optimizers`).
    learning_rate: used when `optimizer` is a name.
    count_steps: make `optimizer.iterations` the global step, so that each
      update advances it (exactly one optimizer of a model_fn does).
  """
  opt = optimizers.get_optimizer_instance_v2(optimizer, learning_rate)
  if opt is optimizer and opt.weights:
    # Used in an earlier graph already (2.15 failed here); a fresh instance
    # the first time would hide the user's own object (its `iterations`).
    opt = _fresh_copy(opt)
  if count_steps:
    opt.iterations = tf.compat.v1.train.get_or_create_global_step()
  return opt


def _fresh_copy(opt):
  """Returns a same-config copy of a Keras optimizer instance.

  Each train()/evaluate() builds a new graph, but a Keras optimizer keeps
  the variables of the first graph it ran in (2.15 then failed the second
  train() with "Cannot set `iterations` to a new Variable after the
  Optimizer weights have been created"); a copy per graph avoids that.
  Optimizers that cannot be rebuilt from their config are used as given.
  """
  try:
    return type(opt).from_config(opt.get_config())
  except (TypeError, ValueError, KeyError):
    return opt


def scale_for_replicas(loss, loss_reduction):
  """Divides a SUM_OVER_BATCH_SIZE loss by the replicas in sync (as 2.15)."""
  if loss_reduction == tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE:
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if replicas > 1:
      loss *= 1.0 / replicas
  return loss


def v1_train_op_fn(optimizer_and_variables, update_ops=()):
  """Returns a `train_op_fn(loss)` of a v1 canned model_fn.

  Args:
    optimizer_and_variables: [(tf.compat.v1.train.Optimizer, variables)].
    update_ops: ops to run before the updates (batch-norm statistics).
  """

  def train_op_fn(loss):
    with tf.control_dependencies(list(update_ops)):
      train_ops = [opt.minimize(loss, var_list=list(variables))
                   for opt, variables in optimizer_and_variables]
    global_step = tf.compat.v1.train.get_global_step()
    with tf.control_dependencies([tf.group(*train_ops)]):
      return tf.compat.v1.assign_add(global_step, 1).op

  return train_op_fn


def v1_head_spec(head, features, labels, mode, logits, optimizer,
                 learning_rate, variables, update_ops=()):
  """The EstimatorSpec of a v1 canned model_fn from its `head`.

  Args:
    head: a v1 `_Head` (given the optimizer) or a v2 head (given a
      `train_op_fn` minimising over `variables` after `update_ops`).
    optimizer: name, v1 optimizer or callable (`optimizers`); TRAIN only.
    learning_rate: the rate a named optimizer gets.
  """
  opt = None
  if mode == ModeKeys.TRAIN:
    opt = optimizers.get_optimizer_instance(optimizer,
                                            learning_rate=learning_rate)
  if isinstance(head, head_v1.Head):
    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, logits=logits,
        optimizer=opt)
  train_op_fn = (None if opt is None else
                 v1_train_op_fn([(opt, variables)], update_ops))
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, logits=logits,
      train_op_fn=train_op_fn)
