"""The session hooks that carry an early stop to every worker.

`harness.early_stopping.make_early_stopping_hook` picks one per task:
`StopOnPredicateHook` on the chief (evaluates the predicate; with workers
to tell, sets `signal_early_stopping/STOP`), `CheckForStoppingHook` on the
other workers (stop once that variable is set), or, under a collective
multi-worker strategy, `CollectiveEarlyStoppingHook` on every worker (a SUM
all-reduce of votes at the same steps). tf.estimator 2.15 named the first
two `early_stopping._StopOnPredicateHook` / `_CheckForStoppingHook`; those
names still work.
"""

import contextlib

from absl import logging

from harness import errors
from harness._tf import tf
from harness.state import run_state

__all__ = [
    "ArgumentTypeError",
    "StopOnPredicateHook",
    "CheckForStoppingHook",
    "CollectiveEarlyStoppingHook",
    "get_or_create_stop_var",
]

SessionRunHook = tf.compat.v1.train.SessionRunHook
SessionRunArgs = tf.compat.v1.train.SessionRunArgs
SecondOrStepTimer = tf.compat.v1.train.SecondOrStepTimer


class ArgumentTypeError(errors.ConfigError, TypeError):
  """An argument has the wrong type (a TypeError, as in tf.estimator)."""


def get_or_create_stop_var(num_ps_replicas=0):
  """The bool variable by which the chief tells other workers to stop."""
  device = None
  if num_ps_replicas > 0 and not tf.distribute.has_strategy():
    # Between-graph replication: the variable must be shared, so on a PS.
    device = "/job:ps/task:0"
  with tf.compat.v1.device(device), tf.compat.v1.variable_scope(
      "signal_early_stopping", values=[], reuse=tf.compat.v1.AUTO_REUSE):
    return tf.compat.v1.get_variable(
        name="STOP", shape=[], dtype=tf.bool,
        initializer=tf.compat.v1.initializers.constant(False),
        collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES],
        trainable=False)


class StopOnPredicateHook(SessionRunHook):
  """Chief: stops when `should_stop_fn` says so, and tells the others."""

  def __init__(self, should_stop_fn, run_every_secs=60, run_every_steps=None,
               *, model_dir=None, signal_workers=False, num_ps_replicas=0):
    if not callable(should_stop_fn):
      raise ArgumentTypeError("`should_stop_fn` must be callable.")
    self._should_stop_fn = should_stop_fn
    self._timer = SecondOrStepTimer(
        every_secs=run_every_secs, every_steps=run_every_steps)
    self._model_dir = model_dir
    self._signal_workers = signal_workers
    self._num_ps_replicas = num_ps_replicas
    self._global_step_tensor = None
    self._stop_op = None

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    if self._signal_workers:
      stop_var = get_or_create_stop_var(self._num_ps_replicas)
      self._stop_op = tf.compat.v1.assign(stop_var, True)

  def before_run(self, run_context):
    del run_context
    return SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context, run_values):
    global_step = run_values.results
    if not self._timer.should_trigger_for_step(global_step):
      return
    self._timer.update_last_triggered_step(global_step)
    if self._should_stop_fn():
      # Fetched with train_op, the step may predate its increment: re-read.
      global_step = int(run_context.session.run(self._global_step_tensor))
      logging.info("Requesting early stopping at global step %d", global_step)
      if self._stop_op is not None:
        run_context.session.run(self._stop_op)
      if self._model_dir:
        run_state.write_training_stopped(
            self._model_dir, "early_stopping", global_step)
      run_context.request_stop()


class CheckForStoppingHook(SessionRunHook):
  """Non-chief: requests stop once the chief has set the stop variable."""

  def __init__(self, num_ps_replicas=0):
    self._num_ps_replicas = num_ps_replicas
    self._stop_var = None

  def begin(self):
    self._stop_var = get_or_create_stop_var(self._num_ps_replicas)

  def before_run(self, run_context):
    del run_context
    return SessionRunArgs(self._stop_var)

  def after_run(self, run_context, run_values):
    if run_values.results:
      logging.info("Early stopping requested, suspending run.")
      run_context.request_stop()


class CollectiveEarlyStoppingHook(SessionRunHook):
  """Every worker votes at the same step; a SUM all-reduce tallies the votes.

  All workers run `stop_op` at the same global steps (hence steps, not
  seconds), so the collective inside it cannot hang; each adds 1 (stop) or
  0, and all see the sum in the next step's fetch and stop together.
  """

  def __init__(self, should_stop_fn, run_every_steps, *, strategy, model_dir,
               is_chief):
    self._should_stop_fn = should_stop_fn
    self._timer = SecondOrStepTimer(
        every_secs=None, every_steps=run_every_steps)
    self._strategy = strategy
    self._model_dir = model_dir
    self._is_chief = is_chief
    self._global_step_tensor = None
    self._stop_var = None
    self._stop_op = None
    self._vote = None

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    scope = (self._strategy.scope() if not tf.distribute.has_strategy()
             else contextlib.nullcontext())
    with scope, tf.compat.v1.variable_scope(
        "signal_early_stopping", values=[], reuse=tf.compat.v1.AUTO_REUSE):
      self._stop_var = tf.compat.v1.get_variable(
          name="STOP", shape=[], dtype=tf.int32,
          initializer=tf.compat.v1.initializers.constant(0),
          collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES],
          synchronization=tf.VariableSynchronization.ON_WRITE,
          aggregation=tf.VariableAggregation.SUM, trainable=False)
      self._vote = tf.compat.v1.placeholder_with_default(
          0, shape=(), name="stop_vote")
      self._stop_op = self._strategy.extended.call_for_each_replica(
          lambda var, vote: var.assign_add(vote),
          args=(self._stop_var, self._vote))

  def before_run(self, run_context):
    del run_context
    return SessionRunArgs(
        {"global_step": self._global_step_tensor, "stop": self._stop_var})

  def after_run(self, run_context, run_values):
    global_step = run_values.results["global_step"]
    if run_values.results["stop"] > 0:
      logging.info("Early stopping requested, suspending run.")
      if self._is_chief and self._model_dir:
        run_state.write_training_stopped(
            self._model_dir, "early_stopping",
            run_context.session.run(self._global_step_tensor))
      run_context.request_stop()
      return
    if not self._timer.should_trigger_for_step(global_step):
      return
    self._timer.update_last_triggered_step(global_step)
    vote = 1 if self._should_stop_fn() else 0
    if vote:
      logging.info("Requesting early stopping at global step %d", global_step)
    run_context.session.run(self._stop_op, feed_dict={self._vote: vote})
