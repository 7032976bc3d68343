"""RunConfig(input_report_secs=...) sets how often a local trainer says it
is still waiting for its first batch (a field of harness.fields, issue 40's
example of a knob added by one table entry and its use)."""

import time

from absl.testing import absltest

from harness import estimator as estimator_lib
from harness import run_config as run_config_lib
from harness import spec as spec_lib
from harness._tf import tf

_FIRST_BATCH_DELAY_SECS = 2.0


def _slow_first_batch_input_fn():
  def slow(x):
    time.sleep(_FIRST_BATCH_DELAY_SECS)
    return x
  features = tf.compat.v1.py_func(slow, [tf.constant([[1.0]])], tf.float32,
                                  stateful=True)
  features.set_shape([1, 1])
  return {"x": features}, tf.constant([[2.0]])


def _model_fn(features, labels, mode):
  weight = tf.compat.v1.get_variable("w", [1, 1])
  loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], weight) - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return spec_lib.EstimatorSpec(mode, loss=loss, train_op=train_op)


class InputReportSecsTest(absltest.TestCase):

  def _waiting_lines(self, **knobs):
    config = run_config_lib.RunConfig(
        model_dir=self.create_tempdir().full_path, **knobs)
    estimator = estimator_lib.Estimator(_model_fn, config=config)
    with self.assertLogs(level="INFO") as logs:
      estimator.train(_slow_first_batch_input_fn, max_steps=1)
    return [line for line in logs.output
            if "waiting for the first batch" in line]

  def test_the_knob_reaches_the_trainers_wait_lines(self):
    # A 2 s first batch: lines every 0.4 s, none at the default 10 s.
    self.assertGreaterEqual(len(self._waiting_lines(input_report_secs=0.4)),
                            2)
    self.assertEqual(self._waiting_lines(), [])

  def test_a_bad_value_is_refused_at_run_config(self):
    with self.assertRaisesRegex(ValueError, "input_report_secs"):
      run_config_lib.RunConfig(input_report_secs=0)


if __name__ == "__main__":
  absltest.main()
