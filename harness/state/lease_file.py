"""The trainer's lease file, `<model_dir>/trainer.lease`: record, read, write.

`harness.state.lease` decides who may train in a model_dir; this module only
turns the file into a `LeaseRecord` and back, through `tf.io.gfile`::

    record = lease_file.read(model_dir)  # None: no lease (or unreadable)
    lease_file.write(model_dir, dataclasses.replace(record, refreshed_time=t))
    with lease_file.claim_lock(model_dir, timeout_secs=60) as atomic: ...

`claim_lock` makes a claim's check-then-write atomic between processes on a
local filesystem (an exclusive `flock` of the directory); elsewhere (gs://,
hdfs://, a filesystem without locks) it holds nothing and says so.
"""

import contextlib
import dataclasses
import datetime
import errno
import fcntl
import json
import math
import os
import time

from absl import logging

from harness import errors
from harness._tf import tf

__all__ = ["LEASE_FILE", "DEFAULT_REFRESH_SECS", "MAX_REFRESH_SECS",
           "LeaseRecord", "path", "read", "write", "claim_lock", "watch"]

LEASE_FILE = "trainer.lease"
DEFAULT_REFRESH_SECS = 5.0
# A lease file's refresh period counts up to this (a broken or hostile
# `refresh_secs: 1e9` must not make another trainer wait for years).
MAX_REFRESH_SECS = 60.0


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

  @property
  def period_secs(self):
    """`refresh_secs` up to `MAX_REFRESH_SECS`, or the default where the
    file's value is not a number > 0 (a broken file must not stretch
    anyone's wait)."""
    secs = self.refresh_secs
    if not (math.isfinite(secs) and secs > 0):
      return DEFAULT_REFRESH_SECS
    return min(secs, MAX_REFRESH_SECS)

  def age(self, now):
    """Seconds since the last refresh at `now`; None when unknown: the
    refresh time is not a number, or ahead of `now` by more than a period
    (the holder's clock is ahead of ours)."""
    age = now - self.refreshed_time
    if not math.isfinite(age) or age < -self.period_secs:
      return None
    return max(0.0, age)

  def describe(self, now):
    try:
      started = datetime.datetime.fromtimestamp(
          self.start_time, datetime.timezone.utc).strftime(
              "%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, OverflowError, OSError):  # NaN, out of range.
      started = f"at {self.start_time!r}"
    age = self.age(now)
    refreshed = (f"last refreshed {age:.0f} s ago" if age is not None else
                 f"last refresh time {self.refreshed_time!r} (ahead of this "
                 "host's clock, or not a number)")
    return (f"host {self.host}, pid {self.pid}, task {self.task}, started "
            f"{started}, {refreshed}")


def path(model_dir):
  """`<model_dir>/trainer.lease`."""
  return os.path.join(os.fspath(model_dir), LEASE_FILE)


def read(model_dir):
  """The lease of `model_dir`, or None if there is none (or it is unreadable).

  An unreadable or malformed lease file counts as no lease; a warning says so.
  """
  gfile = tf.io.gfile
  lease_path = path(model_dir)
  try:
    if not gfile.exists(lease_path):
      return None
    with gfile.GFile(lease_path, "r") as f:
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
                    lease_path, e)
    return None
  except Exception as e:  # pylint: disable=broad-except
    if type(e).__name__ == "NotFoundError":  # Released in between.
      return None
    raise


def write(model_dir, record):
  """Writes `record` as the lease of `model_dir` (temp file, then rename)."""
  gfile = tf.io.gfile
  lease_path = path(model_dir)
  tmp = f"{lease_path}.tmp-{record.token}"
  try:
    with gfile.GFile(tmp, "w") as f:
      f.write(json.dumps(dataclasses.asdict(record), sort_keys=True))
    gfile.rename(tmp, lease_path, overwrite=True)
  except Exception:  # A full disk: leave no half-written temp file behind.
    try:
      gfile.remove(tmp)
    except Exception:  # pylint: disable=broad-except
      pass  # Never created, or the filesystem is gone; the first error tells.
    raise


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


def watch(model_dir, current, *, stale_after, task_label, clock, sleep):
  """Watches a live-looking lease whose holder's pid cannot be checked here.

  A restarted pod meets its dead predecessor's lease this way, a second
  trainer in another container a live one: a refresh proves the holder
  alive, none within the stale limit proves it gone. Bounded by the stale
  limit plus one refresh period, also when the lease's time is ahead of our
  clock or not a number (its age is unknown: watched for the whole bound).
  `stale_after`: the stale limit in refresh periods.

  Returns:
    (the record as last read, or None; whether it stayed unchanged for the
    whole watch: its holder is gone).
  """
  period = current.period_secs
  limit = stale_after * period
  age = current.age(clock())
  wait = min(limit, max(0.0, limit - (age or 0.0))) + period
  logging.info("lease | %s | held by %s on %s (another process space); "
               "waiting up to %.0f s for a refresh (alive) or none (stale)",
               task_label, current.task, current.host, wait)
  poll = min(1.0, period / 5)
  start = clock()
  for _ in range(int(wait / poll) + 2):  # Also bounded with a fake clock.
    sleep(poll)
    latest = read(model_dir)
    if latest is None or latest.token != current.token or repr(
        latest.refreshed_time) != repr(current.refreshed_time):  # NaN too.
      return latest, False  # Refreshed, replaced or released: decide again.
    if clock() - start > wait:
      break
  return current, True
