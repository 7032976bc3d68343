"""One remote task's training thread, and the hook that starts and stops it.

`remote.train_remote` runs one `TaskRun` per training task of the cluster,
each a thread calling `harness.core.trainer.train` on a session at that
task's server; its `TaskHook` holds every task until all have a session and
stops it when the client asks (`remote_stop.StopAgreement`).
"""

import threading
import time

from absl import logging

from harness._tf import tf
from harness.core import trainer

__all__ = ["TaskHook", "TaskRun"]


class TaskHook(tf.compat.v1.train.SessionRunHook):
  """Tells the client when a task's session exists; stops it when asked.

  Every task starts stepping once all tasks have a session (or one of them
  ended or failed, or the client stops): under parameter servers a task
  whose session came first would otherwise train alone for a while.
  """

  def __init__(self, ready, everyone_ready, agreement, timeout_secs, claims):
    self._ready = ready
    self._everyone_ready = everyone_ready
    self._agreement = agreement
    self._stop = agreement.stop
    self._runs_done = 0
    self._timeout_secs = timeout_secs
    self._claims = claims

  def after_create_session(self, session, coord):
    del session, coord
    self._ready.set()
    deadline = time.monotonic() + self._timeout_secs
    while not (self._stop.is_set() or time.monotonic() > deadline or
               all(e.is_set() for e in self._everyone_ready)):
      self._stop.wait(0.05)

  def after_run(self, run_context, run_values):
    del run_values
    self._runs_done += 1
    if self._agreement.ends_after(self._runs_done):
      run_context.request_stop()

  def end(self, session):
    # Before this task's session closes (MonitoredSession ends the hooks
    # first): the close may keep its server busy for a while.
    del session
    self._claims.closing()


class TaskRun:
  """One task's training thread and its outcome."""

  def __init__(self, model, input_fn, context, strategy, *, steps,
               max_steps, hooks, saving_listeners, agreement, everyone_ready,
               start_timeout_secs, claims):
    self.label = context.task_label.split()[-1]
    self.ready = threading.Event()
    self.done = threading.Event()  # Set when the thread's work has ended.
    self.result = None
    self.error = None
    self.failed_at = None
    task_hook = TaskHook(self.ready, everyone_ready, agreement,
                          start_timeout_secs, claims)
    self._model = model
    self._input_fn = input_fn
    self._train_kwargs = dict(
        hooks=hooks + [task_hook], steps=steps, max_steps=max_steps,
        saving_listeners=saving_listeners, context=context, strategy=strategy)
    self.thread = threading.Thread(target=self._run, daemon=True,
                                   name=f"remote-{self.label}")

  def _run(self):
    try:
      self.result = trainer.train(self._model, self._input_fn,
                                  **self._train_kwargs)
    except BaseException as e:  # pylint: disable=broad-except
      self.error = e
      self.failed_at = time.monotonic()
      logging.warning("remote | %s | failed: %s: %s", self.label,
                      type(e).__name__, e)
    finally:
      self.ready.set()  # A task that stops early is not waited for either.
      self.done.set()

  def running(self):
    # Not thread.is_alive(): a join() interrupted by Ctrl-C can leave it
    # False for a thread that still runs (CPython, Python <= 3.12).
    return not self.done.is_set()
