"""A standalone client stopped by Ctrl-C says it was stopped while training
and which step the newest checkpoint holds (not "before or after the
training loop"); harness.main maps the error to exit status 130.

The real client's Ctrl-C (SIGINT to `python -m harness.main
--remote_cluster=...` on two real `harness.server`s) is
tests/test_remote.py::RemoteClusterTest::test_sigint_exits_130_naming_the_checkpoint_step,
on that class's shared cluster.
"""

import os

from absl.testing import absltest

from harness import errors
from harness._tf import tf
from harness.distribute import remote



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


if __name__ == "__main__":
  absltest.main()
