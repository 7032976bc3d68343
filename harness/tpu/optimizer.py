"""`CrossShardOptimizer` that passes through when no TPU shards exist.

TF 2.21 still has `tf.compat.v1.tpu.CrossShardOptimizer`; off-TPU its
`apply_gradients` still emits `CrossReplicaSum`, which has no CPU/GPU
kernel, so model code that always wraps its optimizer cannot train on
CPU/GPU. `harness.tpu.CrossShardOptimizer` takes the same arguments and,
outside a TPU shard context, delegates every call to the wrapped
optimizer unchanged (slot variables and checkpoints are the wrapped
optimizer's own). Inside one it refuses: harness runs no TPU programs.
"""

from harness import errors
from harness._tf import tf

__all__ = ["CrossShardOptimizer"]

_REDUCTIONS = ("mean", "sum")  # tf.compat.v1.losses.Reduction.MEAN / SUM.


class CrossShardOptimizer(tf.compat.v1.train.Optimizer):
  """A v1 optimizer wrapper that is the wrapped optimizer off-TPU.

  Args (tf.compat.v1.tpu.CrossShardOptimizer's):
    opt: a `tf.compat.v1.train.Optimizer`.
    reduction: "mean" (default) or "sum": how shards' gradients combine
      (one shard off-TPU: either leaves gradients unchanged).
    name: the optimizer's name.
    group_assignment: TPU replica groups; must be None off-TPU.
  """

  def __init__(self, opt, reduction="mean", name="CrossShardOptimizer",
               group_assignment=None):
    if not isinstance(opt, tf.compat.v1.train.Optimizer):
      raise errors.ConfigError(
          f"CrossShardOptimizer only works with tf.compat.v1.train.Optimizer "
          f"and not Keras optimizers, given {type(opt).__name__}. Fix: wrap "
          "e.g. tf.compat.v1.train.AdamOptimizer(...).")
    if reduction not in _REDUCTIONS:
      raise errors.ConfigError(
          f"Unsupported reduction: {reduction!r}. Fix: use "
          "tf.compat.v1.losses.Reduction.MEAN or SUM.")
    if group_assignment is not None:
      raise errors.NotSupportedError(
          "CrossShardOptimizer(group_assignment=...) groups TPU replicas; "
          "harness runs on CPU/GPU, where there is one shard. Fix: drop "
          "group_assignment (or run on a TPU with tf.distribute.TPUStrategy).")
    super().__init__(use_locking=False, name=name)
    self._opt = opt
    self._reduction = reduction

  def compute_gradients(self, loss, var_list=None, **kwargs):
    return self._opt.compute_gradients(loss, var_list=var_list, **kwargs)

  def apply_gradients(self, grads_and_vars, global_step=None, name=None):
    return self._opt.apply_gradients(grads_and_vars, global_step, name)

  def get_slot(self, *args, **kwargs):
    return self._opt.get_slot(*args, **kwargs)

  def get_slot_names(self, *args, **kwargs):
    return self._opt.get_slot_names(*args, **kwargs)

  def variables(self):
    return self._opt.variables()
