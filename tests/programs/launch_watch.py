"""Test helpers: run tests/programs/chaos_job.py under harness.launch and
watch its output while it runs (to signal tasks at chosen moments).

    out = launch_watch.Lines()
    thread, result = launch_watch.launch_job(model_dir, out, workers=2)
    launch_watch.wait_for(out, r"\\[worker/0\\].*step \\d+/", 90)
    os.kill(launch_watch.task_pid(model_dir, "worker/0"), signal.SIGTERM)
    thread.join(150); result["code"]  # launch's exit status
"""

import os
import re
import sys
import threading
import time

from harness import launch
from tests import _support
from tests import conftest


class Lines:
  """A launch output stream: timestamped lines, readable while it runs."""

  def __init__(self):
    self._lock = threading.Lock()
    self._start = time.monotonic()
    self.lines = []

  def write(self, text):
    with self._lock:
      for line in text.splitlines():
        self.lines.append((time.monotonic() - self._start, line))

  def flush(self):
    pass

  def now(self):
    """Seconds since the stream was made (the lines' time base)."""
    return time.monotonic() - self._start

  def find(self, pattern, after=0.0):
    with self._lock:
      lines = list(self.lines)
    return [(t, re.search(pattern, line)) for t, line in lines
            if t >= after and re.search(pattern, line)]

  def text(self):
    with self._lock:
      return "\n".join(line for _, line in self.lines)


def launch_job(model_dir, out, *, extra=(), timeout_secs=150, env=None,
                **tasks):
  env = dict(conftest.child_env(), **(env or {}))
  command = [sys.executable, "-m", "tests.programs.chaos_job",
             f"--model_dir={model_dir}", *extra]
  result = {}

  def run():
    result["code"] = launch.launch(command, timeout_secs=timeout_secs,
                                   grace_secs=5, env=env, output=out, **tasks)

  thread = threading.Thread(target=run, daemon=True)
  thread.start()
  return thread, result


def wait_for(out, pattern, timeout_secs, after=0.0):
  """out.find(pattern, after) once it finds a line (bounded)."""
  return _support.wait_for(lambda: out.find(pattern, after), timeout_secs,
                           f"a line matching {pattern!r}",
                           details=lambda: out.text()[-6000:])


def task_pid(model_dir, task):
  """The pid the task's current process wrote at its start."""
  with open(os.path.join(model_dir, "pid-" + task.replace("/", "-"))) as f:
    return int(f.read())
