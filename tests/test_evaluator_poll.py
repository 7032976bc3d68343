"""The evaluator task's loop: polls every eval_poll_secs, throttles only
evaluations, evaluates the final checkpoint at once, idle timeout on time.

A real (tiny) Estimator trains in this process; the loop's clock and sleep
are injected: each sleep advances the fake clock and may let training go on,
so that what the loop does between two looks is deterministic.
"""

import os
import sys

from absl import logging
from absl.testing import absltest

from harness import errors
from harness._tf import tf
from harness.distribute import checkpoint_evaluator
from harness.distribute import evaluator as evaluator_lib
from harness.state import run_state
import harness
from tests import _support
from tests import conftest
from tests.programs.cluster_job import model_fn as _model_fn


_input_fn = _support.constant_input_fn


class _FakeTime:
  """A clock that only `sleep` advances; `on_sleep(now)` may act."""

  def __init__(self, on_sleep=None):
    self.now = 0.0
    self.sleeps = []
    self._on_sleep = on_sleep

  def clock(self):
    return self.now

  def sleep(self, secs):
    self.sleeps.append(secs)
    self.now += secs
    if self._on_sleep:
      self._on_sleep(self.now)


class EvaluatorPollTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    self.est = _support.linear_estimator(self.model_dir, 5)

  def _run(self, fake, *, max_steps, throttle_secs=600, **kwargs):
    return evaluator_lib.run_continuous(
        self.est, harness.TrainSpec(_input_fn, max_steps=max_steps),
        harness.EvalSpec(_input_fn, steps=1, start_delay_secs=0,
                         throttle_secs=throttle_secs),
        clock=fake.clock, sleep=fake.sleep, **kwargs)

  def test_waiting_for_the_first_checkpoint_is_logged_periodically(self):
    def on_sleep(now):  # The first checkpoint comes after 95 s.
      if now >= 95 and not tf.train.latest_checkpoint(self.model_dir):
        self.est.train(_input_fn, max_steps=10)

    fake = _FakeTime(on_sleep)
    with self.assertLogs(level=logging.INFO) as logs:
      self._run(fake, max_steps=10)
    waits = [line for line in logs.output if "no checkpoint yet" in line]
    self.assertLen(waits, 4, "\n".join(logs.output))  # At 0, 30, 60, 90 s.
    self.assertIn("(waited 0 s)", waits[0])
    self.assertIn("(waited 90 s); looking every 1 s", waits[3])

  def test_no_checkpoint_yet_polls_every_second_not_throttle_secs(self):
    def on_sleep(now):  # Training writes its first checkpoints at t=5 s.
      if now >= 5 and not tf.train.latest_checkpoint(self.model_dir):
        self.est.train(_input_fn, max_steps=10)

    fake = _FakeTime(on_sleep)
    metrics, _ = self._run(fake, max_steps=10)
    self.assertEqual(metrics["global_step"], 10)
    self.assertTrue(fake.sleeps)
    self.assertLessEqual(max(fake.sleeps), 1.0, fake.sleeps)
    # Found at the first look after t=5, evaluated at once (no throttle
    # wait: the checkpoint is at max_steps).
    self.assertLessEqual(fake.now, 6.0)

  def test_throttle_spaces_evaluations_but_final_checkpoint_is_at_once(self):
    self.est.train(_input_fn, max_steps=5)
    evaluated = []
    original = checkpoint_evaluator.CheckpointEvaluator.evaluate_and_export

    def recording(evaluator, checkpoint_path=None):
      evaluated.append(fake.now)
      return original(evaluator, checkpoint_path)

    self.enter_context(absltest.mock.patch.object(
        checkpoint_evaluator.CheckpointEvaluator, "evaluate_and_export", recording))

    def on_sleep(now):
      if 3 <= now < 4:  # A new, non-final checkpoint: throttled.
        self.est.train(_input_fn, max_steps=10)
      if 20 <= now < 21:  # The last one: evaluated at once.
        self.est.train(_input_fn, max_steps=15)

    fake = _FakeTime(on_sleep)
    metrics, _ = self._run(fake, max_steps=15, throttle_secs=60)
    self.assertEqual(metrics["global_step"], 15)
    self.assertEqual(evaluated, [0.0, 20.0], fake.sleeps)
    self.assertLessEqual(max(fake.sleeps), 1.0)

  def test_training_done_marker_ends_the_throttle_wait(self):
    self.est.train(_input_fn, max_steps=5)

    def on_sleep(now):
      if 2 <= now < 3:  # Training ends early (no max_steps reached).
        self.est.train(_input_fn, max_steps=10)
        run_state.write_training_stopped(self.model_dir, "early_stopped", 10)

    fake = _FakeTime(on_sleep)
    metrics, _ = self._run(fake, max_steps=1000, throttle_secs=600)
    self.assertEqual(metrics["global_step"], 10)
    self.assertLessEqual(fake.now, 4.0)

  def test_poll_secs_comes_from_run_config(self):
    self.est = harness.Estimator(_model_fn, config=self.est.config.replace(
        eval_poll_secs=0.25))

    def on_sleep(now):
      if now >= 2 and not tf.train.latest_checkpoint(self.model_dir):
        self.est.train(_input_fn, max_steps=5)

    fake = _FakeTime(on_sleep)
    self._run(fake, max_steps=5)
    self.assertEqual(set(fake.sleeps), {0.25})

  def test_idle_timeout_fires_on_time(self):
    fake = _FakeTime()
    with self.assertRaisesRegex(errors.PeerLostError,
                                r"for 5 s.*--eval_idle_timeout_secs"):
      self._run(fake, max_steps=10, idle_timeout_secs=5)
    self.assertBetween(fake.now, 5.0, 6.0)

  def test_idle_timeout_from_run_config_counts_from_the_last_checkpoint(self):
    self.est = harness.Estimator(_model_fn, config=self.est.config.replace(
        eval_idle_timeout_secs=5))
    self.est.train(_input_fn, max_steps=5)
    fake = _FakeTime()
    with self.assertLogs(level=logging.INFO) as logs, self.assertRaises(
        errors.PeerLostError):
      self._run(fake, max_steps=10)
    self.assertBetween(fake.now, 5.0, 6.0)
    self.assertIn("step 5", "\n".join(logs.output))


class IdleTimeoutBinaryTest(absltest.TestCase):
  """`--eval_idle_timeout_secs=5` through `python -m harness.main`."""

  def test_evaluator_task_gives_up_after_five_seconds(self):
    model_dir = self.create_tempdir().full_path
    env = conftest.child_env({
        "cluster": {"chief": ["127.0.0.1:1"]},
        "task": {"type": "evaluator", "index": 0}})
    command = [sys.executable, "-m", "harness.main", "--model_fn=linear",
               "--input_fn=constant", f"--model_dir={model_dir}",
               "--max_steps=10", "--eval_idle_timeout_secs=5"]
    # Bounded: a timeout that never fires (issue 19.6) fails here.
    proc = _support.run(command, timeout_secs=180, env=env)
    detail = proc.description
    self.assertEqual(proc.returncode, 1, detail)
    self.assertIn("no new checkpoint", _support.flat(proc.stderr), detail)
    self.assertIn("for 5 s", _support.flat(proc.stderr), detail)
    self.assertFalse(os.path.exists(os.path.join(model_dir, "eval")))


if __name__ == "__main__":
  absltest.main()
