"""A standalone client stopped by Ctrl-C says it was stopped while training
and which step the newest checkpoint holds (not "before or after the
training loop"); harness.main maps the error to exit status 130.

The slow test sends SIGINT to a real `python -m harness.main
--remote_cluster=...` client training on two real `harness.server`s.
"""

import os
import signal

from absl.testing import absltest
import pytest

from harness import errors
from harness._tf import tf
from harness.distribute import remote
from tests import _support

_CLIENT_SECS = 150
_STOP_SECS = 60  # The tasks stop after their current step, then exit.


class InterruptedErrorTest(absltest.TestCase):

  def test_names_the_newest_checkpoint_step(self):
    model_dir = self.create_tempdir().full_path
    with tf.Graph().as_default():
      step = tf.compat.v1.train.get_or_create_global_step()
      saver = tf.compat.v1.train.Saver()
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(step.assign(3445))
        saver.save(sess, os.path.join(model_dir, "model.ckpt"),
                   global_step=3445)
    error = remote.interrupted_error(model_dir)
    self.assertIsInstance(error, errors.TrainingPreemptedError)
    self.assertEqual(error.signal_name, "SIGINT")
    self.assertEqual(
        str(error), "client: training was interrupted (SIGINT); the tasks "
        "were asked to stop after their current step and the newest "
        "checkpoint is at step 3445. Fix: run the same command again to "
        "resume from it.")

  def test_without_a_checkpoint(self):
    error = remote.interrupted_error(self.create_tempdir().full_path)
    self.assertIn("and no checkpoint yet.", str(error))

  def test_names_the_tasks_still_stopping(self):
    # The client gave up waiting: the chief may still save a newer step.
    error = remote.interrupted_error(self.create_tempdir().full_path,
                                     "SIGTERM", ["worker/0"])
    self.assertIn("training was preempted (SIGTERM)", str(error))
    self.assertIn("and no checkpoint yet so far (worker/0 still stopping).",
                  str(error))


@pytest.mark.slow
class ClientCtrlCTest(absltest.TestCase):

  def test_sigint_exits_130_naming_the_checkpoint_step(self):
    cluster = _support.loopback_cluster(worker=2)
    servers = _support.start_servers(self, cluster, num_cpu_devices=2)
    model_dir = self.create_tempdir().full_path
    client = _support.ChildProcess(
        ["-m", "harness.main", "--model_fn=linear", "--input_fn=constant",
         f"--remote_cluster={_support.cluster_spec(cluster)}",
         "--strategy=collective", "--num_gpus_per_worker=2",
         "--cpu_stand_in", "--max_steps=1000000", "--batch_size=20",
         "--save_checkpoints_steps=20", "--log_step_count_steps=10",
         "--mode=train", f"--model_dir={model_dir}"], "client")
    self.addCleanup(client.kill_group)
    self.assertTrue(client.wait_for(
        lambda: (_support.checkpoint_step(model_dir) or 0) > 0 and (
            _support.steps_logged(client.output, "remote worker/1")),
        _CLIENT_SECS), client.describe())
    code, _ = client.stop(signal.SIGINT, _STOP_SECS)
    self.assertEqual(code, errors.EXIT_INTERRUPTED, client.describe())
    step = _support.checkpoint_step(model_dir)
    self.assertEqual(
        _support.last_error(client.output),
        "harness.main: TrainingPreemptedError: client: training was "
        "interrupted (SIGINT); the tasks were asked to stop after their "
        f"current step and the newest checkpoint is at step {step}. Fix: run "
        "the same command again to resume from it.", client.describe())
    for server in servers:  # Stopping the client leaves the servers up.
      self.assertIsNone(server.proc.poll(), server.describe())


if __name__ == "__main__":
  absltest.main()
