"""Evaluation driven by new checkpoints: in-loop (local) and continuous.

* Local `train_and_evaluate`: `NewCheckpointListener` is a
  CheckpointSaverListener; after each save it evaluates and exports (at most
  once per `throttle_secs`) and always once more at the end of training.
* The `evaluator` task: `run_continuous` polls `model_dir`, evaluates each
  new checkpoint (throttled), exports, and exits when the evaluated step
  reaches `max_steps`, or when the chief marked training as ended (early
  stop, input exhausted, failure) and its last checkpoint was evaluated, or
  after `idle_timeout_secs` without a new checkpoint (never forever).
"""

import os
import time

from absl import logging

from harness import checkpoints
from harness import errors
from harness import evaluation
from harness import preemption
from harness import run_state
from harness._tf import tf

__all__ = ["CheckpointEvaluator", "NewCheckpointListener", "run_continuous"]


class CheckpointEvaluator:
  """Evaluates the latest checkpoint once and runs the exporters on it."""

  def __init__(self, estimator, eval_spec, max_training_steps):
    self._estimator = estimator
    self._eval_spec = eval_spec
    self._max_training_steps = max_training_steps
    self._previous_checkpoint = None
    self.final_export_done = False
    self.last_metrics = None
    self.last_evaluated_step = None

  def evaluate_and_export(self):
    """Returns (metrics or None, export_results list)."""
    # The newest checkpoint that reads back (a corrupt newest one is skipped
    # with a warning naming its file).
    path = checkpoints.latest_usable_checkpoint(self._estimator.model_dir)
    if not path:
      logging.info("eval | no checkpoint yet in %s; waiting for training.",
                   self._estimator.model_dir)
      return None, []
    if path == self._previous_checkpoint:
      logging.debug("eval | no new checkpoint since %s", path)
      return None, []
    try:
      metrics = self._estimator.evaluate(
          input_fn=self._eval_spec.input_fn, steps=self._eval_spec.steps,
          name=self._eval_spec.name, checkpoint_path=path,
          hooks=self._eval_spec.hooks)
    except (ValueError, tf.errors.NotFoundError):
      if tf.io.gfile.exists(path + ".index"):
        raise
      # The Saver deleted it (keep_checkpoint_max) while training raced
      # ahead; the next poll takes the newest one.
      logging.info("eval | %s was deleted before it was evaluated; taking "
                   "the newest checkpoint instead", path)
      return None, []
    if evaluation.GLOBAL_STEP_KEY not in metrics:
      raise errors.ModelFnError(
          "Estimator.evaluate result should have `global_step`; given "
          f"{sorted(metrics)}.")
    step = int(metrics[evaluation.GLOBAL_STEP_KEY])
    is_final = bool(self._max_training_steps) and (
        step >= self._max_training_steps)
    exports = self.export(metrics, path, is_final)
    self._previous_checkpoint = path
    self.last_metrics = metrics
    self.last_evaluated_step = step
    return metrics, exports

  def export(self, metrics, checkpoint_path, is_the_final_export):
    """Runs every exporter of the EvalSpec; returns their results."""
    base = os.path.join(os.fsdecode(self._estimator.model_dir), "export")
    results = []
    for exporter in self._eval_spec.exporters:
      results.append(exporter.export(
          estimator=self._estimator,
          export_path=os.path.join(base, exporter.name),
          checkpoint_path=checkpoint_path, eval_result=metrics,
          is_the_final_export=is_the_final_export))
    if is_the_final_export:
      self.final_export_done = True
    return results


class NewCheckpointListener(tf.compat.v1.train.CheckpointSaverListener):
  """Evaluates after checkpoint saves in local train_and_evaluate."""

  def __init__(self, evaluator, throttle_secs, clock=time.monotonic):
    self._evaluator = evaluator
    self._throttle_secs = throttle_secs
    self._clock = clock
    self._last_eval_time = None
    self._last_eval_step = None
    self._first_save = True
    self.eval_result = None
    self.export_results = []

  def _evaluate(self, step):
    metrics, exports = self._evaluator.evaluate_and_export()
    if metrics is not None:
      self.eval_result = metrics
      self.export_results = exports
      self._last_eval_time = self._clock()
      self._last_eval_step = step

  def after_save(self, session, global_step_value):
    del session
    if self._first_save:  # The save at session start: nothing trained yet.
      self._first_save = False
      return
    now = self._clock()
    if (self._last_eval_time is not None and
        now - self._last_eval_time < self._throttle_secs):
      logging.info("eval | skipping checkpoint at step %d: throttle_secs=%s",
                   global_step_value, self._throttle_secs)
      return
    self._evaluate(global_step_value)

  def end(self, session, global_step_value):
    del session
    if global_step_value != self._last_eval_step:
      self._evaluate(global_step_value)


def run_continuous(estimator, train_spec, eval_spec, *, idle_timeout_secs=None,
                   clock=time.monotonic, sleep=time.sleep):
  """The evaluator task's loop; returns (last metrics, last export results).

  Args:
    estimator: the Estimator (its model_dir is the chief's).
    train_spec: TrainSpec (its max_steps ends the loop).
    eval_spec: EvalSpec (start_delay_secs, throttle_secs, exporters).
    idle_timeout_secs: give up after this long without a new checkpoint
      and without a running chief (None: wait while training may resume).
    clock, sleep: injected for tests.
  """
  evaluator = CheckpointEvaluator(estimator, eval_spec, train_spec.max_steps)
  if eval_spec.start_delay_secs:
    logging.info("eval | waiting %s s before the first evaluation",
                 eval_spec.start_delay_secs)
    sleep(eval_spec.start_delay_secs)
  last_exports = []
  last_progress = clock()
  while True:
    started = clock()
    metrics, exports = evaluator.evaluate_and_export()
    if metrics is not None:
      last_exports = exports
      last_progress = clock()
    step = evaluator.last_evaluated_step
    if step is not None and train_spec.max_steps and (
        step >= train_spec.max_steps):
      logging.info("eval | done: evaluated global_step %d >= max_steps %d",
                   step, train_spec.max_steps)
      break
    stopped = run_state.read_training_stopped(estimator.model_dir)
    if stopped is not None and preemption.resumable_reason(
        stopped.get("reason")):
      _check_resumed(estimator.model_dir, stopped)
      stopped = None  # Preempted or failed: a restarted chief resumes.
    if stopped is not None and metrics is None:
      # Training ended and no checkpoint is newer than the last evaluated.
      if not evaluator.final_export_done and evaluator.last_metrics:
        last_exports = evaluator.export(
            evaluator.last_metrics,
            checkpoints.latest_usable_checkpoint(estimator.model_dir), True)
      logging.info("eval | done: training ended (%s) at step %s",
                   stopped.get("reason"), stopped.get("global_step"))
      break
    if idle_timeout_secs is not None and (
        clock() - last_progress > idle_timeout_secs):
      raise errors.PeerLostError(
          f"eval | no new checkpoint in {estimator.model_dir} for "
          f"{idle_timeout_secs} s and training has not marked itself done; "
          "the chief is probably gone. Fix: restart the chief, or raise "
          "--eval_idle_timeout_secs.")
    wait = eval_spec.throttle_secs - (clock() - started)
    sleep(max(wait, 1.0 if metrics is None else 0.0))
  return evaluator.last_metrics, last_exports


def _check_resumed(model_dir, stopped, wall_clock=time.time):
  """Raises once a preempted/failed chief has not come back in time."""
  waited = wall_clock() - float(stopped.get("written_at") or wall_clock())
  limit = preemption.restart_wait_secs()
  if waited > limit:
    raise errors.PeerLostError(
        f"eval | training stopped ({stopped.get('reason')}) at step "
        f"{stopped.get('global_step')} {waited:.0f} s ago and has not "
        f"resumed in {model_dir}; the evaluator waited "
        f"{preemption.RESTART_WAIT_ENV}={limit:g} s. Fix: restart the "
        "training tasks, or raise the variable.")
