"""SIGTERM / SIGINT while training: the process-wide stop flag.

A signal sets `STOP_SIGNAL.event`; the guard's hook
(`harness.core.guard_hook`) stops the loop after the current step. A signal
outside training goes to the previous handler.

Python runs signal handlers only in the main thread, between bytecodes, so
a main thread blocked in `session.run` (a hung input generator or
py_function, a huge first batch) would never see them. While a loop trains
in the main thread, the C-level handler also writes each signal to a wakeup
socket (`signal.set_wakeup_fd`) read by a watcher thread, which acts at
once: the first signal sets the flag and arms a bound (`stop_timeout_secs`,
default `DEFAULT_STOP_TIMEOUT_SECS`); if no step boundary comes within it,
one line names the stage the loop is blocked in and the process exits
(`os._exit`: the blocked thread cannot unwind). A second signal always ends
the process at once, with one line. Exit status: 130 for SIGINT, else 1
(as `harness.main` exits on `TrainingPreemptedError`).
"""

import os
import signal
import socket
import threading

from absl import logging

__all__ = ["STOP_SIGNALS", "StopSignal", "STOP_SIGNAL", "notify_preemption",
           "DEFAULT_STOP_TIMEOUT_SECS", "exit_status"]

# Seconds from the first SIGTERM/SIGINT to the next step boundary before the
# process exits without its final checkpoint (RunConfig / --stop_timeout_secs).
DEFAULT_STOP_TIMEOUT_SECS = 10.0


def exit_status(signal_name):
  """The exit status of a run stopped by `signal_name` ("SIGINT", ...)."""
  return 130 if signal_name == "SIGINT" else 1


def exit_now(line, signal_name):
  """Logs `line` (one ERROR line), flushes, and ends the process at once."""
  logging.error("%s", line)
  logging.flush()
  os._exit(exit_status(signal_name))  # pylint: disable=protected-access


# Signals that stop training after the current step with a checkpoint.
# SIGINT (Ctrl-C) is handled like SIGTERM; harness.main exits 130 on it.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignal:
  """The process-wide stop flag (SIGTERM, SIGINT), live while a loop trains."""

  def __init__(self):
    self._lock = threading.Lock()
    self._users = 0
    self._previous = {}
    self._installed = False
    self.event = threading.Event()
    self.signal_name = None  # "SIGTERM" / "SIGINT" once one arrived.
    # What the loop is doing, for the line of a stop that cannot wait.
    self.label = "local"
    self.stage = "starting the training loop"
    self.stop_timeout_secs = DEFAULT_STOP_TIMEOUT_SECS
    self._watcher = None  # (thread, read socket, write socket, old fd)
    self._timer = None
    self._signals_seen = 0

  def acquire(self, *, label="local",
              stop_timeout_secs=DEFAULT_STOP_TIMEOUT_SECS):
    """A loop starts: the first one installs the handlers (main thread)."""
    with self._lock:
      self._users += 1
      if self._users > 1:
        return
      self.event.clear()
      self.signal_name = None
      self.label = label
      self.stage = "starting the training loop"
      self.stop_timeout_secs = stop_timeout_secs
      self._signals_seen = 0
      if threading.current_thread() is not threading.main_thread():
        logging.info("preempt | training runs outside the main thread: no "
                     "SIGTERM handler installed (call harness.core.preemption."
                     "notify_preemption() from the main thread's own)")
        return
      self._previous = {signum: signal.signal(signum, self._on_signal)
                        for signum in STOP_SIGNALS}
      self._installed = True
      self._start_watcher()

  def _start_watcher(self):
    read_end, write_end = socket.socketpair()
    write_end.setblocking(False)
    try:
      old_fd = signal.set_wakeup_fd(write_end.fileno(),
                                    warn_on_full_buffer=False)
    except ValueError:  # Not the main thread after all: handler only.
      read_end.close()
      write_end.close()
      return
    thread = threading.Thread(target=self._watch, args=(read_end, old_fd),
                              name="harness-stop-signal", daemon=True)
    self._watcher = (thread, read_end, write_end, old_fd)
    thread.start()

  def _stop_watcher(self):
    """Restores the previous wakeup fd; the watcher thread then ends."""
    if self._timer is not None:
      self._timer.cancel()
      self._timer = None
    if self._watcher is None:
      return
    thread, read_end, write_end, old_fd = self._watcher
    self._watcher = None
    signal.set_wakeup_fd(old_fd)
    write_end.close()  # The watcher's recv() returns b"" and it ends.
    thread.join(timeout=5)
    read_end.close()

  def _watch(self, read_end, old_fd):
    while True:
      try:
        data = read_end.recv(64)
      except OSError:
        return
      if not data:
        return
      if old_fd != -1:  # Whoever used the wakeup fd before us still hears.
        try:
          os.write(old_fd, data)
        except OSError:
          pass
      for signum in data:
        if signum in tuple(int(s) for s in STOP_SIGNALS):
          self._on_watched(signal.Signals(signum).name)

  def _on_watched(self, name):
    """A stop signal, seen by the watcher thread as it arrives."""
    with self._lock:
      if self._users <= 0:  # No loop trains: the handlers forward it.
        return
      self._signals_seen += 1
      first = self._signals_seen == 1
      if first:
        self.signal_name = name
        self.event.set()
        self._timer = threading.Timer(self.stop_timeout_secs, self._expired)
        self._timer.daemon = True
        self._timer.start()
    if first:
      logging.warning(
          "preempt | %s | %s: stopping after the current step and saving a "
          "checkpoint (send it again to exit now; exits by itself if no "
          "step ends within %g s)", self.label, name, self.stop_timeout_secs)
      return
    exit_now(f"preempt | {self.label} | {name} again: exiting now, without "
             f"a checkpoint at this step (blocked in {self.stage}); the "
             "newest checkpoint in model_dir is intact", name)

  def _expired(self):
    with self._lock:
      if self._timer is None:  # A step boundary came, or the loop ended.
        return
    exit_now(
        f"preempt | {self.label} | {self.signal_name}: no step ended within "
        f"{self.stop_timeout_secs:g} s (--stop_timeout_secs); blocked in "
        f"{self.stage}; exiting without a checkpoint at this step (the "
        "newest checkpoint in model_dir is intact)", self.signal_name)

  def boundary_reached(self, stage):
    """The loop stops at a step boundary: no bound any more (it saves)."""
    with self._lock:
      self.stage = stage
      if self._timer is not None:
        self._timer.cancel()
        self._timer = None

  def release(self):
    """A loop ends: the last one restores the previous handlers."""
    with self._lock:
      self._users -= 1
      if self._users > 0 or not self._installed:
        return
      self._installed = False
      if threading.current_thread() is not threading.main_thread():
        self._users = 0  # Cannot restore from here; forward from now on.
        return
      previous = dict(self._previous)
    self._stop_watcher()  # Outside the lock: the watcher may wait for it.
    for signum, handler in previous.items():
      signal.signal(signum, signal.SIG_DFL if handler is None else handler)

  def _on_signal(self, signum, frame):
    if self._users > 0 and self._watcher is not None:
      # The watcher thread counts, logs and bounds it (it got it through
      # the wakeup fd); raising the flag here too makes the current step's
      # hooks see it at once, whichever thread runs first.
      if not self.event.is_set():
        self.signal_name = signal.Signals(signum).name
        self.event.set()
      return
    if self._users > 0 and not self.event.is_set():
      self.signal_name = signal.Signals(signum).name
      self.event.set()
      logging.warning("preempt | %s: stopping after the current step "
                      "and saving a checkpoint (send it again to exit now)",
                      self.signal_name)
      return
    previous = self._previous.get(signum)
    if callable(previous):
      previous(signum, frame)
      return
    if previous == signal.SIG_IGN:
      return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


# The process-wide flag every training loop of this process shares.
STOP_SIGNAL = StopSignal()


def notify_preemption():
  """Stops every training loop of this process as SIGTERM would.

  For programs that handle SIGTERM themselves, or train outside the main
  thread (where harness cannot install its handler).
  """
  STOP_SIGNAL.event.set()
