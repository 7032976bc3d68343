"""steps_per_loop="auto": K from the first runs' timing (harness/core/auto_loop.py)."""

import sys

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import pytest

from harness import errors
from harness._tf import tf
from harness.cli import flags
from harness.core import auto_loop
import harness
from tests import _support

_TIMEOUT_SECS = 300


class _FakeClock:
  """Each run takes overhead + steps * step_secs of fake time."""

  def __init__(self, overhead, step_secs):
    self.now = 0.0
    self.overhead, self.step_secs = overhead, step_secs

  def __call__(self):
    return self.now

  def run(self, steps):
    self.now += self.overhead + steps * self.step_secs


def _drive(chooser, clock, runs, cut=None):
  """Runs `runs` fake runs; `cut(i, k)` may shorten run i (a bound)."""
  asked = []
  for i in range(runs):
    k = chooser.next_k()
    steps = cut(i, k) if cut else k
    asked.append(k)
    clock.run(steps)
    chooser.record(steps)
  return asked


class ChooserTest(parameterized.TestCase):

  @parameterized.parameters(
      # overhead 1 ms, step 1 ms: K >= 0.95 / 0.05 = 19.
      (1e-3, 1e-3, 100, 19),
      # overhead 10 ms, step 1 ms: 190, capped by the cadence.
      (10e-3, 1e-3, 100, 100),
      # A 100 ms step: the overhead is already < 5 %.
      (1e-3, 100e-3, 100, 1),
      # Steps too fast to time: the bound.
      (1e-3, 0.0, 50, 50))
  def test_choice_makes_overhead_at_most_five_percent(
      self, overhead, step_secs, bound, expected):
    clock = _FakeClock(overhead, step_secs)
    chooser = auto_loop.KChooser(bound=bound, bound_reason="test",
                                 clock=clock)
    with self.assertLogs(level="INFO") as logs:
      asked = _drive(chooser, clock, 15)
    # 2 warm-up and 5 timed runs at K=1, 5 at the probe K=8, the choice.
    self.assertEqual(asked[:12], [1] * 7 + [8] * 5)
    self.assertEqual(asked[12:], [expected] * 3)
    self.assertEqual(chooser.chosen, expected)
    lines = [l for l in logs.output if "steps_per_loop=auto" in l]
    self.assertLen(lines, 1)
    self.assertIn(f"K={expected} ", lines[0])
    if step_secs and expected < bound:  # Not capped by the cadence.
      share = overhead / (overhead + expected * step_secs)
      self.assertLessEqual(share, 0.05 + 1e-9)
      if expected > 1:
        # ... and K - 1 would not have been enough: the smallest such K.
        self.assertGreater(
            overhead / (overhead + (expected - 1) * step_secs), 0.05)

  def test_runs_cut_short_by_a_bound_are_not_samples(self):
    clock = _FakeClock(1e-3, 1e-3)
    chooser = auto_loop.KChooser(bound=100, bound_reason="test", clock=clock)
    # Two probe runs end early (a checkpoint step): measured again.
    asked = _drive(chooser, clock, 16,
                   cut=lambda i, k: 3 if i in (8, 9) else k)
    self.assertEqual(asked[:14], [1] * 7 + [8] * 7)
    self.assertEqual(chooser.chosen, 19)

  def test_the_fastest_run_is_taken(self):
    clock = _FakeClock(1e-3, 1e-3)
    chooser = auto_loop.KChooser(bound=100, bound_reason="test", clock=clock)
    for i in range(14):
      k = chooser.next_k()
      clock.run(k)
      if i in (3, 9):  # Another process took the CPU for 50 ms.
        clock.now += 0.05
      chooser.record(k)
    self.assertEqual(chooser.chosen, 19)

  def test_bound_of_one_needs_no_measurement(self):
    chooser = auto_loop.KChooser(bound=1, bound_reason="log_step_count_steps=1")
    self.assertEqual([chooser.next_k() for _ in range(3)], [1, 1, 1])

  def test_cadence_bound(self):
    self.assertEqual(auto_loop.cadence_bound(harness.RunConfig()),
                     (100, "save_summary_steps=100"))
    self.assertEqual(
        auto_loop.cadence_bound(harness.RunConfig(save_checkpoints_steps=30)),
        (30, "save_checkpoints_steps=30"))
    self.assertEqual(
        auto_loop.cadence_bound(harness.RunConfig(
            save_summary_steps=0, log_step_count_steps=None)),
        (auto_loop.MAX_STEPS_PER_LOOP, "MAX_STEPS_PER_LOOP"))


def _model_fn(features, labels, mode, params):
  hidden = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu,
                                     name="hidden")
  logits = tf.compat.v1.layers.dense(hidden, 2, name="logits")
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  hooks = []
  if params.get("log_hidden"):
    hooks.append(tf.compat.v1.train.LoggingTensorHook(
        {"hidden": hidden}, every_n_iter=50))
  return harness.EstimatorSpec(mode, loss=loss, train_op=train_op,
                               predictions={"logits": logits},
                               training_hooks=hooks)


def _data():
  rng = np.random.RandomState(0)
  x = rng.rand(512, 8).astype(np.float32)
  return x, (x[:, 0] > 0.5).astype(np.int64)


def _dataset_input_fn():
  x, y = _data()
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(16)


def _tensor_input_fn():
  x, y = _data()
  return {"x": tf.constant(x[:16])}, tf.constant(y[:16])


def _estimator(model_dir, **params):
  config = harness.RunConfig(model_dir=model_dir, tf_random_seed=1,
                             steps_per_loop="auto", save_checkpoints_steps=60)
  return harness.Estimator(_model_fn, config=config, params=params)


def _auto_lines(logs):
  return [l for l in logs.output if "steps_per_loop=auto" in l]


class AutoTrainingTest(absltest.TestCase):

  def test_run_config_default_stays_one_and_auto_is_accepted(self):
    self.assertEqual(harness.RunConfig().steps_per_loop, 1)
    self.assertEqual(harness.RunConfig(steps_per_loop="auto").steps_per_loop,
                     "auto")
    with self.assertRaisesRegex(errors.ConfigError,
                                r"steps_per_loop must be an integer >= 1.*"
                                r"'auto'.*'fast'"):
      harness.RunConfig(steps_per_loop="fast")

  def test_binary_default_is_auto(self):
    job = flags.parse(["prog", "--model_fn=linear", "--input_fn=constant"],
                      environ={}, gpu_count=lambda: 0).job
    self.assertEqual(job.steps_per_loop, "auto")

  def test_auto_lands_on_max_steps_and_checkpoints_and_logs_k(self):
    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir)
    with self.assertLogs(level="INFO") as logs:
      est.train(_dataset_input_fn, max_steps=150)
    self.assertEqual(est.get_variable_value("global_step"), 150)
    self.assertEqual(_support.checkpoint_steps(model_dir), [0, 60, 120, 150])
    lines = _auto_lines(logs)
    self.assertLen(lines, 1, logs.output)
    self.assertRegex(lines[0], r"steps_per_loop=auto: K=\d+ \(")
    self.assertIn("max 60: save_checkpoints_steps", lines[0])

  def test_model_fn_hook_on_a_step_tensor_falls_back_with_one_info_line(self):
    est = _estimator(self.create_tempdir().full_path, log_hidden=True)
    with self.assertLogs(level="INFO") as logs:
      est.train(_dataset_input_fn, max_steps=20)
    self.assertEqual(est.get_variable_value("global_step"), 20)
    lines = _auto_lines(logs)
    self.assertLen(lines, 1, logs.output)
    self.assertIn("steps_per_loop=auto -> 1", lines[0])
    self.assertIn("LoggingTensorHook", lines[0])
    self.assertTrue(lines[0].startswith("INFO"), lines[0])

  def test_train_hook_naming_a_step_tensor_falls_back(self):
    est = _estimator(self.create_tempdir().full_path)
    hook = tf.compat.v1.train.LoggingTensorHook(["hidden/Relu:0"],
                                                every_n_iter=50)
    with self.assertLogs(level="INFO") as logs:
      est.train(_dataset_input_fn, max_steps=20, hooks=[hook])
    self.assertEqual(est.get_variable_value("global_step"), 20)
    lines = _auto_lines(logs)
    self.assertLen(lines, 1, logs.output)
    self.assertIn("'hidden/Relu:0'", lines[0])

  def test_tensor_input_falls_back(self):
    est = _estimator(self.create_tempdir().full_path)
    with self.assertLogs(level="INFO") as logs:
      est.train(_tensor_input_fn, max_steps=12)
    self.assertEqual(est.get_variable_value("global_step"), 12)
    lines = _auto_lines(logs)
    self.assertLen(lines, 1, logs.output)
    self.assertIn("not a tf.data.Dataset", lines[0])


@pytest.mark.slow  # A run of the binary.
class AutoBinaryTest(absltest.TestCase):

  def test_binary_trains_with_auto_by_default(self):
    model_dir = self.create_tempdir().full_path
    command = [sys.executable, "-m", "harness.main", "--model_fn=mnist_mlp",
               "--input_fn=synthetic", "--max_steps=300", "--eval_steps=2",
               f"--model_dir={model_dir}"]
    process = _support.run(command, timeout_secs=_TIMEOUT_SECS)
    self.assertEqual(process.returncode, 0, process.description)
    self.assertRegex(process.output, r"steps_per_loop=auto: K=\d+ ")
    self.assertEqual(_support.checkpoint_steps(model_dir)[-1], 300)


if __name__ == "__main__":
  absltest.main()
