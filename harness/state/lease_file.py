"""The trainer's lease file, `<model_dir>/trainer.lease`, and its claim.

`harness.state.lease` holds a lease for a trainer (locks, refresh, release);
this module owns what the file says and who may write it: the record, its
read and write through `tf.io.gfile`, and the one claim that reads it,
decides whether its holder is gone, watches a holder in another process
space, writes the new record and reads it back::

    record = lease_file.claim(model_dir, task_label="chief/0", ...)
    current = lease_file.read(model_dir)  # None: no lease (or unreadable)
    lease_file.write(model_dir, dataclasses.replace(record, refreshed_time=t))

It also keeps the tokens of the leases this process holds: a record with our
pid is another thread's live lease while its token is held here.
"""

import dataclasses
import datetime
import json
import math
import os
import threading
import uuid

from absl import logging

from harness import errors
from harness._tf import tf
from harness.state import processes

__all__ = ["LEASE_FILE", "DEFAULT_REFRESH_SECS", "MAX_REFRESH_SECS",
           "STALE_AFTER_REFRESHES", "LeaseRecord", "path", "read", "write",
           "watch", "stale_reason", "claim", "forget"]

LEASE_FILE = "trainer.lease"
DEFAULT_REFRESH_SECS = 5.0
# A lease file's refresh period counts up to this (a broken or hostile
# `refresh_secs: 1e9` must not make another trainer wait for years).
MAX_REFRESH_SECS = 60.0
STALE_AFTER_REFRESHES = 6  # Periods without a refresh: the holder is gone.

# The thread names of the leases this process holds now, by token: another
# thread of this process that meets one is refused at once (a lease with
# this pid but another token is an earlier run's).
_HELD = {}
_HELD_LOCK = threading.Lock()


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
  return _judge(record, now=now, host=host, pid=pid, pid_alive=pid_alive,
                space=space)[1]


def _judge(record, *, now, host, pid, pid_alive, space):
  """(whether `record`'s pid can be checked here, `stale_reason`)."""
  local = processes.same_space(record.host, record.pid_ns, record.boot_id,
                               this_host=host, space=space)
  if local and record.pid != pid and not pid_alive(record.pid):
    return local, f"holder pid {record.pid} is not running on this host"
  if local and record.pid == pid:
    if _held_here(record) is not None:
      return local, None
    return local, (f"the holder was this process (pid {pid}) in an earlier "
                   "run or container")
  limit = STALE_AFTER_REFRESHES * record.period_secs
  age = record.age(now)
  if age is not None and age > limit:
    return local, (f"not refreshed for {age:.0f} s (> {STALE_AFTER_REFRESHES}"
                   f" x {record.period_secs:g} s refresh period)")
  return local, None


def _held_here(record):
  """The thread name of this process's live lease `record`, or None."""
  with _HELD_LOCK:
    return _HELD.get(record.token)


def forget(token):
  """This process no longer holds the lease of `token` (released or lost)."""
  with _HELD_LOCK:
    _HELD.pop(token, None)


def claim(model_dir, *, task_label, force_takeover, refresh_secs, clock,
          sleep, host, pid, space, pid_alive, settle_secs=None):
  """Reads, decides, writes and reads back the lease of `model_dir`.

  The caller holds the claim's locks (`harness.state.lease.acquire`). A
  holder in our process space is judged by its pid, one elsewhere is
  watched (`watch`); a stale or forced holder is taken over with a warning.
  `settle_secs`: where no lock made the claim atomic, read the token back
  again that much later. The lease is then held by this thread.

  Returns:
    The written `LeaseRecord`.

  Raises:
    ModelDirLeaseError: another trainer holds a live lease, or won a race.
  """
  now = clock()
  current = read(model_dir)
  local, reason = (None, None) if current is None else _judge(
      current, now=now, host=host, pid=pid, pid_alive=pid_alive, space=space)
  if current is not None and reason is None and not force_takeover and (
      not local):  # A live-looking holder elsewhere: watch it.
    current, now, reason = _held_elsewhere(
        model_dir, current, task_label=task_label, clock=clock, sleep=sleep,
        host=host, pid=pid, space=space)
  if current is not None:
    _take_over(model_dir, current, now, task_label=task_label,
               force_takeover=force_takeover, reason=reason)
  record = LeaseRecord(
      host=host, pid=pid, task=task_label, start_time=now, refreshed_time=now,
      refresh_secs=refresh_secs, token=uuid.uuid4().hex,
      pid_ns=space[0], boot_id=space[1])
  write(model_dir, record)
  _verify(model_dir, record, now)
  if settle_secs is not None:  # Another's write may land after our read-back.
    sleep(settle_secs)
    _verify(model_dir, record, clock())
  with _HELD_LOCK:
    _HELD[record.token] = threading.current_thread().name
  return record


def _held_elsewhere(model_dir, current, *, task_label, clock, sleep, host,
                    pid, space):
  """Watches a live holder in another process space; raises while it lives.

  Returns:
    (the lease as last read or None, the time it was read, the reason it is
    stale when it was not refreshed while watched, else None).
  """
  watched_from = clock()
  current, unchanged = watch(
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


def _verify(model_dir, record, now):
  """Raises ModelDirLeaseError unless the lease file holds `record`."""
  check = read(model_dir)
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
  thread_name = _held_here(holder)
  if thread_name is not None and holder.pid == os.getpid():
    return (
        f"model_dir {model_dir} is in use by another trainer in this process, "
        f"in thread {thread_name!r}: {holder.describe(now)}. Two "
        "trainers on one model_dir would interleave their checkpoints. Fix: "
        "wait for that "
        "train() call to return (join its thread), or give this one another "
        "model_dir.")
  return (
      f"model_dir {model_dir} is in use by another trainer: "
      f"{holder.describe(now)} (lease file {path(model_dir)}). "
      "Two trainers on one model_dir would interleave their checkpoints. "
      "Fix: wait for that trainer to finish (or stop it), use another "
      "--model_dir, or, if it is gone, pass --force_takeover "
      "(RunConfig(force_takeover=True)); a lease not refreshed for "
      f"{stale_after:g} s, or whose process is dead in this host's PID "
      "namespace, is taken over automatically.")
