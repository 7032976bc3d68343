"""One writer per model_dir: the trainer's lease.

A trainer (the local trainer, the chief of a cluster, a standalone client's
chief thread) holds a lease in its model_dir while it trains::

    with lease.hold(model_dir, task_label="chief/0") as held:
      ...  # train; add `held.hook` to the MonitoredSession's hooks

The lease is a JSON file, `<model_dir>/trainer.lease`, written through
`tf.io.gfile` with the holder's host, PID namespace, boot id, pid, task and
times, refreshed every `refresh_secs` by a thread. A second trainer is
refused while a live lease exists, with an error naming the holder and the
fix. A holder in this process space (same host, PID namespace and boot)
whose pid is dead is taken over at once, as is an earlier run of this
process (our pid, a lease this process no longer holds); a live trainer in
another thread of this process is refused at once. A holder elsewhere
(another container with the same host name, another machine, an old lease
file) is watched until it refreshes (refused) or for
`lease_file.STALE_AFTER_REFRESHES` periods after its last refresh, at most,
also when that time is ahead of our clock or not a number (no refresh: taken
over with a warning, a restarted pod's dead predecessor). `force_takeover=True`
(`--force_takeover`) takes over a live lease; the old holder stops at its
next refresh.

The lease file is also what only the folder the trainer started with has:
`saving_listener` looks for it before each checkpoint save, and a refresh
that finds it gone stops rewriting it; either ends training with
`ModelDirDeletedError` (model_dir deleted, or deleted and made again, e.g.
by TensorFlow's summary writer), never a save into the new folder.

Evaluators, exports and predictions read model_dir without a lease.
A claim (read, decide, write, read back) holds an exclusive lock of a local
model_dir (`claim_lock`), so two processes decide one after the
other: exactly one holds it. On a filesystem without locks (gs://, hdfs://)
the claim reads its token back at once and again `SETTLE_SECS` later: two
trainers both hold it only when one took longer than that from its read to
its write, and the loser stops at its first refresh.
"""

import contextlib
import dataclasses
import errno
import fcntl
import os
import socket
import threading
import time

from absl import logging

from harness import errors
from harness._tf import tf
from harness.state import lease_file
from harness.state import processes

__all__ = ["SETTLE_SECS", "Lease", "acquire", "hold", "claim_lock"]

# Without a lock: the second read-back of a claim's token, seconds later.
SETTLE_SECS = 1.0
# The longest a claim may wait for another process's claim: its watch.
_CLAIM_LOCK_SECS = ((lease_file.STALE_AFTER_REFRESHES + 2) *
                    lease_file.MAX_REFRESH_SECS)

# A lock per model_dir, so that two threads' claims cannot interleave.
_DIR_LOCKS = {}
_DIR_LOCKS_LOCK = threading.Lock()


def _dir_lock(model_dir):
  key = model_dir.rstrip("/")
  if "://" not in model_dir:
    key = os.path.realpath(model_dir)  # local-fs: one key for aliases
  with _DIR_LOCKS_LOCK:
    return _DIR_LOCKS.setdefault(key, threading.Lock())


def _local_dir(model_dir):
  """The local path of `model_dir`, or None for another filesystem."""
  model_dir = os.fspath(model_dir)
  if model_dir.startswith("file://"):
    return model_dir[len("file://"):]
  return None if "://" in model_dir else model_dir


@contextlib.contextmanager
def claim_lock(model_dir, *, timeout_secs, sleep=time.sleep):
  """Holds an exclusive `flock` of a local `model_dir` for one claim.

  Yields True while it holds it; False where there is none to take
  (another filesystem, or one without `flock`): the claim is then
  check-then-write, verified by reading the token back.

  Raises:
    ModelDirLeaseError: another process held it for `timeout_secs`.
  """
  local = _local_dir(model_dir)
  fd = None
  if local is not None:
    try:
      fd = os.open(local, os.O_RDONLY | os.O_DIRECTORY)  # local-fs: flock
    except OSError:
      fd = None
  try:
    yield fd is not None and _flock(fd, model_dir, timeout_secs, sleep)
  finally:
    if fd is not None:
      os.close(fd)  # Releases the lock.


def _flock(fd, model_dir, timeout_secs, sleep):
  deadline = time.monotonic() + timeout_secs
  while True:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      return True
    except OSError as e:
      if e.errno not in (errno.EAGAIN, errno.EACCES):
        return False  # ENOLCK, EOPNOTSUPP...: no locks on this filesystem.
    if time.monotonic() > deadline:
      raise errors.ModelDirLeaseError(
          f"model_dir {model_dir}: another process kept deciding who holds "
          f"its lease for {timeout_secs:g} s (an exclusive lock of the "
          "directory). Fix: stop the other trainer, or use another "
          "--model_dir.")
    sleep(0.01)


class Lease:
  """A held lease: refreshed in the background until `release()`."""

  def __init__(self, model_dir, record, *, clock):
    self.model_dir = os.fspath(model_dir)
    self.record = record
    self._clock = clock
    self._stop = threading.Event()
    self._lost = None  # The record that replaced ours, once seen.
    self._gone = None  # Why model_dir is not our folder any more, once seen.
    self._thread = threading.Thread(
        target=self._refresh_loop, name="harness-lease", daemon=True)
    self._hook = None

  @property
  def lost_to(self):
    """The record of the trainer that took the lease over, or None."""
    return self._lost

  def _refresh_loop(self):
    while not self._stop.wait(self.record.refresh_secs):
      try:
        self.refresh()
      except Exception as e:  # pylint: disable=broad-except
        logging.warning("lease | cannot refresh %s: %s",
                        lease_file.path(self.model_dir), e)
      if self._lost is not None or self._gone is not None:
        return

  def _gone_detail(self):
    """Why model_dir is no longer the folder this lease was written in (our
    lease file is missing), or None. Two `tf.io.gfile` lookups."""
    gfile = tf.io.gfile
    try:
      if gfile.exists(lease_file.path(self.model_dir)):
        return None
      if not gfile.exists(self.model_dir):
        return "it no longer exists"
    except tf.errors.OpError as e:  # Its file system cannot say: not known.
      logging.warning("lease | cannot look for %s: %s",
                      lease_file.path(self.model_dir), e)
      return None
    return (f"the folder there now lacks the {lease_file.LEASE_FILE} this "
            "trainer wrote when it started: it was made again, e.g. by "
            "TensorFlow's summary writer")

  def refresh(self):
    """Rewrites the lease with the current time, unless another took it or
    it is gone (model_dir deleted: writing it would make the folder again)."""
    gone = self._gone_detail()
    if gone is not None:
      self._gone = gone
      logging.error("lease | %s | model_dir %s was deleted (%s); this "
                    "trainer stops writing it", self.record.task,
                    self.model_dir, gone)
      return
    current = lease_file.read(self.model_dir)
    if current is not None and current.token != self.record.token:
      self._lost = current
      lease_file.forget(self.record.token)
      logging.error(
          "lease | %s | model_dir %s was taken over by %s; this trainer "
          "stops writing it", self.record.task, self.model_dir,
          current.describe(self._clock()))
      return
    self.record = dataclasses.replace(self.record,
                                      refreshed_time=self._clock())
    lease_file.write(self.model_dir, self.record)

  def check(self):
    """Raises ModelDirLeaseError once another trainer took the lease over,
    ModelDirDeletedError once a refresh found model_dir deleted."""
    if self._gone is not None:
      raise errors.ModelDirDeletedError(errors.ModelDirDeletedError.message(
          self.model_dir, self._gone))
    if self._lost is not None:
      raise errors.ModelDirLeaseError(
          f"model_dir {self.model_dir} was taken over by another trainer "
          f"({self._lost.describe(self._clock())}) while this one "
          f"({self.record.task}, pid {self.record.pid}) trained; it stopped so "
          "that checkpoints of two runs do not interleave. Fix: let one "
          "trainer own a model_dir; use --force_takeover only when the old "
          "trainer is gone.")

  @property
  def hook(self):
    """A SessionRunHook that stops training with an error once lost."""
    if self._hook is None:
      lease = self

      class _LeaseHook(tf.compat.v1.train.SessionRunHook):

        def after_run(self, run_context, run_values):
          del run_context, run_values
          lease.check()

      self._hook = _LeaseHook()
    return self._hook

  def check_folder(self):
    """`check`, after looking for our lease file (a save's check): raises
    ModelDirDeletedError when model_dir is not the folder this lease was
    written in. Nothing once released."""
    if self._stop.is_set():
      return
    self._gone = self._gone or self._gone_detail()
    self.check()

  @property
  def saving_listener(self):
    """A CheckpointSaverListener that runs `check_folder` before each save:
    a deleted model_dir that something made again (a summary write) would
    take the save, training on without its checkpoints. A saver hook that
    the next train() call reuses keeps it: released, it checks nothing."""
    lease = self

    class _SameFolderListener(tf.compat.v1.train.CheckpointSaverListener):

      def before_save(self, session, global_step_value):
        del session, global_step_value
        lease.check_folder()

    return _SameFolderListener()

  def release(self):
    """Stops refreshing and removes the lease file if it is still ours."""
    self._stop.set()
    lease_file.forget(self.record.token)
    if self._thread.is_alive():
      self._thread.join(timeout=self.record.refresh_secs + 5)
    current = lease_file.read(self.model_dir)
    if current is not None and current.token == self.record.token:
      try:
        tf.io.gfile.remove(lease_file.path(self.model_dir))
      except Exception as e:  # pylint: disable=broad-except
        if type(e).__name__ != "NotFoundError":
          raise
      logging.info("lease | %s | released model_dir's %s", self.record.task,
                   lease_file.LEASE_FILE)

  def __enter__(self):
    return self

  def __exit__(self, *unused_exc):
    self.release()


def acquire(model_dir, *, task_label="local", force_takeover=False,
            refresh_secs=lease_file.DEFAULT_REFRESH_SECS, clock=time.time,
            host=None, pid=None, pid_alive=processes.pid_alive, space=None,
            sleep=time.sleep):
  """Takes the trainer's lease of `model_dir` and starts refreshing it.

  Args:
    model_dir: the directory (any `tf.io.gfile` path); created if missing.
    task_label: who trains, e.g. "local" or "chief/0" (shown to others).
    force_takeover: take over a live lease of another trainer.
    refresh_secs: seconds between refreshes (> 0; at most
      `lease_file.MAX_REFRESH_SECS` are used).
    clock, host, pid, pid_alive, space, sleep: injectable time, identity
      (space: see `processes.process_space`), liveness and the pause of
      `lease_file.watch`.

  Returns:
    A started `Lease`; call `release()` (or use it as a context manager).

  Raises:
    ModelDirLeaseError: another trainer holds a live lease (one in another
      thread of this process too, at once).
    ConfigError: `refresh_secs` is not > 0.
  """
  if isinstance(refresh_secs, bool) or not isinstance(
      refresh_secs, (int, float)) or not 0 < refresh_secs < float("inf"):
    raise errors.ConfigError("`refresh_secs` must be a number of seconds > "
                             f"0, got {refresh_secs!r}.")
  # Others count a period up to MAX_REFRESH_SECS: refresh at least as often.
  refresh_secs = min(float(refresh_secs), lease_file.MAX_REFRESH_SECS)
  identity = dict(host=socket.gethostname() if host is None else host,
                  pid=os.getpid() if pid is None else pid,
                  space=processes.process_space() if space is None else space)
  model_dir = os.fspath(model_dir)
  tf.io.gfile.makedirs(model_dir)
  # Threads of this process decide one by one, and processes too.
  with _dir_lock(model_dir), claim_lock(
      model_dir, timeout_secs=_CLAIM_LOCK_SECS) as atomic:
    record = lease_file.claim(
        model_dir, task_label=task_label, force_takeover=force_takeover,
        refresh_secs=float(refresh_secs), clock=clock, sleep=sleep,
        pid_alive=pid_alive, settle_secs=None if atomic else SETTLE_SECS,
        **identity)
    lease = Lease(model_dir, record, clock=clock)
  lease._thread.start()  # pylint: disable=protected-access
  logging.info("lease | %s | holds model_dir's %s (host %s, pid "
               "%d, refreshed every %g s)", task_label, lease_file.LEASE_FILE,
               record.host, record.pid, refresh_secs)
  logging.debug("lease | %s | %s", task_label, lease_file.path(model_dir))
  return lease


def hold(model_dir, **kwargs):
  """`acquire(...)` for a `with` statement; the lease is released at exit."""
  return acquire(model_dir, **kwargs)
