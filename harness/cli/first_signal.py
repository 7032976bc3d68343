"""A binary's first line: SIGTERM / SIGINT handled from the first instant.

    from harness.cli import first_signal
    first_signal.install("harness.main")  # before any other import

Until `harness.guard.stop_signal` takes over (after the imports, once the
flags are read), a SIGTERM or SIGINT ends the process at once with one line
on stderr and exit status 143 (SIGTERM) or 130 (SIGINT): nothing has been
written yet, so there is nothing to save. Without a handler, Python as PID 1
of a pod would ignore SIGTERM (the kernel drops it), and a signal raised
inside an import comes out as an ImportError.

A pod's first process (`harness.k8s.start`) blocks both signals before it
`exec`s harness.main: a blocked signal stays pending across `exec`, also
for PID 1, and `install` unblocks them once its handler is in place, so a
SIGTERM in between is delivered, not lost.

Imports nothing but the standard library and `harness.errors`.
"""

import os
import signal

from harness import errors

__all__ = ["SIGNALS", "install", "block"]

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_STATUS = {signal.SIGTERM: errors.EXIT_PREEMPTED,
           signal.SIGINT: errors.EXIT_INTERRUPTED}


def install(program, stage="starting (importing Python modules)"):
  """Ends the process on SIGTERM/SIGINT with one line; unblocks both.

  Args:
    program: the line's first word, e.g. "harness.main".
    stage: what the process is doing, for the line.
  """

  # The line goes to stderr as it is now: TensorFlow's quiet import points
  # fd 2 at a file meanwhile (harness._tf).
  err_fd = os.dup(2)

  def _exit_now(signum, unused_frame):
    name = signal.Signals(signum).name
    line = (f"{program}: {name}: stopped while {stage}, before the job "
            "began: nothing was written. Fix: nothing is lost; run the same "
            "command again.\n")
    try:
      os.write(err_fd, line.encode("utf-8"))
    finally:
      os._exit(_STATUS[signum])  # pylint: disable=protected-access

  for signum in SIGNALS:
    signal.signal(signum, _exit_now)
  signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def block():
  """Blocks SIGTERM/SIGINT (kept pending) until a handler is installed."""
  signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
