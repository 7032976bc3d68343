"""Hooks that stop a training loop which cannot succeed, saying why.

`train_loop.run` adds both to every training loop::

    hooks += [watchdog.NanLossHook(loss, task_label="chief/0"),
              watchdog.NoProgressHook(max_runs=100, task_label="chief/0")]

* `NanLossHook` replaces TensorFlow's `NanTensorHook(fail_on_nan_loss=True)`
  (what tf.estimator used): it raises `NanLossDuringTrainingError`, a
  subclass of `tf.compat.v1.train.NanLossDuringTrainingError` with its name
  and message ("NaN loss during training.", the compatibility contract) that
  also carries the global step and the loss tensor's name, which
  `harness.cli.diagnose` prints.
* `NoProgressHook` raises `errors.TrainingStalledError` when the global step
  has not moved for `max_runs` session.run calls (`harness.guard.stall`).

Both fetch only with the training step itself (no extra session.run), except
one read of the global step when a NaN is found.
"""

import numpy as np

from harness import _tf_private
from harness._tf import tf
from harness.guard import stall

__all__ = ["NanLossDuringTrainingError", "NanLossHook", "NoProgressHook"]


class NanLossDuringTrainingError(
    tf.compat.v1.train.NanLossDuringTrainingError):
  """The loss became NaN; name and `str()` are tf.estimator's.

  Attributes:
    step: the global step after the run whose loss was NaN (None: unknown).
    tensor_name: the name of the loss tensor, e.g. "mean_squared_error/value:0".
    task_label: "local", "chief/0", ...
  """

  def __init__(self, *, step, tensor_name, task_label="local"):
    super().__init__()
    self.step = step
    self.tensor_name = tensor_name
    self.task_label = task_label


class NanLossHook(tf.compat.v1.train.SessionRunHook):
  """Raises `NanLossDuringTrainingError` after a run whose loss is NaN."""

  def __init__(self, loss_tensor, *, task_label="local", tensor_name=None):
    """Creates the hook.

    Args:
      loss_tensor: the scalar loss the training loop fetches.
      task_label: "local", "chief/0", ... for the error.
      tensor_name: the name the error gives the loss (default: the fetched
        tensor's); under steps_per_loop, model_fn's own loss tensor.
    """
    self._loss = loss_tensor
    self._tensor_name = tensor_name or loss_tensor.name
    self._step = None
    self._task_label = task_label

  def begin(self):
    self._step = _tf_private.global_step_read()

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    if not np.isnan(run_values.results):
      return
    try:
      step = int(run_context.session.run(self._step))
    except tf.errors.OpError:  # The session is unusable: say "unknown".
      step = None
    raise NanLossDuringTrainingError(step=step, tensor_name=self._tensor_name,
                       task_label=self._task_label)


class NoProgressHook(tf.compat.v1.train.SessionRunHook):
  """Raises `TrainingStalledError` once the global step stops moving."""

  def __init__(self, *, max_runs, task_label="local"):
    """Creates the hook.

    The global step is fetched with every run: whether it is read before or
    after the step's increment, it changes from run to run while training
    progresses.

    Args:
      max_runs: runs without a change that stop training (>= 1), or None.
      task_label: "local", "chief/0", ... for the error.
    """
    self._step = None
    self._watch = stall.ProgressWatch(max_runs=max_runs,
                                      task_label=task_label)

  def begin(self):
    self._step = _tf_private.global_step_read()

  def after_create_session(self, session, coord):
    del coord
    self._watch.start(session.run(self._step))

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._step)

  def after_run(self, run_context, run_values):
    del run_context
    self._watch.observe(run_values.results)
