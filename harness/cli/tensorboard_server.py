"""TensorBoard for a run's model_dir: the command to print, and a server.

    from harness.cli import tensorboard_server

    tensorboard_server.command_text("/tmp/m")  # ".venv/bin/tensorboard --logdir /tmp/m"
    with tensorboard_server.serving("/tmp/m", port=0, out=sys.stdout):
      ...  # Train; the URL is printed once TensorBoard has bound its port.

`serving` starts `python -m tensorboard.main --logdir DIR --host 127.0.0.1
--port PORT` (this Python's TensorBoard) in its own process group, in the
background: training does not wait for it. Once TensorBoard says where it
listens, one line gives the URL with the port it actually bound
(`--tensorboard=0` lets the system pick a free one). When the block ends the
server's process group is stopped, unless `keep=True`; then the block first
waits (bounded) for the URL and says how to stop the server.
`harness.main --tensorboard[=PORT]` and `harness.launch --tensorboard[=PORT]`
(one server for the whole cluster) use it.

This module imports nothing from TensorFlow or TensorBoard.
"""

import contextlib
import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from absl import logging

from harness import errors

__all__ = [
    "DEFAULT_PORT", "HOST", "REQUIREMENT", "START_TIMEOUT_SECS",
    "command_text", "expand_bare_flag", "is_installed", "model_dir_in_command",
    "serving",
    "Server",
]

DEFAULT_PORT = 6006  # A bare --tensorboard; TensorBoard's own default.
HOST = "127.0.0.1"
REQUIREMENT = "tensorboard>=2.16,<2.22"  # As setup.py: TensorFlow's range.
START_TIMEOUT_SECS = 120.0  # TensorBoard imports TensorFlow: slow on busy hosts.
_STOP_GRACE_SECS = 10.0
_POLL_SECS = 0.2
# What TensorBoard prints once it listens: "TensorBoard 2.21.0 at
# http://127.0.0.1:6006/ (Press CTRL+C to quit)".
_URL_LINE = re.compile(r"TensorBoard \S+ at (http://\S+?)/? \(")


def is_installed():
  """Whether this Python can import TensorBoard."""
  return importlib.util.find_spec("tensorboard") is not None


def _tensorboard_program(python):
  """The `tensorboard` script of `python`'s environment, or None."""
  beside = os.path.join(os.path.dirname(python), "tensorboard")
  if not os.access(beside, os.X_OK):  # local-fs: an executable
    return None
  on_path = shutil.which("tensorboard")  # local-fs: an executable
  if on_path and os.path.realpath(on_path) == os.path.realpath(beside):  # local-fs: an executable
    return "tensorboard"  # The same program: print the short name.
  return beside


def command_text(logdir, *, python=None):
  """A shell command that serves `logdir` with this Python's TensorBoard.

  The `tensorboard` script beside `python` (the short name when PATH finds
  that same script), else `python -m tensorboard.main`; every path is
  shell-quoted. Without TensorBoard, the install command instead.
  """
  python = python or sys.executable
  if not is_installed():
    return (f"not installed; {shlex.quote(python)} -m pip install "
            f"{shlex.quote(REQUIREMENT)}")
  program = _tensorboard_program(python)
  if program is None:
    program = f"{shlex.quote(python)} -m tensorboard.main"
  elif program != "tensorboard":
    program = shlex.quote(program)
  return f"{program} --logdir {shlex.quote(os.fspath(logdir))}"


def expand_bare_flag(argv, name="tensorboard"):
  """`argv` with a bare `--tensorboard` (before any `--`) written as
  `--tensorboard=DEFAULT_PORT`, for absl parsers that need a value."""
  result = list(argv)
  for i, arg in enumerate(result):
    if arg == "--":
      break
    if arg in (f"--{name}", f"-{name}"):
      result[i] = f"--{name}={DEFAULT_PORT}"
  return result


def model_dir_in_command(command):
  """The `--model_dir` a task command passes (`=value` or next arg), or None."""
  for i, arg in enumerate(command):
    for prefix in ("--model_dir=", "-model_dir="):
      if arg.startswith(prefix):
        return arg[len(prefix):]
    if arg in ("--model_dir", "-model_dir") and i + 1 < len(command):
      return command[i + 1]
  return None


class Server:
  """One TensorBoard process serving `logdir` on `host`.

  Attributes:
    url: "http://127.0.0.1:PORT" once TensorBoard listens, else None.
    pid: the process id (also its process group id) once started.
    log_path: the file that holds TensorBoard's own output.
  """

  def __init__(self, *, logdir, port, host=HOST, python=None):
    if isinstance(port, bool) or not isinstance(port, int) or not (
        0 <= port <= 65535):
      raise errors.ConfigError(
          f"TensorBoard `port` is {port!r}; it must be 0 (a free port) to "
          f"65535. Fix: e.g. --tensorboard={DEFAULT_PORT} or --tensorboard=0.")
    self.logdir = os.fspath(logdir)
    self.port = port
    self.host = host
    self.python = python or sys.executable
    self.url = None
    self.pid = None
    self.log_path = None
    self._proc = None

  @property
  def command(self):
    return [self.python, "-m", "tensorboard.main", "--logdir", self.logdir,
            "--host", self.host, "--port", str(self.port)]

  def start(self):
    """Starts TensorBoard in the background; returns at once.

    Raises:
      ConfigError: TensorBoard is not installed in this Python.
    """
    if not is_installed():
      raise errors.ConfigError(
          f"--tensorboard: TensorBoard is not installed for {self.python}. "
          f"Fix: `{shlex.quote(self.python)} -m pip install "
          f"{shlex.quote(REQUIREMENT)}` (harness's setup.py installs it), or "
          "drop --tensorboard.")
    fd, self.log_path = tempfile.mkstemp(prefix="harness_tensorboard_",  # local-fs: TensorBoard's log file
                                         suffix=".log")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    with os.fdopen(fd, "wb") as log:  # local-fs: TensorBoard's log file
      self._proc = subprocess.Popen(
          self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
          env=env, start_new_session=True)
    self.pid = self._proc.pid
    logging.debug("tensorboard | started pid %d: %s (output in %s)", self.pid,
                  shlex.join(self.command), self.log_path)

  def poll_url(self):
    """The URL if TensorBoard said where it listens (reads its log), else None."""
    if self.url is None and self.log_path:
      with open(self.log_path, encoding="utf-8", errors="replace") as log:  # local-fs: TensorBoard's log file
        found = _URL_LINE.search(log.read())
      if found:
        self.url = found.group(1)
    return self.url

  def exited(self):
    """TensorBoard's exit code, or None while it runs."""
    return None if self._proc is None else self._proc.poll()

  def wait_for_url(self, timeout_secs=START_TIMEOUT_SECS, stop_event=None):
    """Waits until TensorBoard listens (URL), exits, or time runs out.

    Returns:
      The URL, or None (exited, timed out or `stop_event` set).
    """
    deadline = time.monotonic() + timeout_secs
    while time.monotonic() < deadline:
      if self.poll_url() or self.exited() is not None:
        return self.poll_url()
      if stop_event is not None and stop_event.wait(_POLL_SECS):
        return self.poll_url()
      if stop_event is None:
        time.sleep(_POLL_SECS)
    return self.poll_url()

  def failure_text(self):
    """Why TensorBoard is not serving: its exit and last output line."""
    tail = ""
    if self.log_path and os.path.exists(self.log_path):  # local-fs: TensorBoard's log file
      with open(self.log_path, encoding="utf-8", errors="replace") as log:  # local-fs: TensorBoard's log file
        lines = [l.strip() for l in log if l.strip()]
      tail = lines[-1] if lines else ""
    code = self.exited()
    status = (f"exited with {code}" if code is not None else
              "did not say where it listens")
    hint = (" Fix: pick a free port with --tensorboard=0, or another port."
            if "already in use" in tail or "could not bind" in tail.lower()
            else f" Its output: {self.log_path}.")
    return (f"TensorBoard on {self.host}:{self.port} {status}: "
            f"{tail[:200] or '(no output)'}.{hint}")

  def stop(self, grace_secs=_STOP_GRACE_SECS):
    """SIGTERM to TensorBoard's process group, SIGKILL after `grace_secs`."""
    if self._proc is None or self._proc.poll() is not None:
      return
    for signum in (signal.SIGTERM, signal.SIGKILL):
      try:
        os.killpg(self._proc.pid, signum)
      except (ProcessLookupError, PermissionError):
        return
      try:
        self._proc.wait(timeout=grace_secs)
        return
      except subprocess.TimeoutExpired:
        continue


def _say(out, text):
  out.write(text + "\n")  # One write: other threads may print too.
  out.flush()


def _port_in_use(host, port):
  """Whether something listens on host:port (a bind probe, as servers bind)."""
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
      probe.bind((host, port))
    except OSError:
      return True
  return False


@contextlib.contextmanager
def serving(logdir, *, port, keep=False, out=None, label="tensorboard",
            start_timeout_secs=START_TIMEOUT_SECS):
  """Serves `logdir` with TensorBoard while the block runs.

  A TensorBoard that does not serve is always reported, in one warning line:
  a port already in use (checked before starting it), a server that exits,
  or one still starting when the block ends. Training goes on either way.

  Args:
    logdir: the run's model_dir (TensorBoard reads it and its `eval*/`).
    port: the port on 127.0.0.1; 0 lets the system pick a free one.
    keep: leave the server running after the block (says how to stop it).
    out: text stream for the URL line (default: stdout at call time).
    label: the first field of the lines written, e.g. "tensorboard".
    start_timeout_secs: how long to wait for TensorBoard to listen.

  Yields:
    The `Server` (never started when its port was in use).

  Raises:
    ConfigError: TensorBoard is not installed (before the block runs).
  """
  out = sys.stdout if out is None else out
  server = Server(logdir=logdir, port=port)
  if port and _port_in_use(server.host, port):
    logging.warning(
        "%s | not started: %s:%d is already in use. Fix: --tensorboard=0 (a "
        "free port) or another port. Training goes on without it.", label,
        server.host, port)
    yield server
    return
  server.start()
  done, reported = threading.Event(), threading.Event()

  def announce():
    url = server.wait_for_url(start_timeout_secs, stop_event=done)
    if url:
      _say(out, f"{label} | {url}/ | serving {shlex.quote(server.logdir)}")
      reported.set()
    elif not done.is_set():
      logging.warning("%s | %s Training goes on without it.", label,
                      server.failure_text())
      reported.set()

  watcher = threading.Thread(target=announce, name="tensorboard-url",
                             daemon=True)
  watcher.start()
  try:
    yield server
  finally:
    if keep and server.exited() is None:
      watcher.join(timeout=start_timeout_secs)  # The URL line first.
    done.set()
    watcher.join(timeout=_STOP_GRACE_SECS)
    _finish(server, out, label, keep=keep, reported=reported.is_set())


def _finish(server, out, label, *, keep, reported):
  """Keeps or stops the server; reports one that never served (once)."""
  kept = keep and server.exited() is None
  if not reported and not server.poll_url() and not kept:
    if server.exited() is None:
      logging.warning(
          "%s | TensorBoard on %s:%d not serving yet at the end of the run: "
          "stopped. Log: %s", label, server.host, server.port,
          server.log_path)
    else:
      logging.warning("%s | %s", label, server.failure_text())
  if kept:
    where = f"{server.url}/" if server.url else f"port {server.port}"
    _say(out, f"{label} | kept running at {where} (pid {server.pid}, "
         f"output in {server.log_path}); stop it with: kill {server.pid}")
    return
  server.stop()
  if server.url:  # Else the warning names the log: keep it.
    with contextlib.suppress(OSError):
      os.remove(server.log_path)  # local-fs: TensorBoard's log file
