"""The child processes tests start, and their end: killed, tree and all.

    from tests import _processes

    proc = _processes.popen([sys.executable, "-m", "harness.server", ...],
                            stdout=subprocess.PIPE, text=True)

Every child starts in a session of its own (`start_new_session=True`) and is
recorded here until it is reaped. When the test that started it ends, pass
or fail, `tests/conftest.py` kills what is left (`kill_started_since`): a
multi-process test that timed out leaves no `harness.server` or
`harness.main` behind to load the machine for the tests after it. The kill
is SIGKILL, so a child that ignores SIGTERM goes too, and it reaches every
descendant, each by its process group: `harness.launch` puts each task in a
session of its own, and `harness.main` its TensorBoard. Every wait here is
bounded. Linux only (descendants are read from /proc). No TensorFlow.
"""

import os
import signal
import subprocess
import time

__all__ = ["popen", "kill_tree", "started", "kill_started_since", "alive"]

# Seconds to wait for a killed process tree to be gone.
KILL_WAIT_SECS = 10.0

_started = []  # Every Popen of popen(), in start order, until reaped.
_count = 0  # How many popen() started so far (a test's mark).


def popen(command, **kwargs):
  """`subprocess.Popen(command, **kwargs)` in a new session, recorded.

  `start_new_session` is forced on: the process and whatever it starts
  without a session of its own share one process group, which
  `kill_tree` kills at once.
  """
  global _count
  kwargs["start_new_session"] = True
  proc = subprocess.Popen(  # pylint: disable=consider-using-with
      command, **kwargs)
  _started.append((_count, proc))
  _count += 1
  return proc


def started():
  """A mark: how many children popen() started so far."""
  return _count


def _stat(pid):
  """(state, ppid, pgid) of `pid` from /proc, or None once it is gone."""
  try:
    with open(f"/proc/{pid}/stat", "rb") as f:
      text = f.read().decode("utf-8", "replace")
  except OSError:
    return None
  fields = text[text.rindex(")") + 2:].split()  # After "pid (comm) ".
  return fields[0], int(fields[1]), int(fields[2])


def alive(pid):
  """Whether `pid` runs (a zombie, killed and not yet reaped, does not)."""
  stat = _stat(pid)
  return stat is not None and stat[0] not in ("Z", "X")


def _descendants(pid):
  """The pids below `pid` in the process tree, read from /proc once."""
  children = {}
  for name in os.listdir("/proc"):
    if name.isdigit():
      stat = _stat(int(name))
      if stat is not None:
        children.setdefault(stat[1], []).append(int(name))
  found, todo = [], [pid]
  while todo:
    below = children.get(todo.pop(), [])
    found += below
    todo += below
  return found


def kill_tree(proc, timeout_secs=KILL_WAIT_SECS):
  """SIGKILL to `proc`'s process group and every descendant's; bounded.

  The tree is read before the kill (an orphan's parent becomes init), while
  `proc` runs: once it is reaped, its pid and group may be another's, so
  what it left is out of reach. This process's own group is never
  signalled, only its processes one by one.

  Returns:
    The pids still running after `timeout_secs` (empty: all gone).
  """
  if proc.poll() is not None:
    return []  # Reaped: its pid may be another's now; nothing is ours.
  pids = [proc.pid] + _descendants(proc.pid)
  own_group = os.getpgrp()
  groups = set()
  for pid in pids:
    stat = _stat(pid)
    if stat is not None:
      groups.add(stat[2])
  for group in groups - {own_group}:
    _signal(os.killpg, group)
  for pid in pids:
    if (_stat(pid) or (None, None, None))[2] == own_group:
      _signal(os.kill, pid)
  try:
    proc.wait(timeout=timeout_secs)
  except subprocess.TimeoutExpired:
    pass
  deadline = time.monotonic() + timeout_secs
  while time.monotonic() < deadline and any(alive(p) for p in pids):
    time.sleep(0.05)
  return [pid for pid in pids if alive(pid)]


def _signal(send, target):
  try:
    send(target, signal.SIGKILL)
  except (ProcessLookupError, PermissionError):
    pass  # Gone already (or a reused pid that is not ours).


def kill_started_since(mark, timeout_secs=KILL_WAIT_SECS):
  """kill_tree() every child popen() started since `mark` (a `started()`)
  that still runs; forgets them. Returns the pids still running after the
  bound."""
  left = []
  for number, proc in list(_started):
    if number < mark:
      continue
    _started.remove((number, proc))
    left += kill_tree(proc, timeout_secs)
  return left
