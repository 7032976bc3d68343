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
file) is watched until it refreshes (refused) or for `STALE_AFTER_REFRESHES`
periods after its last refresh, at most, also when that time is ahead of
our clock or not a number (no refresh: taken over with a warning, a
restarted pod's dead predecessor). `force_takeover=True`
(`--force_takeover`) takes over a live lease; the old holder stops at its
next refresh.

Evaluators, exports and predictions read model_dir without a lease.
A claim (read, decide, write, read back) holds an exclusive lock of a local
model_dir (`lease_file.claim_lock`), so two processes decide one after the
other: exactly one holds it. On a filesystem without locks (gs://, hdfs://)
the claim reads its token back at once and again `SETTLE_SECS` later: two
trainers both hold it only when one took longer than that from its read to
its write, and the loser stops at its first refresh.
"""

import dataclasses
import os
import socket
import threading
import time
import uuid

from absl import logging

from harness import errors
from harness._tf import tf
from harness.state import lease_file
from harness.state import processes

__all__ = ["STALE_AFTER_REFRESHES", "Lease", "hold", "stale_reason"]

STALE_AFTER_REFRESHES = 6  # Periods without a refresh: the holder is gone.
# Without a lock: the second read-back of a claim's token, seconds later.
SETTLE_SECS = 1.0
# The longest a claim may wait for another process's claim: its watch.
_CLAIM_LOCK_SECS = (STALE_AFTER_REFRESHES + 2) * lease_file.MAX_REFRESH_SECS

# The leases this process holds now, by token: another thread of this
# process that meets one is refused at once (a lease with this pid but
# another token is an earlier run's). And a lock per model_dir, so that two
# threads' check-then-write cannot interleave.
_HELD = {}
_HELD_LOCK = threading.Lock()
_DIR_LOCKS = {}


def _dir_lock(model_dir):
  key = model_dir.rstrip("/")
  if "://" not in model_dir:
    key = os.path.realpath(model_dir)  # local-fs: one key for aliases
  with _HELD_LOCK:
    return _DIR_LOCKS.setdefault(key, threading.Lock())


def _held_here(record):
  """The live `Lease` of this process that wrote `record`, or None."""
  with _HELD_LOCK:
    return _HELD.get(record.token)


def _same_process_space(record, host, space=None):
  """Whether `record`'s pid can be checked here: same host, PID ns, boot."""
  return processes.same_space(record.host, record.pid_ns, record.boot_id,
                              this_host=host, space=space)


def _held_elsewhere(model_dir, current, *, task_label, clock, sleep, host,
                    pid, space):
  """Watches a live holder in another process space; raises while it lives.

  Returns:
    (the lease as last read or None, the time it was read, the reason it is
    stale when it was not refreshed while watched, else None).
  """
  watched_from = clock()
  current, unchanged = lease_file.watch(
      model_dir, current, stale_after=STALE_AFTER_REFRESHES,
      task_label=task_label, clock=clock, sleep=sleep)
  now = clock()
  if current is None:
    return None, now, None
  reason = stale_reason(current, now=now, host=host, pid=pid, space=space)
  if reason is None and unchanged:
    reason = (f"not refreshed during the {now - watched_from:.0f} s watched; "
              f"its last refresh time {current.refreshed_time!r} is ahead "
              "of this host's clock or not a number")
  if reason is None:
    raise errors.ModelDirLeaseError(_held_message(model_dir, current, now))
  return current, now, reason


def stale_reason(record, *, now, host, pid, pid_alive=processes.pid_alive,
                 space=None):
  """Why `record`'s holder is gone, or None while it may still be training.

  The holder's pid is evidence only when host name, PID namespace and boot
  id all match ours (two containers with one host name share none of the
  latter); otherwise only a refresh older than the stale limit counts. A
  holder with our pid is a live trainer of this process (another thread)
  while its lease is held here, else an earlier run's.

  Args: the `LeaseRecord`, the current time (seconds since epoch), this
  machine's host name and this process's pid; `pid_alive(pid) -> bool`;
  `space`: this process's (pid namespace, boot id), `process_space()` if
  None. Returns a short reason ("holder pid 12 is not running ...") or None.
  """
  if _same_process_space(record, host, space):
    if record.pid == pid:
      if _held_here(record) is not None:
        return None
      return (f"the holder was this process (pid {pid}) in an earlier run or "
              "container")
    if not pid_alive(record.pid):
      return f"holder pid {record.pid} is not running on this host"
  limit = STALE_AFTER_REFRESHES * record.period_secs
  age = record.age(now)
  if age is not None and age > limit:
    return (f"not refreshed for {age:.0f} s (> {STALE_AFTER_REFRESHES} x "
            f"{record.period_secs:g} s refresh period)")
  return None


class Lease:
  """A held lease: refreshed in the background until `release()`."""

  def __init__(self, model_dir, record, *, clock):
    self.model_dir = os.fspath(model_dir)
    self.record = record
    self._clock = clock
    self._stop = threading.Event()
    self._lost = None  # The record that replaced ours, once seen.
    self._thread = threading.Thread(
        target=self._refresh_loop, name="harness-lease", daemon=True)
    self._hook = None
    self.thread_name = threading.current_thread().name  # The trainer's.

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
      if self._lost is not None:
        return

  def refresh(self):
    """Rewrites the lease with the current time, unless another took it."""
    current = lease_file.read(self.model_dir)
    if current is not None and current.token != self.record.token:
      self._lost = current
      _forget(self)
      logging.error(
          "lease | %s | model_dir %s was taken over by %s; this trainer "
          "stops writing it", self.record.task, self.model_dir,
          current.describe(self._clock()))
      return
    self.record = dataclasses.replace(self.record,
                                      refreshed_time=self._clock())
    lease_file.write(self.model_dir, self.record)

  def check(self):
    """Raises ModelDirLeaseError once another trainer took the lease over."""
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

  def release(self):
    """Stops refreshing and removes the lease file if it is still ours."""
    self._stop.set()
    _forget(self)
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


def _forget(held):
  with _HELD_LOCK:
    _HELD.pop(held.record.token, None)


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
  with _dir_lock(model_dir), lease_file.claim_lock(
      model_dir, timeout_secs=_CLAIM_LOCK_SECS) as atomic:
    record = _claim(model_dir, task_label=task_label,
                    force_takeover=force_takeover, clock=clock, sleep=sleep,
                    pid_alive=pid_alive, refresh_secs=float(refresh_secs),
                    **identity)
    if not atomic:  # Another's write may land after our read-back.
      sleep(SETTLE_SECS)
      _verify(model_dir, record, clock())
    lease = Lease(model_dir, record, clock=clock)
    with _HELD_LOCK:
      _HELD[record.token] = lease
  lease._thread.start()  # pylint: disable=protected-access
  logging.info("lease | %s | holds model_dir's %s (host %s, pid "
               "%d, refreshed every %g s)", task_label, lease_file.LEASE_FILE,
               record.host, record.pid, refresh_secs)
  logging.debug("lease | %s | %s", task_label, lease_file.path(model_dir))
  return lease


def _claim(model_dir, *, task_label, force_takeover, clock, sleep, host, pid,
           space, pid_alive, refresh_secs):
  """`acquire`'s decision and write; returns the written `LeaseRecord`."""
  now = clock()
  current = lease_file.read(model_dir)
  reason = None
  if current is not None and not force_takeover and not _same_process_space(
      current, host, space) and stale_reason(
          current, now=now, host=host, pid=pid, space=space) is None:
    current, now, reason = _held_elsewhere(
        model_dir, current, task_label=task_label, clock=clock, sleep=sleep,
        host=host, pid=pid, space=space)
  if current is not None:
    _take_over(model_dir, current, now, task_label=task_label,
               force_takeover=force_takeover, reason=reason or stale_reason(
                   current, now=now, host=host, pid=pid,
                   pid_alive=pid_alive, space=space))
  record = lease_file.LeaseRecord(
      host=host, pid=pid, task=task_label, start_time=now, refreshed_time=now,
      refresh_secs=refresh_secs, token=uuid.uuid4().hex,
      pid_ns=space[0], boot_id=space[1])
  lease_file.write(model_dir, record)
  _verify(model_dir, record, now)
  return record


def _verify(model_dir, record, now):
  """Raises ModelDirLeaseError unless the lease file holds `record`."""
  check = lease_file.read(model_dir)
  if check is None or check.token != record.token:  # Lost a start-up race.
    raise errors.ModelDirLeaseError(_held_message(model_dir, check or record,
                                                  now))


def _take_over(model_dir, current, now, *, task_label, force_takeover,
               reason):
  """Says why `current` (stale, or forced) is taken over; else raises."""
  if reason is not None:
    # One short line; the holder's details at DEBUG.
    logging.warning("lease | %s | taking over the stale lease of model_dir: "
                    "%s", task_label, reason)
    logging.debug("lease | %s | the stale lease: %s", task_label,
                  current.describe(now))
  elif force_takeover:
    logging.warning(
        "lease | %s | --force_takeover: taking over the live lease of "
        "model_dir %s from %s; that trainer stops at its next refresh",
        task_label, model_dir, current.describe(now))
  else:
    raise errors.ModelDirLeaseError(_held_message(model_dir, current, now))


def _held_message(model_dir, holder, now):
  stale_after = STALE_AFTER_REFRESHES * holder.period_secs
  here = _held_here(holder)
  if here is not None and holder.pid == os.getpid():
    return (
        f"model_dir {model_dir} is in use by another trainer in this process, "
        f"in thread {here.thread_name!r}: {holder.describe(now)}. Two "
        "trainers on one model_dir would interleave their checkpoints. Fix: "
        "wait for that "
        "train() call to return (join its thread), or give this one another "
        "model_dir.")
  return (
      f"model_dir {model_dir} is in use by another trainer: "
      f"{holder.describe(now)} (lease file {lease_file.path(model_dir)}). "
      "Two trainers on one model_dir would interleave their checkpoints. "
      "Fix: wait for that trainer to finish (or stop it), use another "
      "--model_dir, or, if it is gone, pass --force_takeover "
      "(RunConfig(force_takeover=True)); a lease not refreshed for "
      f"{stale_after:g} s, or whose process is dead in this host's PID "
      "namespace, is taken over automatically.")


def hold(model_dir, **kwargs):
  """`acquire(...)` for a `with` statement; the lease is released at exit."""
  return acquire(model_dir, **kwargs)
