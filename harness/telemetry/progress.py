"""`ProgressLoggerHook`: the training loop's one grep-able progress line.

    progress = ProgressLoggerHook(
        loss_tensor=loss, global_step_tensor=global_step, every_n_steps=100,
        task_label="chief/0", max_steps=1000, examples_per_step=32)

`core/train_loop` adds it to every training run (`log_step_count_steps`);
`harness.hooks.ProgressLoggerHook` is the same class. Each line's numbers
also go to the live metrics endpoint when one runs (`telemetry/live_metrics`),
and to the TrainJob's status when this process reports it
(`telemetry/trainer_status`).
"""

import datetime
import time

from absl import logging

from harness import _tf_private
from harness import errors
from harness._tf import tf
from harness.telemetry import live_metrics
from harness.telemetry import trainer_status

__all__ = ["ProgressLoggerHook", "loss_and_step_hook"]

SessionRunHook = tf.compat.v1.train.SessionRunHook
SessionRunArgs = tf.compat.v1.train.SessionRunArgs


def loss_and_step_hook(loss, global_step, every_n_steps):
  """tf.estimator 2.15's own line, `loss = 0.69, step = 0 (0.366 sec)`, which
  scripts and dashboards grep (TensorFlow's logger, INFO), every
  `every_n_steps` runs on every task; after the chief's `global_step/sec`
  line of the same step when added after the chief's hooks, as in 2.15.

  The step is the graph's registered read of the global step (train_graph:
  made before the model's ops, so the step before the run's increment, as
  2.15 printed it), not the variable, whose read a busy machine may order
  after the increment (`step = 101`).
  """
  return tf.compat.v1.train.LoggingTensorHook(
      {"loss": loss, "step": _tf_private.global_step_read(global_step.graph)},
      every_n_iter=every_n_steps)


def _format_eta(secs):
  return str(datetime.timedelta(seconds=int(round(max(secs, 0)))))


class ProgressLoggerHook(SessionRunHook):
  """Logs one progress line every `every_n_steps` global steps and at the end.

  The line has the shape (parts whose inputs are unknown are left out)::

    train | chief/0 | step 1200/10000 | 350.2 steps/s | 11206 examples/s | loss=0.312 | eta 0:00:25

  `loss=` is the loss of the run that ended at the step shown; 2.15's own
  `loss = ..., step = 1200` (`loss_and_step_hook`) is that of the run that
  starts from it, so the two numbers differ.

  Tensors are fetched only on the steps that are logged: on every other step
  `before_run` returns None, so the hook adds no fetch to the training step.
  On a logged step it fetches the loss with the step and then reads the
  global step in a small separate `session.run` (fetched together, the
  global step may be read before or after its increment).
  The hook predicts the global step from the `session.run` calls since it
  last read it, times the steps per call (measured after the first call of
  each session, so loops that advance the global step by K per run are
  handled); if other workers move the global step too, lines come at least
  every `every_n_steps` local runs.
  """

  def __init__(self, *, loss_tensor, global_step_tensor, every_n_steps,
               task_label="local", max_steps=None, examples_per_step=None,
               clock=time.monotonic):
    """Creates the hook.

    Args:
      loss_tensor: scalar loss Tensor, or None to leave `loss=` out.
      global_step_tensor: the global step Tensor or Variable.
      every_n_steps: int > 0, global steps between two lines.
      task_label: the task identity shown in each line, e.g. "chief/0".
      max_steps: int or None, the last step (adds `/max` and `eta`).
      examples_per_step: int or None, global batch size (adds examples/s).
      clock: callable returning seconds (monotonic); injectable for tests.

    Raises:
      ConfigError: `every_n_steps` is not a positive int.
    """
    if not isinstance(every_n_steps, int) or every_n_steps <= 0:
      raise errors.ConfigError(
          f"ProgressLoggerHook `every_n_steps` must be a positive int, given: "
          f"{every_n_steps!r}. Fix: pass e.g. every_n_steps=100.")
    # What to fetch.
    self._loss_tensor = loss_tensor
    self._global_step_tensor = global_step_tensor
    # What to show.
    self._every_n_steps = every_n_steps
    self._task_label = task_label
    self._max_steps = max_steps
    self._examples_per_step = examples_per_step
    self._clock = clock
    # Where the next line is due, and how to predict the global step.
    self._next_log_step = every_n_steps
    self._base_step = 0  # Global step last read.
    self._runs_since_base = 0  # session.run calls since then.
    self._steps_per_run = 1.0
    self._stale_base = False
    self._calibrated = False
    self._fetching = False
    # The rate window: from the last line (or session start) to now.
    self._window_step = 0
    self._window_time = None
    self._logged_step = None  # No line twice for one step (a stalled loop).
    self._sessions = 0

  def after_create_session(self, session, coord):
    del coord
    step = int(session.run(self._global_step_tensor))
    self._rebase(step)
    self._window_step, self._window_time = step, self._clock()
    self._sessions += 1
    live_metrics.record_session_start(self._task_label, step=step,
                                      first=self._sessions == 1)
    self._calibrated = False
    self._warm = False  # Until the session's first run has ended.
    every_n = self._every_n_steps
    self._next_log_step = (step // every_n + 1) * every_n
    if self._max_steps is not None:
      self._next_log_step = min(self._next_log_step, self._max_steps)

  @property
  def steps_per_run(self):
    """Steps one run is expected to make (set when steps_per_loop="auto"
    changes K: predictions restart from the next read of the step)."""
    return self._steps_per_run

  @steps_per_run.setter
  def steps_per_run(self, value):
    self._steps_per_run = float(value)
    self._runs_since_base = 0
    self._calibrated = False
    self._stale_base = True

  def _rebase(self, step):
    if self._stale_base:
      self._stale_base = False
      self._base_step, self._runs_since_base = step, 0
      return
    if self._runs_since_base > 0 and step > self._base_step:
      self._steps_per_run = (step - self._base_step) / self._runs_since_base
    self._base_step, self._runs_since_base = step, 0

  def before_run(self, run_context):
    del run_context
    predicted = self._base_step + (
        self._runs_since_base + 1) * self._steps_per_run
    self._fetching = predicted >= self._next_log_step
    if not self._fetching or self._loss_tensor is None:
      return None
    return SessionRunArgs(self._loss_tensor)

  def after_run(self, run_context, run_values):
    self._runs_since_base += 1
    if not (self._fetching or not self._calibrated):
      return
    # Read after the step: fetched with train_op, the global step may be
    # read before or after its increment.
    step = int(run_context.session.run(self._global_step_tensor))
    self._rebase(step)
    self._calibrated = True  # Steps per run are known after one run.
    first_run, self._warm = not self._warm, True
    if not self._fetching and step < self._next_log_step:
      if first_run:  # Its start-up cost (tf.data, first compile) stays
        self._window_step, self._window_time = step, self._clock()  # out.
      return
    if step == self._logged_step:
      return
    self._log(step, run_values.results if self._fetching else None,
              eta=not first_run)
    while self._next_log_step <= step:
      self._next_log_step += self._every_n_steps
    if self._max_steps is not None and step < self._max_steps:
      self._next_log_step = min(self._next_log_step, self._max_steps)

  def end(self, session):
    step = int(session.run(self._global_step_tensor))
    if step not in (self._window_step, self._logged_step):
      # The loss of the last step was not fetched; reading it now would pull
      # another batch from the input pipeline.
      self._log(step, None)

  def _log(self, step, loss, eta=True):
    """Logs one line and moves the rate window to (`step`, now).

    `eta=False`: the rate includes the session's start-up, no ETA from it.
    """
    now = self._clock()
    elapsed = now - self._window_time
    steps_done = step - self._window_step
    parts = ["train", self._task_label]
    if self._max_steps is not None:
      parts.append(f"step {step}/{self._max_steps}")
    else:
      parts.append(f"step {step}")
    rate = steps_done / elapsed if elapsed > 0 and steps_done > 0 else None
    examples_rate = None
    if rate is not None:
      parts.append(f"{rate:.1f} steps/s")
      if self._examples_per_step:
        examples_rate = rate * self._examples_per_step
        parts.append(f"{examples_rate:.0f} examples/s")
    if loss is not None:
      parts.append(f"loss={float(loss):.4g}")
    if eta and rate is not None and self._max_steps is not None:
      parts.append(f"eta {_format_eta((self._max_steps - step) / rate)}")
    logging.info("%s", " | ".join(parts))
    numbers = {"step": step, "max_steps": self._max_steps,
               "steps_per_sec": rate, "examples_per_sec": examples_rate,
               "loss": None if loss is None else float(loss)}
    live_metrics.record_progress(self._task_label, **numbers)
    trainer_status.record_progress(**numbers)
    self._logged_step = step
    self._window_step, self._window_time = step, now
