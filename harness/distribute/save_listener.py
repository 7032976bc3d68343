"""Local `train_and_evaluate`: evaluate after each checkpoint save.

Usage::

    listener = save_listener.NewCheckpointListener(
        checkpoint_evaluator.CheckpointEvaluator(estimator, eval_spec,
                                                 max_steps),
        eval_spec.throttle_secs)
    estimator.train(input_fn, max_steps=max_steps,
                    saving_listeners=[listener])

After each save it evaluates and exports (at most once per
`throttle_secs`), and always once more at the end of training.
"""

import time

from absl import logging

from harness._tf import tf
from harness.distribute import eval_result
from harness.guard import stop_signal

__all__ = ["NewCheckpointListener"]


class NewCheckpointListener(tf.compat.v1.train.CheckpointSaverListener):
  """Evaluates after checkpoint saves in local train_and_evaluate.

  `continuous_eval_listener` (2.15's `_ContinuousEvalListener`) is asked
  before each evaluation (False ends training) and told each result after it
  (False ends training), as 2.15's executor did.
  """

  def __init__(self, evaluator, throttle_secs, clock=time.monotonic,
               continuous_eval_listener=None):
    self._evaluator = evaluator
    self._throttle_secs = throttle_secs
    self._clock = clock
    self._listener = continuous_eval_listener
    self._last_eval_time = None
    self._last_eval_step = None
    self._first_save = True
    self.saw_a_save = False  # Whether training saved (ran) at all.
    self.eval_result = None
    self.export_results = []

  def _evaluate(self, step):
    """Evaluates; False when the continuous listener asks to stop.

    Not after a stop signal (SIGTERM, SIGINT): the run that resumes
    evaluates a later checkpoint; an evaluation the signal interrupts ends
    at its next step, unwritten. Exports in progress finish.
    """
    signal = stop_signal.STOP_SIGNAL
    if signal.stopping():
      logging.warning("eval | checkpoint at step %d not evaluated: stopping "
                      "on %s (the run that resumes evaluates a later one)",
                      step, signal.signal_name)
      return True
    try:
      metrics, exports = self._evaluator.evaluate_and_export()
    except stop_signal.Terminated:
      logging.warning("eval | evaluation of the checkpoint at step %d "
                      "stopped by %s: not written (the run that resumes "
                      "evaluates a later one)", step, signal.signal_name)
      return True
    if metrics is not None:
      self.eval_result = metrics
      self.export_results = exports
      self._last_eval_time = self._clock()
      self._last_eval_step = step
    # No listener: nothing to tell (an evaluator need not keep a result).
    return self._listener is None or not eval_result.listener_says_stop(
        self._listener, "after_eval", self._evaluator.last_result)

  def _may_evaluate(self):
    return not eval_result.listener_says_stop(self._listener, "before_eval")

  def after_save(self, session, global_step_value):
    """Returns True (stop training) when the listener asks for it."""
    del session
    self.saw_a_save = True
    if self._first_save:  # The save at session start: nothing trained yet.
      self._first_save = False
      return None
    if not self._may_evaluate():
      return True
    now = self._clock()
    if (self._last_eval_time is not None and
        now - self._last_eval_time < self._throttle_secs):
      final = self._evaluator.max_training_steps
      if final is None or global_step_value < final:  # end() evaluates it.
        logging.info("eval | checkpoint at step %d not evaluated: %.0f s "
                     "since the last evaluation (throttle_secs=%s)",
                     global_step_value, now - self._last_eval_time,
                     self._throttle_secs)
      return None
    return None if self._evaluate(global_step_value) else True

  def end(self, session, global_step_value):
    del session
    self.saw_a_save = True
    if global_step_value != self._last_eval_step and self._may_evaluate():
      self._evaluate(global_step_value)
