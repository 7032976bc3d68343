"""The collective stop vote: about every `VOTE_SECS`, not after every run.

Fast tests drive `guard_hook.GuardHook` with a fake session and clock and
count its vote runs; the slow test counts, in a real 2-worker collective
job (`bench.perf.step_accounting`'s traced runs), the session.run calls and
all-reduces per 100 steps at steps_per_loop=1.
"""

import json
import os
import subprocess
import sys

from absl.testing import absltest
import numpy as np
import pytest

from harness._tf import tf
from harness.guard import guard_hook
from harness.guard.stop_signal import STOP_SIGNAL

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Guard:
  """What GuardHook reads of a TrainingGuard: a 2-worker collective task."""
  label = "worker/0"
  is_chief = True
  model_dir = None
  multi_task = True
  peer_timeout_secs = 60.0
  stop_timeout_secs = 10.0
  vote_group_size = 2
  vote_device = "/job:worker/replica:0/task:0/device:CPU:0"

  def step_begins(self):
    pass

  def step_ends(self, succeeded=False):
    del succeeded

  def loop_ended_cleanly(self):
    pass


class _Session:
  """Answers the vote as if every peer fed `peer` (default: the same)."""

  def __init__(self, peer=None):
    self.votes = []  # The run index of each vote.
    self.runs = 0
    self._peer = peer

  def run(self, fetches, feed_dict=None, options=None):
    del fetches, options
    mine = np.asarray(list(feed_dict.values())[0], np.float32)
    self.votes.append(self.runs)
    return mine + (mine if self._peer is None else np.float32(self._peer))


class CadenceTest(absltest.TestCase):

  def _train(self, runs, secs_per_run, session, stop_at_run=None,
             guard=None):
    """Drives the hook over `runs` runs; returns the run that stopped."""
    clock = lambda: session.runs * secs_per_run
    with tf.Graph().as_default():
      hook = guard_hook.GuardHook(guard or _Guard(), clock=clock)
      hook.begin()
      hook.after_create_session(session, None)
      try:
        for run in range(1, runs + 1):
          session.runs = run
          if run == stop_at_run:
            STOP_SIGNAL.event.set()
          context = tf.compat.v1.train.SessionRunContext(None, session)
          hook.before_run(context)
          hook.after_run(context, None)
          if context.stop_requested:
            return run
      finally:
        STOP_SIGNAL.event.clear()
    return None

  def test_fast_runs_vote_about_every_vote_secs(self):
    session = _Session()
    self._train(1000, 0.005, session)  # 5 s of 5 ms runs.
    # Every run voted before: 1000 votes, 1000 more session.runs.
    self.assertBetween(len(session.votes), 4, 7)
    self.assertEqual(session.votes[0], 1)  # The first run votes.
    gaps = np.diff(session.votes)
    self.assertTrue(all(0.8 <= g * 0.005 / guard_hook.VOTE_SECS <= 1.0
                        for g in gaps), gaps)

  def test_a_short_stop_bound_votes_ten_times_within_it(self):
    guard = _Guard()
    guard.stop_timeout_secs = 2.0
    session = _Session()
    self._train(1000, 0.005, session, guard=guard)  # 5 s of 5 ms runs.
    gaps = np.diff(session.votes)
    self.assertTrue(all(0.16 <= g * 0.005 <= 0.2 for g in gaps), gaps)

  def test_slow_runs_vote_after_every_run(self):
    session = _Session()
    self._train(10, 2 * guard_hook.VOTE_SECS, session)
    self.assertEqual(session.votes, list(range(1, 11)))

  def test_peers_agree_on_the_mean_proposal(self):
    session = _Session(peer=[0.0, 10.0])  # The peer proposes 10 runs.
    self._train(200, 0.005, session)
    proposal = int(guard_hook.VOTE_SECS // 0.005)
    self.assertEqual(session.votes[:2], [1, 1 + (proposal + 10) // 2])

  def test_sigterm_stops_at_the_next_vote(self):
    session = _Session()
    stopped = self._train(1000, 0.005, session, stop_at_run=300)
    next_vote = min(v for v in session.votes if v >= 300)
    self.assertEqual(stopped, next_vote)
    self.assertLessEqual((stopped - 300) * 0.005, guard_hook.VOTE_SECS)

  def test_a_peers_sigterm_stops_this_worker_too(self):
    session = _Session(peer=[1.0, 200.0])
    self.assertEqual(self._train(10, 0.005, session), 1)


@pytest.mark.slow
class CollectiveCountTest(absltest.TestCase):

  def test_one_session_run_and_one_all_reduce_per_step(self):
    out = os.path.join(self.create_tempdir().full_path, "counts.json")
    subprocess.run(
        [sys.executable, "-m", "bench.perf.step_accounting",
         "--setups=harness:1", "--warmup_steps=10", "--counted_steps=60",
         f"--json={out}", "--timeout_secs=240"], cwd=_ROOT, check=True,
        timeout=300, capture_output=True)
    with open(out, encoding="utf-8") as f:
      summaries = json.load(f)
    self.assertLen(summaries, 2)
    for summary in summaries.values():
      runs = sum(r["per_100"] for r in summary["runs"].values())
      reduces = sum(c[0] for c in summary["collectives"].values())
      # Before: 200 runs and 200 all-reduces per 100 steps (a vote each).
      self.assertLessEqual(runs, 110, summary["runs"])
      self.assertLessEqual(reduces, 110, summary["collectives"])
      self.assertGreaterEqual(reduces, 100, summary["collectives"])


if __name__ == "__main__":
  absltest.main()
