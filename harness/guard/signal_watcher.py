"""The watcher thread that sees SIGTERM / SIGINT while the main thread blocks.

Python runs signal handlers only between bytecodes of the main thread, so a
main thread blocked in `session.run` never sees them. `SignalWatcher` reads
each signal number from a wakeup socket (`signal.set_wakeup_fd`) in a daemon
thread and hands the stop signals' names to a callback; `stop_signal`'s
`StopSignal` arms its bound from there.
"""

import os
import signal
import socket
import threading

__all__ = ["SignalWatcher"]


class SignalWatcher:
  """A daemon thread reading signal numbers from the wakeup fd.

  Args:
    signals: the signal numbers to report (others are only forwarded).
    on_signal: called from the watcher thread with a signal's name
      ("SIGTERM").
  """

  def __init__(self, signals, on_signal):
    self._signals = tuple(int(s) for s in signals)
    self._on_signal = on_signal
    self._running = None  # (thread, read socket, write socket, old fd)

  @property
  def running(self):
    return self._running is not None

  def start(self):
    """Sets the wakeup fd and starts the thread (main thread only); False,
    with nothing started, outside the main thread."""
    read_end, write_end = socket.socketpair()
    write_end.setblocking(False)
    try:
      old_fd = signal.set_wakeup_fd(write_end.fileno(),
                                    warn_on_full_buffer=False)
    except ValueError:  # Not the main thread after all: handler only.
      read_end.close()
      write_end.close()
      return False
    thread = threading.Thread(target=self._watch, args=(read_end, old_fd),
                              name="harness-stop-signal", daemon=True)
    self._running = (thread, read_end, write_end, old_fd)
    thread.start()
    return True

  def stop(self):
    """Restores the previous wakeup fd; the thread then ends."""
    if self._running is None:
      return
    thread, read_end, write_end, old_fd = self._running
    self._running = None
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
        if signum in self._signals:
          self._on_signal(signal.Signals(signum).name)
