"""RunConfig(steps_per_loop=K): K training steps inside one session.run."""

from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from harness import errors
from harness._tf import tf
from harness.distribute import strategies
import harness
from tests import _support
from tests import conftest


def _model_fn(features, labels, mode, params):
  hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu,
                                     name="hidden")
  logits = tf.compat.v1.layers.dense(hidden, 3, name="logits")
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  tf.compat.v1.summary.scalar("double_loss", 2.0 * loss)
  train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  hooks = []
  if params.get("log_hidden"):
    hooks.append(tf.compat.v1.train.LoggingTensorHook(
        {"hidden": hidden}, every_n_iter=1))
  return harness.EstimatorSpec(mode, loss=loss, train_op=train_op,
                               training_hooks=hooks)


def _data():
  rng = np.random.RandomState(0)
  x = rng.rand(480, 6).astype(np.float32)
  y = np.minimum((x[:, 0] * 3).astype(np.int64), 2)
  return x, y


def _dataset_input_fn(batches=None):
  def input_fn():
    x, y = _data()
    ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(16)
    return ds.take(batches) if batches else ds.repeat()
  return input_fn


def _tensor_input_fn():
  x, y = _data()
  return {"x": tf.constant(x[:16])}, tf.constant(y[:16])


def _estimator(model_dir, steps_per_loop, *, strategy=None, params=None,
               **kwargs):
  config = harness.RunConfig(
      model_dir=model_dir, tf_random_seed=3, steps_per_loop=steps_per_loop,
      save_checkpoints_steps=50, save_summary_steps=20,
      log_step_count_steps=25, train_distribute=strategy,
      session_config=tf.compat.v1.ConfigProto(device_count={"CPU": 2}),
      **kwargs)
  return harness.Estimator(_model_fn, config=config, params=params or {})


_summary_steps = conftest.summary_steps


_variables = _support.variable_values


class _StepRecorder(tf.compat.v1.train.SessionRunHook):
  """Records the global step each run starts at."""

  def __init__(self):
    self.steps = []

  def begin(self):
    self._step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._step)

  def after_run(self, run_context, run_values):
    self.steps.append(int(run_values.results))


class StepsPerLoopTest(parameterized.TestCase):

  def test_max_steps_and_steps_land_exactly(self):
    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir, 10)
    est.train(_dataset_input_fn(), max_steps=137)
    self.assertEqual(est.get_variable_value("global_step"), 137)
    est.train(_dataset_input_fn(), steps=21)
    self.assertEqual(est.get_variable_value("global_step"), 158)
    # Checkpoint cadence as with one step per run: every 50 steps from the
    # session's start, and the last step.
    self.assertEqual(_support.checkpoint_steps(model_dir), [0, 50, 100, 137, 158])

  @parameterized.named_parameters(("local", None), ("mirrored", "mirrored"))
  def test_trains_like_one_step_per_run(self, strategy_name):
    def estimator(model_dir, steps_per_loop):
      strategy = (strategies.make_strategy(
          "mirrored", num_devices_per_worker=2) if strategy_name else None)
      return _estimator(model_dir, steps_per_loop, strategy=strategy)

    # Same initial variables for both (random initialisers' op seeds depend
    # on the graph's shape, which the loop changes): a 1-step checkpoint.
    start = self.create_tempdir().full_path
    estimator(start, 1).train(_dataset_input_fn(), max_steps=1)
    results = []
    for steps_per_loop in (1, 7):
      model_dir = self.create_tempdir().full_path
      _support.copy_model_dir_files(start, model_dir)
      est = estimator(model_dir, steps_per_loop)
      est.train(_dataset_input_fn(), max_steps=40)
      results.append(_variables(est))
    one, looped = results
    self.assertEqual(sorted(one), sorted(looped))
    self.assertEqual(looped["global_step"], 40)
    for name in one:
      np.testing.assert_allclose(looped[name], one[name], rtol=1e-5,
                                 atol=1e-6, err_msg=name)

  def test_hooks_see_the_step_advance_by_k(self):
    recorder = _StepRecorder()
    est = _estimator(self.create_tempdir().full_path, 10)
    est.train(_dataset_input_fn(), max_steps=45, hooks=[recorder])
    # The read is taken before each loop, which ends after 10 steps or at
    # max_steps: 0, 10, 20, 30, 40.
    self.assertEqual(recorder.steps, [0, 10, 20, 30, 40])

  def test_summaries_keep_their_cadence(self):
    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir, 10)
    est.train(_dataset_input_fn(), max_steps=100)
    # After the first run, then every 20 steps (as one step per run: 1, 21,
    # ...), model_fn's own summary (its loop's last step) and the loss alike.
    for tag in ("loss", "double_loss"):
      self.assertEqual(_summary_steps(model_dir, tag), [10, 30, 50, 70, 90],
                       tag)

  @parameterized.named_parameters(("one_step_a_run", 1), ("loops", 10))
  def test_event_file_flushed_only_after_a_summary_run(self, steps_per_loop):
    """The full-disk check flushes the event file after a run that wrote a
    summary, not after every run (that cost ~0.25 ms a step)."""
    from harness.core import step_loop  # pylint: disable=g-import-not-at-top
    model_dir = self.create_tempdir().full_path
    flushed = []
    real = step_loop.storage.flush_events
    with mock.patch.object(step_loop.storage, "flush_events",
                           lambda logdir: (flushed.append(1), real(logdir))):
      _estimator(model_dir, steps_per_loop).train(
          _dataset_input_fn(), max_steps=100)
    # Summaries at about 1, 21, 41, 61, 81 (K=1; 10, 30, ... with loops).
    self.assertBetween(len(flushed), 4, 6)
    self.assertLen(_summary_steps(model_dir, "loss"), 5)

  def test_input_exhaustion_ends_the_loop(self):
    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir, 10)
    est.train(_dataset_input_fn(batches=23))
    self.assertEqual(est.get_variable_value("global_step"), 23)
    self.assertEqual(_support.checkpoint_steps(model_dir)[-1], 23)

  def test_tensor_input_falls_back_to_one_step_per_run(self):
    est = _estimator(self.create_tempdir().full_path, 10)
    with self.assertLogs(level="WARNING") as logs:
      est.train(_tensor_input_fn, max_steps=12)
    self.assertEqual(est.get_variable_value("global_step"), 12)
    self.assertTrue(any("one step per session.run" in line
                        for line in logs.output), logs.output)

  def test_model_fn_hook_on_a_loop_tensor_trains_one_step_per_run(self):
    est = _estimator(self.create_tempdir().full_path, 10,
                     params={"log_hidden": True})
    with self.assertLogs(level="WARNING") as logs:
      est.train(_dataset_input_fn(), max_steps=20)
    self.assertEqual(est.get_variable_value("global_step"), 20)
    lines = [l for l in logs.output if "steps_per_loop=10 -> 1" in l]
    self.assertLen(lines, 1, logs.output)
    self.assertIn("LoggingTensorHook in EstimatorSpec.training_hooks "
                  "fetches 'hidden/Relu:0'", lines[0])

  def test_hook_naming_a_loop_tensor_is_a_clear_error(self):
    est = _estimator(self.create_tempdir().full_path, 10)
    hook = tf.compat.v1.train.LoggingTensorHook(["hidden/Relu:0"],
                                                every_n_iter=1)
    with self.assertRaisesRegex(errors.ConfigError,
                                r"steps_per_loop=10.*steps_per_loop=1"):
      est.train(_dataset_input_fn(), max_steps=20, hooks=[hook])

  def test_binary_flag_trains_with_loops(self):
    from harness import main as main_lib  # pylint: disable=g-import-not-at-top
    model_dir = self.create_tempdir().full_path
    code = main_lib.main([
        "harness.main", "--model_fn=linear", "--input_fn=constant",
        f"--model_dir={model_dir}", "--max_steps=33", "--steps_per_loop=10",
        "--eval_steps=1", "--save_checkpoints_steps=20"])
    self.assertEqual(code, 0)
    self.assertEqual(_support.checkpoint_steps(model_dir)[-1], 33)
    self.assertIn(20, _support.checkpoint_steps(model_dir))


if __name__ == "__main__":
  absltest.main()
