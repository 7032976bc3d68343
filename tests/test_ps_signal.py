"""A parameter server that gets SIGTERM: `roles.run_ps` (issue 37).

It records `task_stopping-ps-<i>` for its trainers, serves on until they
all stopped (their done-record newer than their start), at most its grace,
then raises `TrainingPreemptedError`. In-process: a real ps server on a
free port, the clock injected, the signal given as `received`.
"""

import json
import os
from unittest import mock

from absl.testing import absltest

import harness
from harness import errors
from harness.distribute import roles
from harness.launch import ports
from harness.state import run_state


class _Clock:

  def __init__(self):
    self.now = 1000.0

  def __call__(self):
    return self.now


class PsSignalTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    chief, ps = ports.pick_free_ports(2)
    tf_config = {"cluster": {"chief": [f"127.0.0.1:{chief}"],
                             "ps": [f"127.0.0.1:{ps}"]},
                 "task": {"type": "ps", "index": 0}}
    with mock.patch.dict(os.environ, {"TF_CONFIG": json.dumps(tf_config)}):
      config = harness.RunConfig(model_dir=self.model_dir)
    self.estimator = mock.Mock(spec=harness.Estimator)
    self.estimator.config = config
    self.estimator.model_dir = self.model_dir
    self.clock = _Clock()

  def _run_ps(self, on_sleep):
    def sleep(secs):
      self.clock.now += secs
      on_sleep()
    return roles.run_ps(self.estimator, poll_secs=1.0, grace_secs=30,
                        clock=self.clock, sleep=sleep, received=["SIGTERM"])

  def test_serves_until_the_chief_stopped_then_exits_as_preempted(self):
    run_state.write_task_started(self.model_dir, "chief/0")  # Training.
    polls = []

    def on_sleep():
      polls.append(self.clock.now)
      self.assertTrue(os.path.exists(os.path.join(
          self.model_dir, "task_stopping-ps-0")), "no stop record")
      if len(polls) == 3:  # The chief saved and stopped.
        run_state.write_task_done(self.model_dir, "chief/0")

    with self.assertRaises(errors.TrainingPreemptedError) as raised:
      self._run_ps(on_sleep)
    self.assertLen(polls, 3, "the ps left before the chief stopped")
    self.assertEqual(raised.exception.signal_name, "SIGTERM")
    self.assertIn("its trainers had stopped", str(raised.exception))

  def test_a_chief_that_never_stops_is_waited_for_the_grace_only(self):
    run_state.write_task_started(self.model_dir, "chief/0")
    start = self.clock.now
    with self.assertRaises(errors.TrainingPreemptedError) as raised:
      self._run_ps(lambda: None)
    self.assertBetween(self.clock.now - start, 30, 32)
    self.assertIn("the grace ran out (chief/0 still training)",
                  str(raised.exception))

  def test_a_stop_after_training_finished_ends_the_run_not_a_preemption(self):
    # harness.launch stops its ps once every trainer exited 0: the chief's
    # end mark and the trainers' done records are there, so the ps leaves
    # as at a finished run (exit 0), records no stop, and raises nothing.
    run_state.write_task_started(self.model_dir, "chief/0")
    run_state.write_task_done(self.model_dir, "chief/0")
    run_state.write_training_stopped(self.model_dir, "finished", 200)
    with self.assertLogs(level="INFO") as logs:
      self.assertEqual(self._run_ps(lambda: None), (None, []))
    self.assertFalse(os.path.exists(os.path.join(
        self.model_dir, "task_stopping-ps-0")), "a stop recorded")
    self.assertTrue(any("training ended (finished); exiting" in line
                        for line in logs.output), logs.output)


if __name__ == "__main__":
  absltest.main()
