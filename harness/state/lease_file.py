"""The trainer's lease file, `<model_dir>/trainer.lease`: record, read, write.

`harness.state.lease` decides who may train in a model_dir; this module only
turns the file into a `LeaseRecord` and back, through `tf.io.gfile`::

    record = lease_file.read(model_dir)  # None: no lease (or unreadable)
    lease_file.write(model_dir, dataclasses.replace(record, refreshed_time=t))
"""

import dataclasses
import datetime
import json
import math
import os

from absl import logging

from harness._tf import tf

__all__ = ["LEASE_FILE", "DEFAULT_REFRESH_SECS", "LeaseRecord", "path", "read",
           "write"]

LEASE_FILE = "trainer.lease"
DEFAULT_REFRESH_SECS = 5.0


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
    """`refresh_secs`, or the default where the file's value is not a
    number > 0 (a broken file must not stretch anyone's wait)."""
    secs = self.refresh_secs
    return secs if math.isfinite(secs) and secs > 0 else DEFAULT_REFRESH_SECS

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
