"""Preemption (SIGTERM) and lost peers during training.

`train_loop.run` puts one `TrainingGuard` around its MonitoredSession::

    guard = preemption.TrainingGuard.for_run(config, context, model_dir)
    creator = guard.wrap_creator(creator)   # session: lost-peer errors
    hooks.append(guard.hook)                # last hook: SIGTERM -> stop

* SIGTERM (or SIGINT, Ctrl-C) while training only sets a flag; the loop
  stops after the current step, the chief's CheckpointSaverHook saves at that step in `end()`, and
  the guard's hook (the last one) raises `TrainingPreemptedError`, so that a
  supervisor restarts the task, which resumes at that step. Under a
  collective strategy the workers all-reduce a stop vote about every
  second of training (`guard_hook.VOTE_SECS`), after the same run, so that
  all stop after the same step (a worker stopping alone would leave its
  peers waiting in the next all-reduce).
* A step failing because a peer is gone raises `errors.PeerLostError`
  naming the peer, instead of MonitoredSession's in-place session
  re-creation (which waits forever for a dead collective peer). Steps of a
  multi-task job have a deadline of HARNESS_PEER_TIMEOUT_SECS (default 60).
  A peer that left its loop cleanly (its input ended) ends ours cleanly.
* A collective task waits until its peers started after the last group
  formed before joining (a group cannot take back one new member).

docs/RELIABILITY.md describes the whole recovery model.
"""

import os
import time

from absl import logging

from harness import cluster as cluster_lib
from harness import errors
from harness import plan as plan_lib
from harness._tf import tf
from harness.cluster import env_knobs
from harness.guard import peer_wait
from harness.guard import peer_watch
from harness.guard import peers
from harness.guard.guard_hook import GuardHook
from harness.guard.stop_signal import DEFAULT_STOP_TIMEOUT_SECS
from harness.guard.stop_signal import STOP_SIGNAL
from harness.state import run_state

__all__ = [
    "TrainingGuard",
    "fail_fast_rpcs",
    "resumable_reason",
]

PREEMPTED_REASON = "preempted"
_RENDEZVOUS_POLL_SECS = 0.5



def fail_fast_rpcs(environ=None):
  """Makes TensorFlow's RPCs to a dead task fail at once (GRPC_FAIL_FAST).

  By default TensorFlow's gRPC calls wait for a peer's channel to become
  ready again: a trainer whose parameter server died hangs until the ps is
  back, whatever the step deadline. With GRPC_FAIL_FAST=true they fail with
  Unavailable at once. TensorFlow reads the variable at its first RPC, so
  call this before the task's server or session exists. A non-empty value
  the user set is kept.

  Args:
    environ: the environment to update (default `os.environ`).
  """
  environ = os.environ if environ is None else environ
  if not environ.get("GRPC_FAIL_FAST", "").strip():  # Empty aborts TF.
    environ["GRPC_FAIL_FAST"] = "true"


def resumable_reason(reason):
  """Whether a `training_stopped` reason means training should resume."""
  reason = str(reason or "")
  return reason == PREEMPTED_REASON or reason.startswith("failed")


# ------------------------------------------------------------ the guard --


class TrainingGuard:
  """SIGTERM handling and lost-peer detection for one training loop.

  Attributes:
    hook: the SessionRunHook to add LAST to the loop's hooks.
  """

  def __init__(self, *, task_label, is_chief, model_dir=None, cluster=None,
               collective=False, peer_timeout_secs=env_knobs.PEER_TIMEOUT.default,
               handle_sigterm=True, clock=time.time, sleep=time.sleep,
               session_creation_timeout_secs=7200, probe_peer=None,
               stop_timeout_secs=DEFAULT_STOP_TIMEOUT_SECS):
    """Makes the guard.

    Args:
      task_label: "chief/0", "worker/1", or "local".
      is_chief: whether this task saves checkpoints.
      model_dir: where peers record a clean end of their loop.
      cluster: {job: [address, ...]} of a multi-task job, else None.
      collective: whether the trainers all-reduce (stop by agreement).
      peer_timeout_secs: step deadline and vote timeout, > 0.
      handle_sigterm: stop on SIGTERM (False in a standalone client).
      clock, sleep: time source and sleep for records and waits (injected
        by tests).
      session_creation_timeout_secs: how long to wait for the peers the
        session needs (RunConfig's value) before `PeersNotReadyError`.
      probe_peer: `fn(address) -> None or why not` telling whether a peer
        answers as a TensorFlow server (default `peer_wait.probe`).
      stop_timeout_secs: after a first SIGTERM/SIGINT, the process exits
        if no step ends within this many seconds (`stop_signal`).
    """
    self.label = task_label
    self.is_chief = is_chief
    self.model_dir = model_dir
    self.cluster = {job: list(a) for job, a in (cluster or {}).items()
                    if job != "evaluator"}
    trainers = [cluster_lib.task_label(job, i)
                for job in cluster_lib.TRAINER_JOBS
                for i in range(len(self.cluster.get(job, ())))]
    self.multi_task = sum(len(a) for a in self.cluster.values()) > 1
    self.vote_group_size = len(trainers) if collective else 0
    self.vote_device = None
    if self.vote_group_size > 1:
      job, index = cluster_lib.split_task_label(task_label)
      self.vote_device = f"/job:{job}/replica:0/task:{index}/device:CPU:0"
    self.peer_timeout_secs = peer_timeout_secs
    self.last_error = None
    self._peers = peers.Peers(self.cluster, task_label)
    self._trainers = [t for t in trainers if t != task_label]
    self._clock = clock
    self._sleep = sleep
    self._started_at = None
    self._opened_at = None
    self._open = False
    self._handle_sigterm = handle_sigterm
    self._session_creation_timeout_secs = session_creation_timeout_secs
    self._probe_peer = probe_peer or peer_wait.probe
    self.stop_timeout_secs = stop_timeout_secs
    self._watch = None
    self._session = None
    self._in_step = False
    self._formed_at = None  # When a step of this session first succeeded.
    self._lost = None  # (label, why) from the watch, once it ended a step.
    self.hook = GuardHook(self)

  @classmethod
  def for_run(cls, config, context, model_dir):
    """The guard for `train_loop.run` under `config` (a RunConfig)."""
    cluster = None
    collective = False
    if config.plan.role == plan_lib.Role.TRAINER and config.cluster_spec:
      cluster = config.cluster_spec.as_dict()
      collective = bool(config.strategy_kind and
                        config.strategy_kind.lockstep)
    return cls(task_label=context.task_label, is_chief=context.is_chief,
               model_dir=model_dir, cluster=cluster, collective=collective,
               peer_timeout_secs=config.peer_timeout_secs,
               handle_sigterm=config.remote_cluster is None,
               session_creation_timeout_secs=(
                   config.session_creation_timeout_secs),
               stop_timeout_secs=config.stop_timeout_secs)

  def wrap_creator(self, creator):
    """The session creator to give MonitoredSession instead of `creator`."""
    return peers.GuardedCreator(creator, self)

  def opened(self, session=None):
    """The session exists; `session` (raw) is closed if a peer dies."""
    self._opened_at = self._clock()
    if self.model_dir and self.multi_task:
      run_state.write_task_opened(self.model_dir, self.label)
    if not self._open and self._handle_sigterm:
      self._open = True
      STOP_SIGNAL.acquire(label=self.label,
                          stop_timeout_secs=self.stop_timeout_secs)
    if session is not None and self.vote_group_size > 1:
      self._session = session
      self._watch = peer_watch.PeerWatch(
          {name: address for address, name in self._peers.by_address.items()
           if name in self._trainers},
          on_lost=self.peer_gone, restarted=self._restarted_since_formed)
      self._watch.start()

  def closed(self):
    if self._watch is not None:
      self._watch.stop()
      self._watch = None
    if self._open:
      self._open = False
      STOP_SIGNAL.release()

  @property
  def peer_lost(self):
    """Whether the peer watch found a dead peer and ended a step."""
    return self._lost is not None

  def step_begins(self):
    self._in_step = True

  def step_ends(self, succeeded=False):
    self._in_step = False
    if succeeded and self._formed_at is None:
      self._formed_at = self._clock()  # Every peer took part in a step.

  def peer_gone(self, label, why):
    """PeerWatch's call: ends the step in flight; False if none is."""
    if not self._in_step or self._session is None:
      return False
    if self.model_dir and run_state.loops_ended_since(
        self.model_dir, [label], self._opened_at or 0.0):
      return False  # It left the loop cleanly: the step ends by itself.
    self._lost = (label, why)
    logging.warning("train | %s | lost peer %s: %s; ending the step",
                    self.label, label, why)
    try:
      self._session.close()  # The step in flight fails (Cancelled).
    except Exception as e:  # pylint: disable=broad-except
      logging.debug("train | %s | closing the session: %s", self.label, e)
    return True

  def _restarted_peers(self, since=None):
    """Collective peers that recorded a start after `since` (default: this
    session's opening)."""
    since = since or self._opened_at
    if not (self.model_dir and self.vote_group_size > 1 and since):
      return set()
    return {label for label, record in run_state.task_records(
        self.model_dir, self._trainers).items()
            if record.get("written_at", 0) > since}

  def _restarted_since_formed(self):
    """The watch's test: only once a step succeeded (all peers joined); a
    peer that starts late is not a restart."""
    if self._formed_at is None:
      return set()
    return self._restarted_peers(self._formed_at)

  def before_session(self):
    """Records this start; a restarted collective task waits for its peers.

    A collective group cannot take back a restarted member while the other
    members still hold the old group (the new member fails with "incarnation
    doesn't match"). So a collective task waits, up to 3 x the peer timeout
    + 60 s, until every peer has (re)started since the last group formed
    (the latest session opening on record): the survivors of a crash first
    detect the loss (within the peer timeout), exit and are restarted.
    """
    STOP_SIGNAL.stage = ("creating the training session (waiting for "
                         "peers, restoring the newest checkpoint)")
    if not self.multi_task:
      return
    self._wait_for_ports()
    if not self.model_dir:
      return
    previous = run_state.write_task_started(self.model_dir, self.label)
    self._started_at = self._clock()
    if self.vote_group_size <= 1:
      return
    # When the last group formed: the latest session opening on record.
    records = run_state.task_records(self.model_dir, self._trainers)
    formed = max([r.get("opened_at", 0) for r in records.values()] +
                 [(previous or {}).get("opened_at", 0)])
    if not formed:
      return
    limit = 3 * self.peer_timeout_secs + 60
    deadline = self._clock() + limit
    logged = False
    while True:
      records = run_state.task_records(self.model_dir, self._trainers)
      stale = sorted(t for t in self._trainers
                     if records.get(t, {}).get("written_at", 0) < formed)
      if not stale:
        if logged:
          logging.info("train | %s | every peer started since the last group "
                       "formed: joining", self.label)
        return
      if self._clock() > deadline:
        logging.warning("train | %s | %s did not start in %g s; trying to "
                        "join anyway", self.label, ", ".join(stale), limit)
        return
      if not logged:
        logged = True
        # True of a restart and of a new run in a used model_dir alike.
        logging.info("train | %s | waiting (up to %g s) for %s to start: a "
                     "collective group forms from tasks started after the "
                     "last one formed (%.0f s ago)", self.label, limit,
                     ", ".join(stale), max(0.0, self._clock() - formed))
      self._sleep(_RENDEZVOUS_POLL_SECS)

  def _wait_for_ports(self):
    """Waits until the peers this session talks to answer as TF servers.

    With fail-fast RPCs (`fail_fast_rpcs`) a session created before its
    parameter servers (or, under collective, its peers) listen would fail
    at once instead of waiting; tasks of one job start seconds apart. The
    wait is logged every 10 s and ends after session_creation_timeout_secs
    with `PeersNotReadyError` naming the missing tasks (`peer_wait`).
    """
    needed = set(self._peers.ps() if not self.vote_group_size else
                 self._peers.trainers())
    peer_wait.wait_for_peers(
        {name: address for address, name in self._peers.by_address.items()
         if name in needed},
        task_label=self.label,
        timeout_secs=self._session_creation_timeout_secs,
        sleep=self._sleep, check=self._probe_peer)

  def loop_ended_cleanly(self):
    if self.model_dir and self.multi_task:
      run_state.write_loop_ended(self.model_dir, self.label)

  def raise_for(self, error, during="a training step"):
    """Raises what a peer error of the session means (or returns)."""
    self.last_error = f"{type(error).__name__}: {peers.first_line(error)}"
    if not self.multi_task:
      return
    if self._lost is not None:
      self._raise_lost(*self._lost, during, error)
    text = getattr(error, "message", None) or str(error)
    if isinstance(error, peers.MAYBE_PEER_ERRORS) and (
        not peers.PEER_MESSAGE_RE.search(text)):
      return
    ended = run_state.loops_ended_since(
        self.model_dir, self._trainers, self._opened_at or 0.0) if (
            self.model_dir and self.vote_group_size > 1) else set()
    if ended and during == "a training step":
      logging.info("train | %s | %s left the step loop (input ended): "
                   "ending here too", self.label, ", ".join(sorted(ended)))
      raise tf.errors.OutOfRangeError(
          None, None, f"peer {sorted(ended)} ended its input") from error
    named = set(self._peers.named_in(text))
    silent = set(self._peers.silent())
    # Every collective peer recorded its start before the group formed.
    restarted = self._restarted_peers()
    candidates = [
        (named & silent, "named in the error; port silent"),
        (restarted, "restarted since the group formed"),
        (silent, "port silent"),
        (named, "named in the error")]
    lost, how = next(((sorted(c), h) for c, h in candidates if c),
                     ([], "unknown"))
    if isinstance(error, tf.errors.DeadlineExceededError):
      how += f"; no answer in {self.peer_timeout_secs:g} s"
    self._raise_lost(", ".join(lost) or "(unknown)", how, during, error)

  def _raise_lost(self, peer, how, during, error):
    """PeerLostError in one short line; docs/ERRORS.md#lost-peer has more."""
    logging.debug("train | %s | the error: %s", self.label, self.last_error)
    if during != "a training step":
      how += f", {during}"
    raise errors.PeerLostError(
        f"{self.label}: lost peer {peer} ({how}). Fix: restart it "
        "(--max_restarts); see docs/ERRORS.md#lost-peer") from error
