"""Training that makes no progress: the watch and its message.

A `train_op` that never advances the global step (`optimizer.minimize(loss)`
without `global_step=`, the most common Estimator mistake) would train
forever: `StopAtStepHook` waits for a step that never comes. `ProgressWatch`
counts the `session.run` calls since the global step last moved and raises
`TrainingStalledError` after `max_runs` of them::

    watch = stall.ProgressWatch(max_runs=100, task_label="chief/0")
    watch.start(step)        # when the session starts
    watch.observe(step)      # after each session.run: raises once stalled

`harness.guard.watchdog.NoProgressHook` feeds it the global step of every run
(`RunConfig(max_runs_without_progress=N)`, flag `--max_runs_without_progress`;
its default and check are the field's, `harness.fields`). This module imports
no TensorFlow.
"""

from harness import errors
from harness import fields

__all__ = ["ProgressWatch"]


class ProgressWatch:
  """Counts session.run calls since the global step last changed."""

  def __init__(self, *, max_runs, task_label="local"):
    """Creates the watch.

    Args:
      max_runs: int >= 1: runs without a global-step change that stop
        training; None: never stop.
      task_label: "local", "chief/0", ... for the message.
    """
    self._max_runs = fields.check_max_runs(max_runs)
    self._task_label = task_label
    self._step = None
    self._runs = 0

  def start(self, step):
    """Resets the count at `step` (a new session)."""
    self._step, self._runs = int(step), 0

  def observe(self, step):
    """Records the global step seen in one more run.

    Raises:
      TrainingStalledError: the last `max_runs` runs left the step at
        `step`.
    """
    step = int(step)
    if self._step is None or step != self._step:
      self.start(step)
      return
    self._runs += 1
    if self._max_runs is None or self._runs < self._max_runs:
      return
    raise errors.TrainingStalledError(
        f"{self._task_label}: the global step stayed at {step} for "
        f"{self._runs} session.run calls of the train_op, so training "
        "would never reach its last step. The train_op does not advance the "
        "global step. Fix: pass "
        "`global_step=tf.compat.v1.train.get_global_step()` to "
        "`optimizer.minimize(...)` (or `apply_gradients(...)`) in the "
        "model_fn. (The limit is max_runs_without_progress="
        f"{self._max_runs}: RunConfig, or --max_runs_without_progress.)")
