"""Whether a process that wrote a claim still runs: its identity, its pid.

A trainer's lease (`lease`) and a standalone client's server claims
(`harness.distribute.server_claim`) record who holds them: host name, PID
namespace, boot id and pid. A pid is evidence only in the process space it
was taken in (two containers may share a host name, not a PID namespace)::

    if processes.same_space(holder_host, holder_ns, holder_boot) and (
        not processes.pid_alive(holder_pid)):
      ...  # the holder is gone: take its claim over
"""

import os
import socket

__all__ = ["process_space", "same_space", "pid_alive"]


def _read_text(read):
  try:
    return read().strip()
  except OSError:  # No /proc (not Linux): "" never matches a holder.
    return ""


def process_space():
  """(pid namespace, boot id) of this process; "" for what is unknown."""

  def boot_id():
    path = "/proc/sys/kernel/random/boot_id"
    with open(path, encoding="ascii") as f:  # local-fs: the kernel's /proc
      return f.read()

  return (_read_text(lambda: os.readlink("/proc/self/ns/pid")),
          _read_text(boot_id))


def same_space(host, pid_ns, boot_id, *, this_host=None, space=None):
  """Whether a holder's pid can be checked here: same host, PID ns, boot.

  `this_host` / `space` default to this machine's host name and
  `process_space()`; a holder that recorded no PID namespace never is.
  """
  this_host = socket.gethostname() if this_host is None else this_host
  this_ns, this_boot = process_space() if space is None else space
  return (host == this_host and bool(pid_ns) and pid_ns == this_ns and
          boot_id == this_boot)


def pid_alive(pid):
  """Whether `pid` runs in this PID namespace (one of another user counts)."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True
