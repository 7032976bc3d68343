"""The task supervisor of `harness.launch`: one process group per task.

    out = supervisor.Output(sys.stdout)
    tasks = [supervisor.Task("worker/0", command, env, out)]
    try:
      status = supervisor.supervise(tasks, out, max_restarts=1,
                                    timeout_secs=0, stop_event=None,
                                    grace_secs=10)
    finally:
      supervisor.stop_all(tasks, grace_secs=10)

Each task's process leads its own process group; its output lines are
prefixed `[job/index] `, the supervisor's own lines start with `launch | `
(a task's stderr loses TensorFlow's C++ lines below its TF_CPP_MIN_LOG_LEVEL).
A task that exits non-zero is restarted up to `max_restarts` times; the
run ends when every chief/worker/evaluator task has exited 0, when one has
failed for good (its exit status, 128+N for signal N), on timeout (124) or
on a stop request (130). Stopping is SIGTERM to the trainers' groups, then
(once they saved and exited, `grace_secs` at most) to the ps and evaluator
groups, then SIGKILL after `grace_secs`; a group is cleared before its
leader is reaped.

This module imports nothing from TensorFlow.
"""

import os
import signal
import subprocess
import threading
import time

from harness import errors
from harness import tf_env
from harness.cluster import jobs

__all__ = ["Output", "Task", "supervise", "stop_all", "exit_status",
           "TIMEOUT_EXIT_CODE"]

TIMEOUT_EXIT_CODE = 124
_POLL_SECS = 0.05
_READER_JOIN_SECS = 5.0
_REAP_SECS = 10.0
_TRAINER_JOBS = ("chief", "worker")


def exit_status(returncode):
  """A shell's exit status for a `Popen.returncode` (signal N -> 128 + N)."""
  return 128 - returncode if returncode < 0 else returncode


class Output:
  """Writes whole lines to one text stream from many threads."""

  def __init__(self, stream):
    self._stream = stream
    self._lock = threading.Lock()

  def line(self, text):
    with self._lock:
      self._stream.write(text + "\n")
      self._stream.flush()

  def pump(self, prefix, pipe, hidden=None):
    """Copies `pipe` (bytes) line by line to the stream until EOF, but the
    lines for which `hidden(line)` is true."""
    with pipe:
      for raw in iter(pipe.readline, b""):
        text = raw.decode("utf-8", "replace")
        if text.endswith("\n"):
          text = text[:-1]
        if hidden is None or not hidden(text):
          self.line(prefix + text)


class Task:
  """One task of the cluster: its environment, current process and restarts."""

  def __init__(self, name, command, env, output):
    self.name = name
    self.job = name.split("/")[0]
    self.restarts = 0
    self.finished = False
    self.returncode = None
    self._command = command
    self._env = env
    # TensorFlow's C++ lines below the task's TF_CPP_MIN_LOG_LEVEL that it
    # printed anyway (its import-time block on TF 2.21) leave its stderr.
    self._hidden = tf_env.hidden_cpp_line(os.environ if env is None else env)
    self._output = output
    self._proc = None
    self._readers = []

  def start(self):
    """Starts (or restarts) the task's process in a new process group."""
    self.returncode = None
    env = self._env
    if self.restarts:  # The task's live metrics count them (harness_restarts).
      env = dict(os.environ if env is None else env)
      env[jobs.TASK_RESTARTS_ENV] = str(self.restarts)
    try:
      self._proc = subprocess.Popen(
          self._command, env=env, stdin=subprocess.DEVNULL,
          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
          start_new_session=True)
    except OSError as e:
      self._proc = None
      raise errors.ConfigError(
          f"Cannot start task {self.name} with command {self._command}: {e}. "
          "Give a program on PATH (or its path) after `--`.") from e
    prefix = f"[{self.name}] "
    self._readers = [
        threading.Thread(target=self._output.pump, args=(prefix, pipe, drop),
                         name=f"launch-{self.name}", daemon=True)
        for pipe, drop in ((self._proc.stdout, None),
                           (self._proc.stderr, self._hidden))]
    for reader in self._readers:
      reader.start()

  @property
  def running(self):
    return self._proc is not None and self.returncode is None

  def poll(self):
    """Returns the exit code once the process ended (reaping it), else None.

    The exit is seen without reaping first (`WNOWAIT`), so that the task's
    process group, which cannot be reused while its leader is a zombie, can
    be cleared of processes the task left behind before the leader is reaped.
    """
    if not self.running:
      return self.returncode
    try:
      info = os.waitid(os.P_PID, self._proc.pid,
                       os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # Reaped elsewhere; Popen knows the code.
      info = True
    if info is None:
      return None
    self.signal(signal.SIGKILL)
    self.returncode = self._proc.wait(timeout=_REAP_SECS)
    for reader in self._readers:
      reader.join(timeout=_READER_JOIN_SECS)
    return self.returncode

  def signal(self, signum):
    """Sends `signum` to the task's process group while its leader is unreaped."""
    if not self.running:
      return
    try:
      os.killpg(self._proc.pid, signum)
    except (ProcessLookupError, PermissionError):
      pass


def stop_all(tasks, grace_secs, out=None):
  """Stops every running task: trainers first, then the others.

  SIGTERM to the chief and worker groups; once they exited (up to
  `grace_secs`: their stop checkpoint needs the ps alive), SIGTERM to the ps
  and evaluator groups, up to `grace_secs` more; SIGKILL to what is left.
  `out`: an `Output` for the one line saying so (None: silent).
  """
  trainers = [t for t in tasks if t.running and t.job in _TRAINER_JOBS]
  others = [t for t in tasks if t.running and t not in trainers]
  if out is not None and trainers and others:
    out.line(f"launch | stopping {', '.join(t.name for t in trainers)} "
             f"first (their stop checkpoint), then "
             f"{', '.join(t.name for t in others)}")
  live = _terminate(trainers, grace_secs) + _terminate(others, grace_secs)
  for task in live:
    task.signal(signal.SIGKILL)
  for task in live:
    task.poll()
    if task.running:  # Still not seen: wait for the SIGKILL to land.
      deadline = time.monotonic() + _REAP_SECS
      while task.poll() is None and time.monotonic() < deadline:
        time.sleep(_POLL_SECS)


def _terminate(tasks, grace_secs):
  """SIGTERM to `tasks`; returns those still running `grace_secs` later."""
  live = [t for t in tasks if t.running]
  for task in live:
    task.signal(signal.SIGTERM)
  deadline = time.monotonic() + grace_secs
  while live and time.monotonic() < deadline:
    time.sleep(_POLL_SECS)
    live = [t for t in live if t.poll() is None]
  return live


def supervise(tasks, out, *, max_restarts, timeout_secs, stop_event,
              grace_secs):
  """Starts `tasks` and watches them until the run ends; returns its status."""
  start = time.monotonic()
  cluster = ", ".join(t.name for t in tasks)
  out.line(f"launch | starting {len(tasks)} tasks: {cluster}")
  for task in tasks:
    task.start()

  def stop(reason, status, final=True):
    running = [t for t in tasks if t.running]
    out.line(f"launch | {reason} | stopping {len(running)} running tasks")
    stop_all(tasks, grace_secs, out)
    if final:  # A stop request's caller decides the final status itself.
      out.line(f"launch | exit {status}")
    return status

  while True:
    for task in tasks:
      if task.finished:
        continue
      code = task.poll()
      if code is None:
        continue
      if code == 0:
        task.finished = True
        out.line(f"launch | {task.name} exited with 0")
        continue
      if task.restarts < max_restarts:
        task.restarts += 1
        out.line(f"launch | {task.name} exited with {code} | restart "
                 f"{task.restarts}/{max_restarts}")
        task.start()
        continue
      task.finished = True
      used = f" after {task.restarts} restarts" if max_restarts else ""
      return stop(f"{task.name} failed: exited with {code}{used}",
                  exit_status(code))
    if all(t.finished for t in tasks if t.job != "ps"):
      if any(t.running for t in tasks):
        return stop("all chief/worker/evaluator tasks exited with 0", 0)
      out.line("launch | exit 0")
      return 0
    if stop_event is not None and stop_event.is_set():
      return stop("stop requested", 130, final=False)
    if timeout_secs and time.monotonic() - start >= timeout_secs:
      return stop(f"timeout after {timeout_secs:g} s", TIMEOUT_EXIT_CODE)
    time.sleep(_POLL_SECS)
