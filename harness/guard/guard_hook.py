"""The training guard's hook: SIGTERM -> a stop (agreed by every collective
worker), then `TrainingPreemptedError` after the chief's final save.

Collective workers agree in a stop vote (a 2-float all-reduce in a run of
its own after a training run) about every `VOTE_SECS` of training (at most
a tenth of `stop_timeout_secs`, the bound from a signal to the stop), not
after every run: each vote also sums every worker's proposal of how many
runs make that time, so all workers get the same count and vote again
after the same run. A run of a few milliseconds at steps_per_loop=1 would
otherwise pay a second session.run and a second all-reduce each step
(`python -m bench.perf.step_accounting`, bench/RESULTS.md).

`preemption.TrainingGuard` makes one (`guard.hook`), to be added last.
`SaveStageListener` goes first among a CheckpointSaverHook's listeners: a
save in progress is a stage the stop bound does not cut (`stop_signal`).
"""

import time

from absl import logging

from harness import _tf_private
from harness import errors
from harness._tf import tf
from harness.guard.stop_signal import STOP_SIGNAL
from harness.state import checkpoints

__all__ = ["GuardHook", "SaveStageListener", "VOTE_GROUP_KEY",
           "VOTE_INSTANCE_KEY", "VOTE_SECS", "MAX_RUNS_BETWEEN_VOTES"]

# Keys of the vote collective: far above the strategy's own (which count up
# from 1), so the two never share a group or an instance.
VOTE_GROUP_KEY = 1 << 30
VOTE_INSTANCE_KEY = (1 << 30) + 1
# A SIGTERM stops training about this long (plus one run) after it arrived,
# at most; a vote costs a session.run and a small all-reduce (~1-3 ms).
# Runs that slow down 10-fold between votes still stop within the bound.
VOTE_SECS = 1.0
MAX_RUNS_BETWEEN_VOTES = 1000


class GuardHook(tf.compat.v1.train.SessionRunHook):
  """SIGTERM -> stop (agreed under collective); raises after the save."""

  def __init__(self, guard, clock=time.monotonic):
    self._guard = guard
    self._clock = clock
    self._vote = None
    self._runs_per_vote = 1  # Agreed at each vote; the first run votes.
    self._runs_since_vote = 0
    self._voted_at = None
    self._vote_secs = VOTE_SECS
    self._local_flag = None
    self._step = None
    self._options = None
    self._stop_requested = False
    # The global step when the session started and when the loop ended
    # (None: unknown): a run of K steps that hit the input's end is not
    # counted by the loop, but its steps were made.
    self.start_step = None
    self.end_step = None

  def begin(self):
    guard = self._guard
    self._step = _tf_private.global_step_read()
    if guard.peer_timeout_secs and guard.multi_task:
      self._options = tf.compat.v1.RunOptions(
          timeout_in_ms=int(guard.peer_timeout_secs * 1000))
    if guard.vote_group_size > 1:
      self._vote_secs = min(VOTE_SECS, guard.stop_timeout_secs / 10)
      with tf.compat.v1.device(guard.vote_device), tf.name_scope("preempt"):
        # [this worker's stop flag, its proposed runs until the next vote]
        self._local_flag = tf.compat.v1.placeholder_with_default(
            tf.constant([0.0, 1.0]), shape=[2], name="local_stop")
        self._vote = tf.raw_ops.CollectiveReduceV2(
            input=self._local_flag, group_size=guard.vote_group_size,
            group_key=VOTE_GROUP_KEY, instance_key=VOTE_INSTANCE_KEY,
            ordering_token=[], merge_op="Add", final_op="Id",
            timeout_seconds=float(guard.peer_timeout_secs), name="stop_vote")

  def after_create_session(self, session, coord):
    del coord
    self._stop_requested = False
    self._runs_per_vote, self._runs_since_vote = 1, 0
    self._voted_at = self._clock()
    if self._step is not None:
      self.start_step = int(session.run(self._step))
      logging.info("train | %s | starting at step %d", self._guard.label,
                   self.start_step)
    STOP_SIGNAL.stage = ("the first training step (session.run, which also "
                         "reads input_fn's first batch)")

  def before_run(self, run_context):
    del run_context
    self._guard.step_begins()  # The last hook: the step's run is next.
    return tf.compat.v1.train.SessionRunArgs(None, options=self._options)

  def after_run(self, run_context, run_values):
    del run_values
    succeeded = False
    try:
      self._after_step(run_context)
      succeeded = True
    finally:
      self._guard.step_ends(succeeded=succeeded)

  def _after_step(self, run_context):
    if self._vote is not None:
      votes = self._vote_if_due(run_context.session)
      stop = votes > 0
    else:
      stop = STOP_SIGNAL.event.is_set()
      votes = 1
    STOP_SIGNAL.stage = "a training step (session.run)"
    if stop and not self._stop_requested:
      self._stop_requested = True
      STOP_SIGNAL.boundary_reached("saving the final checkpoint")
      logging.warning("preempt | %s | stopping: %s on %d task(s)%s",
                      self._guard.label, STOP_SIGNAL.signal_name or "SIGTERM",
                      votes,
                      " (agreed by every worker)" if self._vote is not None
                      else "")
      run_context.request_stop()

  def _vote_if_due(self, session):
    """The agreed number of tasks stopping (0 between votes)."""
    self._runs_since_vote += 1
    if self._runs_since_vote < self._runs_per_vote:
      return 0
    now = self._clock()
    per_run = (now - self._voted_at) / self._runs_since_vote
    proposal = MAX_RUNS_BETWEEN_VOTES if per_run <= 0 else int(
        max(1, min(MAX_RUNS_BETWEEN_VOTES, self._vote_secs // per_run)))
    # A run of its own, after the step: inside the step it could
    # interleave differently with the model's collectives on each worker
    # (e.g. those of a steps_per_loop while_loop) and deadlock.
    votes, proposals = session.run(self._vote, feed_dict={
        self._local_flag: [1.0 if STOP_SIGNAL.event.is_set() else 0.0,
                           float(proposal)]}, options=self._options)
    # Every worker got the same sums: the same next vote.
    self._runs_per_vote = max(1, int(round(proposals)) //
                              self._guard.vote_group_size)
    self._runs_since_vote, self._voted_at = 0, now
    return int(round(votes))

  def end(self, session):
    if not self._stop_requested:
      self._guard.loop_ended_cleanly()
      if self._step is not None:
        self.end_step = int(session.run(self._step))
      return
    step = session.run(self._step) if self._step is not None else None
    if self._guard.is_chief and self._guard.model_dir:
      # The saved step: under a ps, other workers' steps may have moved the
      # global step on since the chief's final save (issue 51).
      step = checkpoints.step_in_name(tf.train.latest_checkpoint(
          self._guard.model_dir), default=step)
    name = STOP_SIGNAL.signal_name or "SIGTERM"  # A peer's, under a vote.
    how = "interrupted (SIGINT)" if name == "SIGINT" else (
        f"preempted ({name})")
    error = errors.TrainingPreemptedError(
        f"{self._guard.label}: training was {how} and stopped "
        f"at step {step}"
        + (", saved in a checkpoint" if self._guard.is_chief else "")
        + ". Fix: nothing is lost; run the same command again (a supervisor "
        "such as harness.launch --max_restarts or Kubernetes does) to resume "
        "from that step.")
    error.signal_name = name
    raise error


class SaveStageListener(tf.compat.v1.train.CheckpointSaverListener):
  """Marks a checkpoint save (the listeners' `before_save`, then the Saver)
  as a stage `--stop_timeout_secs` does not cut; the first listener."""

  def before_save(self, session, global_step_value):
    del session
    STOP_SIGNAL.begin_finishing(
        f"a checkpoint save (step {global_step_value})")

  def after_save(self, session, global_step_value):
    del session, global_step_value
    STOP_SIGNAL.end_finishing()
