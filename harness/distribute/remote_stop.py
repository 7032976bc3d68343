"""When a remote client's tasks stop: the run every task agrees to end after.

    agreement = StopAgreement(stop, lockstep=kind.lockstep)
    if agreement.ends_after(runs_done): run_context.request_stop()

Lockstep (all-reduce) tasks must end after the same run: a task that ended
one run before its peers would leave them waiting in an all-reduce for it.
Such tasks are at most one run apart (a run's all-reduces need all of them),
so the first task that sees the client's request names the run after its
next one, which every other task still reaches. Other tasks (parameter
servers) stop after their current run.
"""

import threading

__all__ = ["StopAgreement"]


class StopAgreement:
  """The client's stop request (`stop`, a threading.Event) and its run."""

  def __init__(self, stop, *, lockstep):
    self.stop = stop
    self._lockstep = lockstep
    self._lock = threading.Lock()
    self._last_run = None

  def ends_after(self, runs_done):
    """Whether a task that has finished `runs_done` runs stops now."""
    if not self.stop.is_set():
      return False
    if not self._lockstep:
      return True
    with self._lock:
      if self._last_run is None:
        self._last_run = runs_done + 1
      return runs_done >= self._last_run
