"""'training made no steps' only when the global step did not move.

With steps_per_loop=K one session.run makes up to K steps; an input that
ends inside the first run fails that run (OutOfRange), so the loop counted
no run although the global step advanced.
"""

from absl.testing import absltest
import numpy as np

import harness
from harness._tf import tf
from tests import _support

_NO_STEPS = "training made no steps"


def _input_fn(batches):
  def input_fn():
    x = np.ones([batches, 1], np.float32)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, x)).batch(1)
  return input_fn


class NoStepsWarningTest(absltest.TestCase):

  def _train(self, batches, model_dir=None):
    model_dir = model_dir or self.create_tempdir().full_path
    estimator = harness.Estimator(
        _support.scalar_weight_model_fn(), model_dir=model_dir,
        config=harness.RunConfig(steps_per_loop=10, log_step_count_steps=None,
                                 save_summary_steps=None))
    with self.assertLogs("absl", level="INFO") as logs:
      estimator.train(_input_fn(batches))
    return estimator, "\n".join(logs.output)

  def test_input_ending_inside_the_first_loop_made_steps(self):
    estimator, text = self._train(batches=3)
    self.assertEqual(estimator.get_variable_value("global_step"), 3)
    self.assertNotIn(_NO_STEPS, text)

  def test_empty_input_made_no_steps(self):
    estimator, text = self._train(batches=0)
    self.assertEqual(estimator.get_variable_value("global_step"), 0)
    self.assertIn(_NO_STEPS, text)


if __name__ == "__main__":
  absltest.main()
