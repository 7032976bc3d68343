"""Lost peers: which errors mean one, and naming it from the error or a probe.

`preemption.TrainingGuard` wraps the training loop's SessionCreator in
`GuardedCreator`; the sessions it makes turn a step's lost-peer error into
`errors.PeerLostError` (through the guard's `raise_for`) instead of
MonitoredSession's in-place session re-creation::

    creator = peers.GuardedCreator(creator, guard)
    names = peers.Peers(cluster, "worker/0").named_in(error_text)
"""

import re
import socket
import threading
import time

from absl import logging

from harness import cluster as cluster_lib
from harness import errors
from harness._tf import tf

__all__ = [
    "MAYBE_PEER_ERRORS", "PEER_ERRORS", "PEER_MESSAGE_RE",
    "NOTICE_SECS", "GuardedCreator", "GuardedSession", "Peers",
    "close_within", "first_line",
]

PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError,
               tf.errors.DeadlineExceededError, tf.errors.CancelledError)
# Raised with other codes when a collective lost its group (a peer died or
# restarted): converted when the message says so.
MAYBE_PEER_ERRORS = (tf.errors.FailedPreconditionError,
                     tf.errors.InternalError)
PEER_MESSAGE_RE = re.compile(
    r"collective ops is aborted|incarnation|socket closed|connection reset|"
    r"failed to connect|connection refused", re.IGNORECASE)
_TASK_RE = re.compile(r"/job:(\w+)/replica:\d+/task:(\d+)")
_ADDRESS_RE = re.compile(r"([\w.\-]+:\d{2,5})")
_PROBE_SECS = 0.5
# Seconds a session's close may take before a line says what it waits for.
NOTICE_SECS = 1.0


def first_line(error):
  """The first line of an error's message (at most 300 characters)."""
  text = (getattr(error, "message", None) or str(error)).strip()
  return text.splitlines()[0][:300] if text else type(error).__name__


def _probe(address):
  host, _, port = address.rpartition(":")
  try:
    with socket.create_connection((host, int(port)), timeout=_PROBE_SECS):
      return True
  except (OSError, ValueError):
    return False


class Peers:
  """This task's view of the cluster, to name a peer from an error text."""

  def __init__(self, cluster, task_label):
    self.task_label = task_label
    self.by_address = {}
    for job, addresses in cluster.items():
      for index, address in enumerate(addresses):
        name = cluster_lib.task_label(job, index)
        if name != task_label and job != "evaluator":
          self.by_address[address] = name

  def named_in(self, text):
    names = [f"{job}/{task}" for job, task in _TASK_RE.findall(text)]
    names += [self.by_address[a] for a in _ADDRESS_RE.findall(text)
              if a in self.by_address]
    return sorted(set(names) - {self.task_label})

  def silent(self):
    return sorted(name for address, name in self.by_address.items()
                  if not _probe(address))

  def ps(self):
    return sorted(n for n in self.by_address.values() if n.startswith("ps/"))

  def trainers(self):
    return sorted(n for n in self.by_address.values()
                  if cluster_lib.split_task_label(n)[0]
                  in cluster_lib.TRAINER_JOBS)


def close_within(sess, *, label, bound_secs=None, notice_secs=NOTICE_SECS,
                 clock=time.monotonic):
  """Closes `sess`, the training session; said when that takes a while.

  TensorFlow's close waits for the session's work to stop: its input
  pipeline's threads (an element in flight, a shuffle buffer refilling),
  and in a multi-task job its work with the peers, whose calls to a peer
  that has gone must time out. After the final checkpoint and export that
  was seconds to a minute of silence (issue 39). Past `notice_secs` one
  line says what the task waits for and how long at most, and one more
  says when it closed. Past `bound_secs` (a multi-task job's
  --peer_timeout_secs; None: no bound) the close goes on in a daemon thread
  and the task goes on to its end (a cluster task leaves with `os._exit`,
  `harness.main`).

  Returns:
    True when the session closed (within the bound).

  Raises:
    What the session's `close()` raised.
  """
  outcome = []

  def close():
    try:
      sess.close()
    except BaseException as e:  # pylint: disable=broad-except
      outcome.append(e)

  start = clock()
  thread = threading.Thread(target=close, name="harness-session-close",
                            daemon=True)
  thread.start()
  thread.join(notice_secs if not bound_secs else min(notice_secs,
                                                        bound_secs))
  if thread.is_alive():
    limit = (f"at most {bound_secs:g} s, --peer_timeout_secs"
             if bound_secs else "no bound")
    logging.info("train | %s | closing the session: waits for its input "
                 "pipeline%s (%s)", label, " and peers" if bound_secs else "",
                 limit)
    thread.join(None if not bound_secs else max(
        0.0, bound_secs - (clock() - start)))
    if thread.is_alive():
      logging.warning("train | %s | the session did not close in %g s "
                      "(--peer_timeout_secs); the task ends without waiting "
                      "for it", label, bound_secs)
      return False
    logging.info("train | %s | session closed after %.1f s", label,
                 clock() - start)
  if outcome:
    raise outcome[0]
  return True


class GuardedSession(tf.compat.v1.Session.__mro__[-2]):  # SessionInterface.
  """A raw session whose lost-peer errors become PeerLostError.

  MonitoredSession re-creates its session on Unavailable/Aborted, which
  with a dead collective peer waits forever; PeerLostError is not one of
  those, so it ends the loop (and the process) instead.
  """

  def __init__(self, sess, guard):
    self._sess = sess
    self._guard = guard

  @property
  def graph(self):
    return self._sess.graph

  @property
  def sess_str(self):
    return self._sess.sess_str

  def run(self, *args, **kwargs):
    try:
      return self._sess.run(*args, **kwargs)
    except PEER_ERRORS + MAYBE_PEER_ERRORS as e:
      self._guard.step_ends()
      self._guard.raise_for(e)
      raise
    except (tf.errors.OpError, RuntimeError) as e:
      self._guard.step_ends()
      if self._guard.peer_lost:  # The guard closed the session.
        self._guard.raise_for(e)
      raise

  def partial_run_setup(self, *args, **kwargs):
    return self._sess.partial_run_setup(*args, **kwargs)

  def partial_run(self, *args, **kwargs):
    return self._sess.partial_run(*args, **kwargs)

  def close(self):
    try:
      close_within(self._sess, label=self._guard.label,
                   bound_secs=(self._guard.peer_timeout_secs
                               if self._guard.multi_task else None))
    finally:
      self._guard.closed()

  def __getattr__(self, name):  # make_callable, list_devices, ...
    return getattr(self._sess, name)


class GuardedCreator(tf.compat.v1.train.SessionCreator):

  def __init__(self, creator, guard):
    self._creator = creator
    self._guard = guard
    self._created = 0

  def create_session(self):
    self._created += 1
    if self._created > 1:
      raise errors.PeerLostError(
          f"{self._guard.label}: the training session failed and "
          f"MonitoredSession tried to re-create it ({self._guard.last_error}"
          "); harness does not re-create sessions in place. The supervisor "
          "restarts this task and it resumes from the last checkpoint.")
    self._guard.before_session()
    try:
      sess = self._creator.create_session()
    except PEER_ERRORS + MAYBE_PEER_ERRORS as e:
      self._guard.raise_for(e, during="creating the session")
      raise
    self._guard.opened(sess)
    return GuardedSession(sess, self._guard)
