"""A local trainer's steps: a line while one waits, a bound on the first batch.

`train_loop.run` adds the hook to a single-task loop::

    hooks.append(first_batch.FirstBatchHook(task_label="local",
                                            timeout_secs=None))

The first `session.run` of a loop reads input_fn's first batch. While it has
not returned, a thread logs `train | local | waiting for the first batch ...
N s` every `REPORT_SECS` (RunConfig's `input_report_secs`; and `waiting
for a training step ... N s` for any later run that has not returned);
with `timeout_secs` (RunConfig / `--input_timeout_secs`) it logs one ERROR
line past the bound and ends the process with exit status 1 (the main
thread, blocked inside TensorFlow, cannot be interrupted). Multi-task jobs
have the peer timeout instead.
"""

import threading
import time

from absl import logging

from harness import fields
from harness._tf import tf
from harness.guard import stop_signal

__all__ = ["REPORT_SECS", "FirstBatchHook"]

# Seconds between two "waiting for the first batch" lines (RunConfig's
# `input_report_secs`, `--input_report_secs`).
REPORT_SECS = fields.default("input_report_secs")


class FirstBatchHook(tf.compat.v1.train.SessionRunHook):
  """Reports (and with a timeout, bounds) the wait for the first batch;
  reports any later run that has not returned after `report_secs` too."""

  def __init__(self, *, task_label="local", timeout_secs=None,
               report_secs=REPORT_SECS, clock=time.monotonic,
               on_timeout=None):
    """Creates the hook.

    Args:
      task_label: "local", ... for the lines.
      timeout_secs: seconds after which the wait for the first batch
        fails, or None (waits).
      report_secs: seconds between progress lines (> 0).
      clock: monotonic time source.
      on_timeout: callable(line) run past the bound (default: log the line
        and end the process with exit status 1); injected by tests.
    """
    self._label = task_label
    self._timeout = timeout_secs
    self._report = report_secs
    self._clock = clock
    self._on_timeout = on_timeout or (
        lambda line: stop_signal.exit_now(line, None))
    self._done = threading.Event()
    self._lock = threading.Lock()
    self._run = None  # (start time, index) of the session.run in flight.
    self._runs = 0
    self._thread = None

  def before_run(self, run_context):
    del run_context
    with self._lock:
      self._run = (self._clock(), self._runs)
    if self._thread is None and not self._done.is_set():
      self._thread = threading.Thread(
          target=self._watch, name="harness-first-batch", daemon=True)
      self._thread.start()

  def after_run(self, run_context, run_values):
    del run_context, run_values
    with self._lock:
      self._run = None
      self._runs += 1

  def end(self, session):
    del session
    self.stop()

  def stop(self):
    """Ends the watch: the loop ended, also when its first run raised (no
    `after_run` or `end` comes then, and the wait lines would go on)."""
    self._done.set()

  def _watch(self):
    reported = None  # (run index, lines logged for it)
    tick = min(1.0, self._report / 4)
    while not self._done.wait(tick):
      with self._lock:
        run = self._run
      if run is None:
        continue
      start, index = run
      elapsed = self._clock() - start
      if index == 0 and self._timeout is not None and (
          elapsed >= self._timeout):
        self._on_timeout(
            f"train | {self._label} | no first batch after {elapsed:.0f} s "
            f"(input_timeout_secs={self._timeout:g}): the first session.run, "
            "which reads input_fn's first batch, has not returned. Fix: "
            "make input_fn yield (a hung generator or a slow source?), or "
            "raise --input_timeout_secs")
        return
      lines = int(elapsed // self._report)
      if not lines or reported == (index, lines):
        continue
      reported = (index, lines)
      if index == 0:
        logging.info("train | %s | waiting for the first batch ... %.0f s "
                     "(the first session.run has not returned)", self._label,
                     elapsed)
      else:
        logging.info("train | %s | waiting for a training step ... %.0f s "
                     "(session.run %d has not returned: a stalled input or "
                     "a slow step?)", self._label, elapsed, index + 1)
