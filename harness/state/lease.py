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
whose pid is dead is taken over at once; one elsewhere (another container
with the same host name, another machine, an old lease file) is watched
until it refreshes (refused) or its last refresh is older than
`STALE_AFTER_REFRESHES` periods (taken over with a warning: a restarted
pod's dead predecessor). `force_takeover=True` (`--force_takeover`) takes
over a live lease; the old holder stops at its next refresh.

Evaluators, exports and predictions read model_dir without a lease.
Creation is check-then-write, then re-read: two trainers starting within
the same instant on a filesystem without atomic create may both pass; the
one whose write lost sees it at its first refresh and stops.
"""

import dataclasses
import datetime
import json
import os
import socket
import threading
import time
import uuid

from absl import logging

from harness import errors
from harness._tf import tf
from harness.state import processes

__all__ = [
    "LEASE_FILE", "DEFAULT_REFRESH_SECS", "STALE_AFTER_REFRESHES",
    "LeaseRecord", "Lease", "hold", "read", "stale_reason",
]

LEASE_FILE = "trainer.lease"
DEFAULT_REFRESH_SECS = 5.0
# A lease not refreshed for this many periods is stale (a holder on another
# host that died, or lost its filesystem).
STALE_AFTER_REFRESHES = 6


@dataclasses.dataclass(frozen=True, kw_only=True)
class LeaseRecord:
  """What a lease file says about its holder (times: seconds since epoch)."""
  host: str
  pid: int
  task: str
  start_time: float
  refreshed_time: float
  refresh_secs: float
  token: str
  # Where `pid` means something: `readlink /proc/self/ns/pid` and the
  # kernel's boot id of the holder ("" when unknown, e.g. an old lease file).
  pid_ns: str = ""
  boot_id: str = ""

  def describe(self, now):
    started = datetime.datetime.fromtimestamp(
        self.start_time, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    age = max(0.0, now - self.refreshed_time)
    return (f"host {self.host}, pid {self.pid}, task {self.task}, started "
            f"{started}, last refreshed {age:.0f} s ago")


def _path(model_dir):
  return os.path.join(os.fspath(model_dir), LEASE_FILE)


def read(model_dir):
  """The lease of `model_dir`, or None if there is none (or it is unreadable).

  An unreadable or malformed lease file counts as no lease; a warning says so.
  """
  gfile = tf.io.gfile
  path = _path(model_dir)
  try:
    if not gfile.exists(path):
      return None
    with gfile.GFile(path, "r") as f:
      data = json.loads(f.read())
    return LeaseRecord(
        host=str(data["host"]), pid=int(data["pid"]), task=str(data["task"]),
        start_time=float(data["start_time"]),
        refreshed_time=float(data["refreshed_time"]),
        refresh_secs=float(data["refresh_secs"]), token=str(data["token"]),
        pid_ns=str(data.get("pid_ns", "")),
        boot_id=str(data.get("boot_id", "")))
  except (ValueError, KeyError, TypeError) as e:
    logging.warning("lease | %s is malformed (%s); treating it as no lease",
                    path, e)
    return None
  except Exception as e:  # pylint: disable=broad-except
    if type(e).__name__ == "NotFoundError":  # Released in between.
      return None
    raise


def _write(model_dir, record):
  gfile = tf.io.gfile
  path = _path(model_dir)
  tmp = f"{path}.tmp-{record.token}"
  try:
    with gfile.GFile(tmp, "w") as f:
      f.write(json.dumps(dataclasses.asdict(record), sort_keys=True))
    gfile.rename(tmp, path, overwrite=True)
  except Exception:  # A full disk: leave no half-written temp file behind.
    try:
      gfile.remove(tmp)
    except Exception:  # pylint: disable=broad-except
      pass  # Never created, or the filesystem is gone; the first error tells.
    raise


def _same_process_space(record, host, space=None):
  """Whether `record`'s pid can be checked here: same host, PID ns, boot."""
  return processes.same_space(record.host, record.pid_ns, record.boot_id,
                              this_host=host, space=space)


def _await_refresh_or_stale(model_dir, current, *, task_label, clock, sleep):
  """Watches a live-looking lease whose holder's pid cannot be checked here.

  A restarted pod meets its dead predecessor's lease this way, a second
  trainer in another container a live one: a refresh proves the holder
  alive, none within the stale limit proves it gone. Bounded by the stale
  limit plus one refresh period. Returns the record as last read.
  """
  limit = STALE_AFTER_REFRESHES * current.refresh_secs
  wait = max(0.0, limit - (clock() - current.refreshed_time))
  wait += current.refresh_secs
  logging.info("lease | %s | held by %s on %s (another process space); "
               "waiting up to %.0f s for a refresh (alive) or none (stale)",
               task_label, current.task, current.host, wait)
  poll = min(1.0, current.refresh_secs / 5)
  start = clock()
  for _ in range(int(wait / poll) + 2):  # Also bounded with a fake clock.
    sleep(poll)
    latest = read(model_dir)
    if latest is None or latest.token != current.token or (
        latest.refreshed_time != current.refreshed_time):
      return latest  # Refreshed, replaced or released: decided again.
    if clock() - latest.refreshed_time > limit or clock() - start > wait:
      return latest
  return read(model_dir)


def _held_elsewhere(model_dir, current, *, task_label, clock, sleep, host,
                    pid, space):
  """Watches a live holder in another process space; raises while it lives.

  Returns:
    (the lease as last read or None, the time it was read).
  """
  current = _await_refresh_or_stale(model_dir, current, task_label=task_label,
                                    clock=clock, sleep=sleep)
  now = clock()
  if current is not None and stale_reason(
      current, now=now, host=host, pid=pid, space=space) is None:
    raise errors.ModelDirLeaseError(_held_message(
        model_dir, current, now, refresh_secs=current.refresh_secs))
  return current, now


def stale_reason(record, *, now, host, pid, pid_alive=processes.pid_alive,
                 space=None):
  """Why `record`'s holder is gone, or None while it may still be training.

  The holder's pid is evidence only when host name, PID namespace and boot
  id all match ours (two containers with one host name share none of the
  latter); otherwise only a refresh older than the stale limit counts.

  Args: the `LeaseRecord`, the current time (seconds since epoch), this
  machine's host name and this process's pid; `pid_alive(pid) -> bool`;
  `space`: this process's (pid namespace, boot id), `process_space()` if
  None. Returns a short reason ("holder pid 12 is not running ...") or None.
  """
  if _same_process_space(record, host, space):
    if record.pid == pid:
      return (f"the holder was this process (pid {pid}) in an earlier run or "
              "container")
    if not pid_alive(record.pid):
      return f"holder pid {record.pid} is not running on this host"
  limit = STALE_AFTER_REFRESHES * record.refresh_secs
  if now - record.refreshed_time > limit:
    return (f"not refreshed for {now - record.refreshed_time:.0f} s (> "
            f"{STALE_AFTER_REFRESHES} x {record.refresh_secs:g} s refresh "
            "period)")
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

  @property
  def lost_to(self):
    """The record of the trainer that took the lease over, or None."""
    return self._lost

  def _refresh_loop(self):
    while not self._stop.wait(self.record.refresh_secs):
      try:
        self.refresh()
      except Exception as e:  # pylint: disable=broad-except
        logging.warning("lease | cannot refresh %s: %s", _path(self.model_dir),
                        e)
      if self._lost is not None:
        return

  def refresh(self):
    """Rewrites the lease with the current time, unless another took it."""
    current = read(self.model_dir)
    if current is not None and current.token != self.record.token:
      self._lost = current
      logging.error(
          "lease | %s | model_dir %s was taken over by %s; this trainer "
          "stops writing it", self.record.task, self.model_dir,
          current.describe(self._clock()))
      return
    self.record = dataclasses.replace(self.record,
                                      refreshed_time=self._clock())
    _write(self.model_dir, self.record)

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
    if self._thread.is_alive():
      self._thread.join(timeout=self.record.refresh_secs + 5)
    current = read(self.model_dir)
    if current is not None and current.token == self.record.token:
      try:
        tf.io.gfile.remove(_path(self.model_dir))
      except Exception as e:  # pylint: disable=broad-except
        if type(e).__name__ != "NotFoundError":
          raise
      logging.info("lease | %s | released model_dir's %s", self.record.task,
                   LEASE_FILE)

  def __enter__(self):
    return self

  def __exit__(self, *unused_exc):
    self.release()


def acquire(model_dir, *, task_label="local", force_takeover=False,
            refresh_secs=DEFAULT_REFRESH_SECS, clock=time.time,
            host=None, pid=None, pid_alive=processes.pid_alive, space=None,
            sleep=time.sleep):
  """Takes the trainer's lease of `model_dir` and starts refreshing it.

  Args:
    model_dir: the directory (any `tf.io.gfile` path); created if missing.
    task_label: who trains, e.g. "local" or "chief/0" (shown to others).
    force_takeover: take over a live lease of another trainer.
    refresh_secs: seconds between refreshes (> 0).
    clock, host, pid, pid_alive, space, sleep: injectable time, identity
      (space: see `processes.process_space`), liveness and the pause of
      `_await_refresh_or_stale`.

  Returns:
    A started `Lease`; call `release()` (or use it as a context manager).

  Raises:
    ModelDirLeaseError: another trainer holds a live lease.
    ConfigError: `refresh_secs` is not > 0.
  """
  if isinstance(refresh_secs, bool) or not isinstance(
      refresh_secs, (int, float)) or refresh_secs <= 0:
    raise errors.ConfigError("`refresh_secs` must be a number of seconds > "
                             f"0, got {refresh_secs!r}.")
  host = socket.gethostname() if host is None else host
  pid = os.getpid() if pid is None else pid
  space = processes.process_space() if space is None else space
  model_dir = os.fspath(model_dir)
  tf.io.gfile.makedirs(model_dir)
  now = clock()
  current = read(model_dir)
  if current is not None and not force_takeover and not _same_process_space(
      current, host, space) and stale_reason(
          current, now=now, host=host, pid=pid, space=space) is None:
    current, now = _held_elsewhere(model_dir, current, task_label=task_label,
                                   clock=clock, sleep=sleep, host=host,
                                   pid=pid, space=space)
  if current is not None:
    _take_over(model_dir, current, now, task_label=task_label,
               force_takeover=force_takeover, reason=stale_reason(
                   current, now=now, host=host, pid=pid,
                   pid_alive=pid_alive, space=space))
  record = LeaseRecord(
      host=host, pid=pid, task=task_label, start_time=now, refreshed_time=now,
      refresh_secs=float(refresh_secs), token=uuid.uuid4().hex,
      pid_ns=space[0], boot_id=space[1])
  _write(model_dir, record)
  check = read(model_dir)
  if check is None or check.token != record.token:  # Lost a start-up race.
    raise errors.ModelDirLeaseError(_held_message(
        model_dir, check or record, now, refresh_secs=record.refresh_secs))
  lease = Lease(model_dir, record, clock=clock)
  lease._thread.start()  # pylint: disable=protected-access
  logging.info("lease | %s | holds model_dir's %s (host %s, pid "
               "%d, refreshed every %g s)", task_label, LEASE_FILE, host, pid,
               refresh_secs)
  logging.debug("lease | %s | %s", task_label, _path(model_dir))
  return lease


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
    raise errors.ModelDirLeaseError(_held_message(
        model_dir, current, now, refresh_secs=current.refresh_secs))


def _held_message(model_dir, holder, now, *, refresh_secs):
  stale_after = STALE_AFTER_REFRESHES * refresh_secs
  return (
      f"model_dir {model_dir} is in use by another trainer: "
      f"{holder.describe(now)} (lease file {_path(model_dir)}). Two trainers "
      "on one model_dir would interleave their checkpoints. Fix: wait for "
      "that trainer to finish (or stop it), use another --model_dir, or, if "
      "it is gone, pass --force_takeover (RunConfig(force_takeover=True)); a "
      f"lease not refreshed for {stale_after:g} s, or whose process is dead "
      "in this host's PID namespace, is taken over automatically.")


def hold(model_dir, **kwargs):
  """`acquire(...)` for a `with` statement; the lease is released at exit."""
  return acquire(model_dir, **kwargs)
