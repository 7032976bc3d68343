"""SIGTERM / SIGINT while training: the process-wide stop flag.

A signal only sets `STOP_SIGNAL.event`; the guard's hook
(`harness.core.guard_hook`) stops the loop after the current step. A
second signal, or one outside training, goes to the previous handler.
"""

import os
import signal
import threading

from absl import logging

__all__ = ["STOP_SIGNALS", "StopSignal", "STOP_SIGNAL", "notify_preemption"]


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

  def acquire(self):
    """A loop starts: the first one installs the handlers (main thread)."""
    with self._lock:
      self._users += 1
      if self._users > 1:
        return
      self.event.clear()
      self.signal_name = None
      if threading.current_thread() is not threading.main_thread():
        logging.info("preempt | training runs outside the main thread: no "
                     "SIGTERM handler installed (call harness.core.preemption."
                     "notify_preemption() from the main thread's own)")
        return
      self._previous = {signum: signal.signal(signum, self._on_signal)
                        for signum in STOP_SIGNALS}
      self._installed = True

  def release(self):
    """A loop ends: the last one restores the previous handlers."""
    with self._lock:
      self._users -= 1
      if self._users > 0 or not self._installed:
        return
      self._installed = False
      if threading.current_thread() is threading.main_thread():
        for signum, previous in self._previous.items():
          signal.signal(signum, signal.SIG_DFL if previous is None
                        else previous)
      else:  # Cannot restore from here; forward from now on instead.
        self._users = 0

  def _on_signal(self, signum, frame):
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
