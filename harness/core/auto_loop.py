"""`steps_per_loop="auto"`: K chosen from the measured time of the first runs.

A run of the training loop costs a fixed per-run overhead `o` (the
`session.run` round trip and every hook's before/after work) plus `c` per
step. harness times the first runs, with K = 1 and then with K = `probe`,
from one `after_run` to the next (everything a training iteration costs),
solves for `o` and `c`, and picks the smallest K that makes the overhead at
most 5 % of a run: `o / (o + K c) <= 0.05`. K is bounded by the cadence a
user asked for (`save_summary_steps`, `log_step_count_steps`,
`save_checkpoints_steps`: a loop of K steps reports once) and by
`MAX_STEPS_PER_LOOP`. One INFO line states the K used and why::

    train | local | steps_per_loop=auto: K=100 (overhead 1.92 ms a run,
    0.21 ms a step: 1.6% of a run at K=100; at most 100: save_summary_steps)

Collective workers must run the same number of steps per run (their
all-reduces pair up), and timing differs between processes: there K is the
cadence bound, not measured. `python -m harness.main` defaults to "auto";
`RunConfig` defaults to 1 (tf.estimator's exact semantics).
"""

import math
import time

from absl import logging

__all__ = ["MAX_STEPS_PER_LOOP", "OVERHEAD_FRACTION", "cadence_bound",
           "KChooser", "choose"]

# K's ceiling when no cadence bounds it (a run of 1,000 tiny steps is
# ~0.1-1 s: stop requests and SIGTERM are still handled promptly).
MAX_STEPS_PER_LOOP = 1000
# The per-run overhead's share of a run that auto aims below.
OVERHEAD_FRACTION = 0.05
_PROBE_STEPS = 8   # K of the second measurement.
_WARMUP_RUNS = 2   # Untimed first runs (graph set-up, allocations).
# Timed runs per measurement; the fastest is taken: on a loaded machine
# other processes only ever add time, so the minimum is the least noisy.
_SAMPLES = 5


def cadence_bound(config):
  """(K's upper bound, what sets it) from a RunConfig's cadence fields."""
  bound, reason = MAX_STEPS_PER_LOOP, "MAX_STEPS_PER_LOOP"
  for name in ("save_summary_steps", "log_step_count_steps",
               "save_checkpoints_steps"):
    value = getattr(config, name)
    if value and value > 0 and value < bound:
      bound, reason = int(value), f"{name}={int(value)}"
  return bound, reason


def choose(overhead_secs, step_secs, bound):
  """Smallest K with per-run overhead <= OVERHEAD_FRACTION of a run.

  Args:
    overhead_secs: measured per-run overhead (>= 0).
    step_secs: measured time of one step; <= 0 when below the noise.
    bound: the largest K allowed (>= 1).

  Returns:
    K in [1, bound].
  """
  if step_secs <= 0:
    return bound
  needed = overhead_secs * (1 - OVERHEAD_FRACTION) / (
      OVERHEAD_FRACTION * step_secs)
  return int(max(1, min(bound, math.ceil(needed - 1e-9))))


class KChooser:
  """Plans the K of each run until it has measured enough to choose.

  Runs: `warmup` at K=1 (untimed: they pay for graph set-up), `samples`
  at K=1, `samples` at K=probe (the fastest of each taken), then the
  chosen K. A run that made fewer steps than asked (it stopped at a
  checkpoint or the last step) is not a sample. `clock` is injectable.
  Measuring costs warmup + samples * (1 + probe) steps (47 by default).
  """

  def __init__(self, *, bound, bound_reason, task_label="local",
               clock=time.perf_counter, probe=_PROBE_STEPS, samples=_SAMPLES,
               warmup=_WARMUP_RUNS):
    self.bound = int(bound)
    self._bound_reason = bound_reason
    self._task_label = task_label
    self._clock = clock
    self._probe = max(2, min(probe, self.bound))
    self._samples = samples
    self._warmup = max(1, warmup)
    self._runs = 0
    self._times = {1: [], self._probe: []}
    self._last = None
    self._asked = None
    self.chosen = 1 if self.bound == 1 else None
    if self.chosen:
      logging.info("train | %s | steps_per_loop=auto: K=1 (%s allows no "
                   "more).", task_label, bound_reason)

  def next_k(self):
    """The K the next run may make."""
    if self.chosen is not None:
      self._asked = self.chosen
    elif self._runs < self._warmup or len(self._times[1]) < self._samples:
      self._asked = 1
    else:
      self._asked = self._probe
    return self._asked

  def record(self, steps):
    """After a run that made `steps` steps."""
    now = self._clock()
    last, self._last = self._last, now
    self._runs += 1
    if self.chosen is not None or self._runs <= self._warmup:
      return
    if steps == self._asked:
      self._times[self._asked].append(now - last)
    if len(self._times[self._probe]) >= self._samples:
      self._choose()

  def _choose(self):
    one = min(self._times[1])
    probe = min(self._times[self._probe])
    step = (probe - one) / (self._probe - 1)
    overhead = max(one - max(step, 0.0), 0.0)
    self.chosen = choose(overhead, step, self.bound)
    if step > 0:
      share = 100.0 * overhead / (overhead + self.chosen * step)
      measured = f"overhead {share:.1f}% of a run"
    else:
      measured = "steps too fast to time"
    # One line that fits (issue 17); the timings in full at DEBUG.
    logging.info("train | %s | steps_per_loop=auto: K=%d (%s; max %d: %s)",
                 self._task_label, self.chosen, measured, self.bound,
                 self._bound_reason.split("=")[0])
    logging.debug("train | %s | steps_per_loop=auto: a run of 1 step took "
                  "%.3f ms, of %d steps %.3f ms", self._task_label, 1e3 * one,
                  self._probe, 1e3 * probe)
