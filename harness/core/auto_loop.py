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
import statistics
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
_SAMPLES = 3       # Timed runs per measurement (median taken).


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

  Runs: one warm-up at K=1 (untimed: it pays for graph set-up), `samples`
  at K=1, `samples` at K=probe, then the chosen K. A run that made fewer
  steps than asked (it stopped at a checkpoint or the last step) is not a
  sample. `clock` is injectable for tests.
  """

  def __init__(self, *, bound, bound_reason, task_label="local",
               clock=time.perf_counter, probe=_PROBE_STEPS, samples=_SAMPLES):
    self.bound = int(bound)
    self._bound_reason = bound_reason
    self._task_label = task_label
    self._clock = clock
    self._probe = max(2, min(probe, self.bound))
    self._samples = samples
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
    elif self._last is None or len(self._times[1]) < self._samples:
      self._asked = 1
    else:
      self._asked = self._probe
    return self._asked

  def record(self, steps):
    """After a run that made `steps` steps."""
    now = self._clock()
    last, self._last = self._last, now
    if self.chosen is not None or last is None:
      return
    if steps == self._asked:
      self._times[self._asked].append(now - last)
    if len(self._times[self._probe]) >= self._samples:
      self._choose()

  def _choose(self):
    one = statistics.median(self._times[1])
    probe = statistics.median(self._times[self._probe])
    step = (probe - one) / (self._probe - 1)
    overhead = max(one - max(step, 0.0), 0.0)
    self.chosen = choose(overhead, step, self.bound)
    if step > 0:
      share = 100.0 * overhead / (overhead + self.chosen * step)
      measured = (f"overhead {1e3 * overhead:.2f} ms a run, "
                  f"{1e3 * step:.3f} ms a step: {share:.1f}% of a run at "
                  f"K={self.chosen}")
    else:
      measured = (f"a run took {1e3 * one:.2f} ms at K=1 and "
                  f"{1e3 * probe:.2f} ms at K={self._probe}: steps too fast "
                  "to time")
    logging.info("train | %s | steps_per_loop=auto: K=%d (%s; at most %d: "
                 "%s)", self._task_label, self.chosen, measured, self.bound,
                 self._bound_reason)
