"""SIGTERM / SIGINT: the process-wide stop flag, and a bound on every stop.

While a training loop runs, a signal sets `STOP_SIGNAL.event`; the guard's
hook (`harness.guard.guard_hook`) stops the loop after the current step. A
binary installs the handlers from its first line (`install_for_process`):
outside a loop SIGTERM then raises `Terminated` in the main thread, as SIGINT
raises KeyboardInterrupt (Python as PID 1 of a pod's PID namespace would
otherwise ignore SIGTERM). Without that, a signal outside training goes to
the previous handler.

Python runs signal handlers only between bytecodes of the main thread, so a
main thread blocked in `session.run` (a hung input generator, a huge first
batch) would never see them. A watcher thread (`guard/signal_watcher`) reads
each signal from a wakeup socket (`signal.set_wakeup_fd`); it arms a bound
(`stop_timeout_secs`, default `DEFAULT_STOP_TIMEOUT_SECS`); if no step boundary
(in a loop) or no exit (outside one) comes within it, one line names the stage
the process is blocked in and it exits (`os._exit`: the blocked thread cannot
unwind). The bound is for a step (or a stage) that does not end: a checkpoint
save or an export in progress (`finishing`) is not cut; the bound starts again
once it ended. A second signal always ends the process at once, with one line.
Exit status (`exit_status`): EXIT_PREEMPTED (143) for SIGTERM, EXIT_INTERRUPTED
(130) for SIGINT.
"""

import contextlib
import os
import signal
import threading

from absl import logging

from harness import errors
from harness import fields
from harness.guard import signal_watcher

__all__ = ["STOP_SIGNALS", "StopSignal", "STOP_SIGNAL", "Terminated",
           "notify_preemption", "DEFAULT_STOP_TIMEOUT_SECS", "exit_status"]

# Seconds from the first SIGTERM/SIGINT to the next step boundary before the
# process exits without its final checkpoint (harness.fields' default).
DEFAULT_STOP_TIMEOUT_SECS = fields.default("stop_timeout_secs")


def exit_status(signal_name):
  """The exit status of a run stopped by `signal_name` ("SIGINT", ...);
  EXIT_FAILED when no signal stopped it (None)."""
  if signal_name == "SIGINT":
    return errors.EXIT_INTERRUPTED
  return errors.EXIT_PREEMPTED if signal_name else errors.EXIT_FAILED


def exit_now(line, signal_name):
  """Logs `line` (one ERROR line), flushes, and ends the process at once."""
  logging.error("%s", line)
  logging.flush()
  os._exit(exit_status(signal_name))  # pylint: disable=protected-access


class Terminated(BaseException):
  """SIGTERM outside a training loop, once a binary installed the handlers.

  A BaseException, as KeyboardInterrupt (SIGINT): `except Exception` does
  not swallow it. `harness.main` says it in one line, exit status 143.
  `stage`: what the process was doing, e.g. "an evaluation".
  """

  def __init__(self, stage):
    super().__init__(f"SIGTERM while {stage}")
    self.stage = stage


# Signals that stop training after the current step with a checkpoint.
# SIGINT (Ctrl-C) is handled like SIGTERM; harness.main exits 130 on it.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignal:
  """The process-wide stop flag (SIGTERM, SIGINT) and the bound of a stop."""

  def __init__(self):
    self._lock = threading.Lock()
    self._users = 0  # Training loops running now.
    self._previous = {}
    self._installed = False
    self._process = False  # Installed for the whole process by a binary.
    self.event = threading.Event()
    self.signal_name = None  # "SIGTERM" / "SIGINT" once one arrived.
    # What the process is doing, for the line of a stop that cannot wait.
    self.label = "local"
    self.stage = "starting the training loop"
    self.stop_timeout_secs = DEFAULT_STOP_TIMEOUT_SECS
    self._finishing = []  # Stages the bound does not cut (a save, ...).
    self._expired_in = None  # The one the bound expired in (re-armed after).
    self._pending = None  # A signal held back by a finishing stage.
    # The stage SIGTERM raised `Terminated` in (raised inside TensorFlow's
    # C++ bindings it may come out as another exception).
    self.terminated_in = None
    # Reads each signal while the main thread blocks (watcher thread).
    self._watcher = signal_watcher.SignalWatcher(STOP_SIGNALS,
                                                 self._on_watched)
    self._timer = None
    self._armed = 0  # Which timer is the live one.
    self._signals_seen = 0

  def install_for_process(self, *, label="local",
                          stop_timeout_secs=DEFAULT_STOP_TIMEOUT_SECS):
    """A binary's first line: SIGTERM/SIGINT handled for the whole process.

    Outside a training loop SIGTERM raises `Terminated` (SIGINT
    KeyboardInterrupt) in the main thread, and the process exits by itself
    `stop_timeout_secs` later if it is still running. Called again, it
    updates the label and the bound.

    Returns:
      False outside the main thread (nothing installed).
    """
    if threading.current_thread() is not threading.main_thread():
      return False
    with self._lock:
      self.label = label
      self.stop_timeout_secs = stop_timeout_secs
      if not self._process and self._users <= 0:
        self.stage = "starting (reading the flags, importing TensorFlow)"
      self._process = True
      if not self._installed:
        self._install()
    return True

  def _install(self):
    self._previous = {n: signal.signal(n, self._on_signal)
                      for n in STOP_SIGNALS}
    self._installed = True
    self._watcher.start()

  def acquire(self, *, label="local",
              stop_timeout_secs=DEFAULT_STOP_TIMEOUT_SECS):
    """A loop starts: the first one installs the handlers (main thread)."""
    with self._lock:
      self._users += 1
      if self._users > 1:
        return
      # SIGTERM that raised `Terminated` inside TensorFlow's C++ (creating
      # the session) can be swallowed there: the loop then starts stopping.
      carried, self.terminated_in = self.terminated_in, None
      self.label = label
      self.stage = "starting the training loop"
      self.stop_timeout_secs = stop_timeout_secs
      self._finishing = []
      self._expired_in = None
      if carried is not None:
        self.event.set()
        logging.warning("preempt | %s | %s came while %s: stopping after "
                        "the first step and saving a checkpoint", label,
                        self.signal_name or "SIGTERM", carried)
      else:
        self.event.clear()
        self.signal_name = None
        self._signals_seen = 0
      if self._installed:  # A binary's handlers serve the loop too.
        return
      if threading.current_thread() is not threading.main_thread():
        logging.info("preempt | training runs outside the main thread: no "
                     "SIGTERM handler installed (call harness.guard.preemption."
                     "notify_preemption() from the main thread's own)")
        return
      self._install()

  def _where(self):
    return self._finishing[-1] if self._finishing else self.stage

  def _arm(self):
    """Starts the bound (lock held)."""
    if self._timer is not None:
      self._timer.cancel()
    self._armed += 1
    self._timer = threading.Timer(self.stop_timeout_secs, self._expired,
                                  args=(self._armed,))
    self._timer.daemon = True
    self._timer.start()

  def _on_watched(self, name):
    """A stop signal, seen by the watcher thread as it arrives."""
    with self._lock:
      in_loop = self._users > 0
      if not (in_loop or self._process):  # The handlers forward it.
        return
      self._signals_seen += 1
      first = self._signals_seen == 1
      if first:
        self.signal_name = name
        if in_loop:
          self.event.set()
        self._arm()
      where = self._where()
    if first:
      if in_loop:
        logging.warning(
            "preempt | %s | %s: stopping after the current step and saving "
            "a checkpoint (send it again to exit now; exits by itself if no "
            "step ends within %g s)", self.label, name,
            self.stop_timeout_secs)
      return
    lost = ", without a checkpoint at this step" if in_loop else ""
    exit_now(f"preempt | {self.label} | {name} again: exiting now{lost} "
             f"(blocked in {where}); the newest checkpoint in model_dir is "
             "intact", name)

  def _expired(self, armed):
    with self._lock:
      if self._timer is None or armed != self._armed:
        return  # A step boundary came, or the bound was started again.
      self._timer = None
      what = self._finishing[-1] if self._finishing else None
      self._expired_in = what
      in_loop = self._users > 0
    secs = self.stop_timeout_secs
    if what is not None:
      logging.warning(
          "preempt | %s | %s: %s is in progress after %g s; letting it "
          "finish (--stop_timeout_secs bounds a step that does not end, not "
          "%s; send the signal again to exit now)", self.label,
          self.signal_name, what, secs, what)
      return
    how, lost = ("no step ended", " without a checkpoint at this step") if (
        in_loop) else ("the process did not end", "")
    exit_now(
        f"preempt | {self.label} | {self.signal_name}: {how} within "
        f"{secs:g} s (--stop_timeout_secs); blocked in {self.stage}; exiting"
        f"{lost} (the newest checkpoint in model_dir is intact)",
        self.signal_name)

  def begin_finishing(self, what):
    """A stage the bound does not cut begins, e.g. "a checkpoint save"."""
    with self._lock:
      self._finishing.append(what)

  def end_finishing(self):
    """The innermost finishing stage ended: a bound that expired during it
    starts again; returns a signal it held back (outside a loop) or None."""
    with self._lock:
      if self._finishing:
        self._finishing.pop()
      if self._finishing:
        return None
      rearm, self._expired_in = self._expired_in, None
      if rearm is not None:
        self._arm()
      pending, self._pending = self._pending, None
    if rearm is not None:
      logging.info("preempt | %s | %s ended; exiting by itself if it does "
                   "not stop within %g s", self.label, rearm,
                   self.stop_timeout_secs)
    return pending

  @contextlib.contextmanager
  def finishing(self, what):
    """Runs the body as a stage the stop bound does not cut (an export).

    Outside a training loop a signal arriving meanwhile is raised once the
    body ended (`Terminated` / KeyboardInterrupt).
    """
    self.begin_finishing(what)
    try:
      yield
    except BaseException:
      self.end_finishing()
      raise
    pending = self.end_finishing()
    if pending is not None:
      raise self._interrupt(pending, f"{what} (it completed)")

  @contextlib.contextmanager
  def stage_as(self, what):
    """Names what the body does in the line of a stop it blocks."""
    before, self.stage = self.stage, what
    try:
      yield
    finally:
      self.stage = before

  def stopping(self):
    """Whether a stop signal came to a training loop, or SIGTERM to a
    binary (a standalone client's, whose tasks train in other threads)."""
    return (self.event.is_set() and self._users > 0) or (
        self.terminated_in is not None)

  def boundary_reached(self, stage):
    """The loop stops at a step boundary: no bound any more (it saves)."""
    with self._lock:
      self.stage = stage
      self._expired_in = None
      self._cancel_timer()

  def _cancel_timer(self):
    if self._timer is not None:
      self._timer.cancel()
      self._timer = None

  def release(self):
    """A loop ends: the last one restores the previous handlers (unless a
    binary installed them for the process)."""
    with self._lock:
      self._users -= 1
      if self._users > 0:
        return
      self._finishing = []  # A save that raised left its stage behind.
      self.stage = "after the training loop"
      if not self._installed or self._process:
        return
      self._installed = False
      if threading.current_thread() is not threading.main_thread():
        self._users = 0  # Cannot restore from here; forward from now on.
        return
      previous = dict(self._previous)
    self._cancel_timer()
    self._watcher.stop()  # Outside the lock: the watcher may wait for it.
    for signum, handler in previous.items():
      signal.signal(signum, signal.SIG_DFL if handler is None else handler)

  def _interrupt(self, name, where=None):
    if name == "SIGINT":
      return KeyboardInterrupt()
    self.terminated_in = where or self._where()
    return Terminated(self.terminated_in)

  def _on_signal(self, signum, frame):
    name = signal.Signals(signum).name
    if self._users > 0 and self._watcher.running:
      # The watcher thread counts, logs and bounds it (it got it through
      # the wakeup fd); raising the flag here too makes the current step's
      # hooks see it at once, whichever thread runs first.
      if not self.event.is_set():
        self.signal_name = name
        self.event.set()
      return
    if self._users > 0 and not self.event.is_set():
      self.signal_name = name
      self.event.set()
      logging.warning("preempt | %s: stopping after the current step "
                      "and saving a checkpoint (send it again to exit now)",
                      self.signal_name)
      return
    if self._process and self._users <= 0:
      if self._finishing:  # An export: raised once it ended.
        self._pending = self._pending or name
        return
      raise self._interrupt(name)
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
