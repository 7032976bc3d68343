"""The `evaluator` task's loop: evaluation driven by new checkpoints.

* One evaluation and its exports: `checkpoint_evaluator.CheckpointEvaluator`,
  which local `train_and_evaluate` also calls after saves
  (`harness.distribute.save_listener.NewCheckpointListener`).
* The `evaluator` task: `run_continuous` looks at `model_dir` every
  `eval_poll_secs` (1 s), evaluates a new checkpoint when `throttle_secs`
  have passed since the last evaluation (the one at `max_steps`, or the last
  one once the chief marked training as ended, at once), exports, and exits
  when the evaluated step reaches `max_steps`, or when training ended (early
  stop, input exhausted, failure) and its last checkpoint was evaluated, or
  after `eval_idle_timeout_secs` without a new checkpoint (never forever).
"""

import os
import time

from absl import logging

from harness import errors
from harness import run_config as run_config_lib
from harness.cluster import env_knobs
from harness.distribute import checkpoint_evaluator
from harness.distribute import eval_result
from harness.guard import preemption
from harness.state import checkpoints
from harness.state import run_state
from harness.telemetry import live_metrics

__all__ = ["run_continuous", "NO_CHECKPOINT_REPORT_SECS"]

# Seconds between two "no checkpoint yet" lines of a waiting evaluator.
NO_CHECKPOINT_REPORT_SECS = 30.0


_FROM_CONFIG = env_knobs.NotGiven.RUN_CONFIG_VALUE
# What `_ContinuousLoop.look` tells the loop to do next.
_DONE, _LOOK_AGAIN, _SLEEP = "done", "look again", "sleep"


def run_continuous(estimator, train_spec, eval_spec, *,
                   idle_timeout_secs=_FROM_CONFIG, poll_secs=None,
                   continuous_eval_listener=None, clock=time.monotonic,
                   sleep=None):
  """The evaluator task's loop; returns (last metrics, last export results).

  It looks for a new checkpoint (and for training's end marker) every
  `poll_secs`, never sleeping longer than that. `eval_spec.throttle_secs`
  only spaces two evaluations; the checkpoint at `max_steps`, and the last
  one once training marked itself done, are evaluated and exported at once.

  Args:
    estimator: the Estimator (its model_dir is the chief's).
    train_spec: TrainSpec (its max_steps ends the loop).
    eval_spec: EvalSpec (start_delay_secs, throttle_secs, exporters).
    idle_timeout_secs: give up after this many seconds without a new
      checkpoint (None: wait while training may resume); default
      `estimator.config.eval_idle_timeout_secs`.
    poll_secs: seconds between two looks at model_dir; default
      `estimator.config.eval_poll_secs` (1).
    continuous_eval_listener: 2.15's `_ContinuousEvalListener`, or None:
      `before_eval()` is asked at each look (False ends the loop),
      `after_eval(result)` told what each look found (False ends it).
    clock, sleep: injected for tests (sleep: `time.sleep`, looked up when
      called, so that a patch of it takes effect).

  Raises:
    PeerLostError: nothing new for `idle_timeout_secs`, or a preempted or
      failed chief did not come back within `restart_wait_secs`.
  """
  model_dir, max_steps = estimator.model_dir, train_spec.max_steps
  evaluator = checkpoint_evaluator.CheckpointEvaluator(estimator, eval_spec, max_steps)
  evaluator.check_writable()  # Before waiting for the first checkpoint.
  config = _knobs(estimator)
  if idle_timeout_secs is _FROM_CONFIG:
    idle_timeout_secs = config.eval_idle_timeout_secs
  loop = _ContinuousLoop(
      evaluator, config=config, model_dir=model_dir, max_steps=max_steps,
      throttle_secs=eval_spec.throttle_secs,
      poll_secs=poll_secs or config.eval_poll_secs,
      idle_timeout_secs=idle_timeout_secs, clock=clock,
      listener=continuous_eval_listener)
  return loop.run(eval_spec.start_delay_secs, sleep or time.sleep)


def _knobs(estimator):
  """The RunConfig whose knobs the loop reads.

  A stand-in estimator (2.15's executor tests pass a Mock) has no harness
  RunConfig: the defaults serve it.
  """
  config = estimator.config
  if isinstance(config, run_config_lib.RunConfig):
    return config
  return run_config_lib.RunConfig()


class _ContinuousLoop:
  """The state of `run_continuous`'s loop; `look` is one pass of it."""

  def __init__(self, evaluator, *, config, model_dir, max_steps,
               throttle_secs, poll_secs, idle_timeout_secs, clock,
               listener=None):
    # What to evaluate, and when to stop.
    self._evaluator = evaluator
    self._listener = listener
    # Training's end marker lives in a model_dir path (a stand-in estimator
    # may have none).
    self._has_markers = isinstance(model_dir, (str, bytes, os.PathLike))
    self._config = config
    self._model_dir = model_dir
    self._max_steps = max_steps
    # Timing.
    self._throttle_secs = throttle_secs
    self._poll_secs = poll_secs
    self._idle_timeout_secs = idle_timeout_secs
    self._clock = clock
    # Loop state (its clock starts in `run`, after the start delay).
    self.last_exports = []
    self._waiting_since = self._next_report = self._last_progress = None
    self._last_eval_started = None
    self._seen, self._said = None, None

  def run(self, start_delay_secs, sleep):
    """Serves the task's live metrics, waits `start_delay_secs`, then looks
    every `poll_secs` until done; returns (last metrics, last exports)."""
    config = self._config
    live_metrics.serve(port=config.metrics_port, bind=config.metrics_bind,
                       task_label=config.task_label,  # The plan's.
                       attempt=config.restart_attempt)
    if start_delay_secs:
      logging.info("eval | waiting %s s before the first evaluation",
                   start_delay_secs)
      sleep(start_delay_secs)
    # "No checkpoint yet" and the idle timeout count from now.
    self._waiting_since = self._next_report = self._clock()
    self._last_progress = self._clock()
    while True:
      move = self.look()
      if move == _DONE:
        return self._evaluator.last_metrics, self.last_exports
      if move == _SLEEP:
        sleep(self._poll_secs)

  def look(self):
    """One look at model_dir: evaluates, exports, reports or gives up.

    Returns:
      _DONE (the loop ends), _LOOK_AGAIN (at once) or _SLEEP (poll_secs).

    Raises:
      PeerLostError: see `run_continuous`.
    """
    stopped = self._training_stopped()
    if eval_result.listener_says_stop(self._listener, "before_eval"):
      return _DONE
    latest = self._evaluator.latest_checkpoint() or None
    if latest != self._seen:  # Something new: not idle.
      self._seen, self._last_progress = latest, self._clock()
    is_new = (latest is not None and
              latest != self._evaluator.previous_checkpoint)
    final = stopped is not None or self._at_max_steps(
        checkpoints.step_in_name(latest))
    wait = 0.0 if self._last_eval_started is None else (
        self._throttle_secs - (self._clock() - self._last_eval_started))
    if is_new and (final or wait <= 0):
      move = self._evaluate(latest)
      if move is not None:
        return move
    elif not is_new and eval_result.listener_says_stop(
        self._listener, "after_eval", eval_result.EvalResult(
            eval_result.EvalStatus.NO_NEW_CHECKPOINT if latest else
            eval_result.EvalStatus.MISSING_CHECKPOINT)):
      return _DONE
    elif stopped is not None and not is_new:
      # Training ended and no checkpoint is newer than the last evaluated.
      self._finish(stopped)
      return _DONE
    elif latest is None:
      self._report_no_checkpoint()
    elif self._said != (latest, is_new):
      self._said = (latest, is_new)
      if is_new:
        logging.info("eval | new checkpoint %s; evaluating in %.0f s "
                     "(throttle_secs=%s) unless training ends first", latest,
                     wait, self._throttle_secs)
    self._check_idle()
    return _SLEEP

  def _training_stopped(self):
    """Training's end marker; None while a restarted chief may resume."""
    if not self._has_markers:
      return None
    # The marker first: training writes its last checkpoint before it.
    stopped = run_state.read_training_stopped(self._model_dir)
    if stopped is not None and preemption.resumable_reason(
        stopped.get("reason")):
      _check_resumed(self._model_dir, stopped,
                     self._config.restart_wait_secs)
      stopped = None  # Preempted or failed: a restarted chief resumes.
    return stopped

  def _at_max_steps(self, step):
    return bool(self._max_steps and step is not None and
                step >= self._max_steps)

  def _evaluate(self, latest):
    """Evaluates and exports; None when no checkpoint was evaluated."""
    self._last_eval_started = self._clock()
    metrics, exports = self._evaluator.evaluate_and_export(latest)
    if eval_result.listener_says_stop(self._listener, "after_eval",
                                      self._evaluator.last_result):
      return _DONE
    if metrics is None:
      return None
    self.last_exports = exports
    self._last_progress = self._clock()
    done = self._evaluator.last_evaluated_step
    if self._at_max_steps(done):
      logging.info("eval | done: evaluated global_step %d >= max_steps "
                   "%d", done, self._max_steps)
      return _DONE
    # Look again at once: training may have ended meanwhile.
    return _LOOK_AGAIN

  def _finish(self, stopped):
    """The final export (if not made yet) once training has ended."""
    evaluator = self._evaluator
    if not evaluator.final_export_done and evaluator.last_metrics:
      self.last_exports = evaluator.export(
          evaluator.last_metrics, evaluator.previous_checkpoint, True)
    logging.info("eval | done: training ended (%s) at step %s",
                 stopped.get("reason"), stopped.get("global_step"))

  def _report_no_checkpoint(self):
    """Logs every NO_CHECKPOINT_REPORT_SECS while no checkpoint exists."""
    if self._clock() >= self._next_report:
      self._next_report = self._clock() + NO_CHECKPOINT_REPORT_SECS
      logging.info("eval | no checkpoint yet in %s (waited %.0f s); "
                   "looking every %g s", self._model_dir,
                   self._clock() - self._waiting_since, self._poll_secs)

  def _check_idle(self):
    """Raises PeerLostError after idle_timeout_secs without progress."""
    if self._idle_timeout_secs is not None and (
        self._clock() - self._last_progress >= self._idle_timeout_secs):
      raise errors.PeerLostError(
          f"eval | no new checkpoint in {self._model_dir} for "
          f"{self._idle_timeout_secs:g} s and training has not marked "
          "itself done; the chief is probably gone. Fix: restart the chief, "
          "or raise --eval_idle_timeout_secs "
          "(RunConfig(eval_idle_timeout_secs=)).")


def _check_resumed(model_dir, stopped, limit, wall_clock=time.time):
  """Raises once a preempted/failed chief has not come back in time."""
  waited = wall_clock() - float(stopped.get("written_at") or wall_clock())
  if waited > limit:
    raise errors.PeerLostError(
        f"eval | training stopped ({stopped.get('reason')}) at step "
        f"{stopped.get('global_step')} {waited:.0f} s ago and has not "
        f"resumed in {model_dir}; the evaluator waited {limit:g} s "
        f"(--restart_wait_secs, RunConfig(restart_wait_secs=), else "
        f"{env_knobs.RESTART_WAIT.env}). Fix: restart the training tasks, "
        "or raise that limit.")
