"""Tests of harness.hooks: re-exports, progress lines, experimental hooks."""

import json
import os
import re

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from harness import early_stopping
from harness import errors
from harness import hooks
from harness._tf import tf
from tests import _support

_REEXPORTED = [
    "SessionRunHook", "SessionRunArgs", "SessionRunContext",
    "SessionRunValues", "CheckpointSaverHook", "CheckpointSaverListener",
    "StepCounterHook", "LoggingTensorHook", "StopAtStepHook", "NanTensorHook",
    "NanLossDuringTrainingError", "GlobalStepWaiterHook",
    "FinalOpsHook", "FeedFnHook", "ProfilerHook", "SecondOrStepTimer",
]


class _Clock:
  """A clock the test moves by hand."""

  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


def _progress_lines(logs):
  # Progress lines only: on a loaded machine other `train | ` lines (e.g.
  # guard/first_batch's wait) may come too.
  return [r.getMessage() for r in logs.records
          if re.match(r"train \| .*\| step \d+", r.getMessage())]


class ReexportTest(parameterized.TestCase):

  @parameterized.parameters(*_REEXPORTED)
  def test_is_tensorflows_class(self, name):
    self.assertIs(getattr(hooks, name), getattr(tf.compat.v1.train, name))
    self.assertIn(name, hooks.__all__)


def _tf_version():
  return tuple(int(p) for p in tf.__version__.split(".")[:2])


class SummarySaverHookTest(absltest.TestCase):
  """tf.estimator 2.15's SummarySaverHook on every TensorFlow harness admits.

  TF 2.22 raises ValueError for a hook with neither output_dir nor
  summary_writer; 2.15 to 2.21 accepted it, ran its summary op and wrote
  nothing. CI runs this on TF 2.16, 2.21 and the 2.22 pre-release.
  """

  def _train(self, hook_class, **kwargs):
    """Runs 3 steps with the hook, from an empty working directory."""
    workdir = self.create_tempdir().full_path
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
      with tf.Graph().as_default():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        step = global_step.assign_add(1)
        tf.compat.v1.summary.scalar("x", tf.constant(1.0))
        hook = hook_class(save_steps=1,
                          summary_op=tf.compat.v1.summary.merge_all(),
                          **kwargs)
        with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as session:
          for _ in range(3):
            session.run(step)
    finally:
      os.chdir(cwd)
    return hook, workdir

  def test_no_output_dir_nor_writer_trains_and_writes_nothing(self):
    hook, workdir = self._train(hooks.SummarySaverHook)
    self.assertIsInstance(hook, tf.compat.v1.train.SummarySaverHook)
    self.assertEqual(os.listdir(workdir), [])

  def test_every_harness_path_names_it(self):
    import harness  # pylint: disable=g-import-not-at-top
    import harness.compat  # pylint: disable=g-import-not-at-top,unused-import
    from tensorflow_estimator.python.estimator.hooks import basic_session_run_hooks  # pylint: disable=g-import-not-at-top
    for name, found in (
        ("harness", harness.SummarySaverHook),
        ("tf.estimator", tf.estimator.SummarySaverHook),
        ("tf.compat.v1.estimator", tf.compat.v1.estimator.SummarySaverHook),
        ("basic_session_run_hooks", basic_session_run_hooks.SummarySaverHook)):
      with self.subTest(name):
        self.assertIs(found, hooks.SummarySaverHook)

  def test_tensorflows_own_class_differs_from_2_22_on(self):
    # Why the subclass exists: TF's class raises from 2.22 on, and the
    # test above would fail with it.
    with tf.Graph().as_default():
      make = lambda: tf.compat.v1.train.SummarySaverHook(
          save_steps=1, summary_op=tf.constant(""))
      if _tf_version() >= (2, 22):
        with self.assertRaisesRegex(ValueError, "output_dir"):
          make()
      else:
        make()

  def test_with_an_output_dir_it_writes_events(self):
    output_dir = self.create_tempdir().full_path
    self._train(hooks.SummarySaverHook, output_dir=output_dir)
    self.assertNotEmpty(tf.io.gfile.glob(os.path.join(output_dir,
                                                      "events.out.*")))

  def test_scaffold_and_summary_op_rule_is_2_15s(self):
    with tf.Graph().as_default():
      with self.assertRaisesRegex(ValueError, "Exactly one of scaffold or "
                                  "summary_op must be provided"):
        hooks.SummarySaverHook(save_steps=1)

  def test_positional_arguments_keep_2_15s_order(self):
    with tf.Graph().as_default():
      op = tf.constant("")
      hook = hooks.SummarySaverHook(1, None, None, None, None, op)
      self.assertIsInstance(hook, hooks.SummarySaverHook)


class ProgressLoggerHookTest(absltest.TestCase):

  def _run(self, *, runs, steps_per_run=1, every_n_steps=3, max_steps=None,
           examples_per_step=None, last_step=None, first_run_secs=0.1):
    """Runs `runs` session.run calls; returns (progress lines, loss fetches)."""
    clock = _Clock()
    fetches = []
    with tf.Graph().as_default():
      global_step = tf.compat.v1.train.get_or_create_global_step()
      train_op = global_step.assign_add(steps_per_run)
      # The loss is computed only when fetched; count those computations.
      loss = tf.numpy_function(
          lambda: fetches.append(1) or np.float32(0.25), [], tf.float32)
      hook = hooks.ProgressLoggerHook(
          loss_tensor=loss, global_step_tensor=global_step,
          every_n_steps=every_n_steps, task_label="chief/0",
          max_steps=max_steps, examples_per_step=examples_per_step,
          clock=clock)
      all_hooks = [hook]
      if last_step is not None:
        all_hooks.append(hooks.StopAtStepHook(last_step=last_step))
      with self.assertLogs("absl", level="INFO") as logs:
        with tf.compat.v1.train.MonitoredSession(hooks=all_hooks) as session:
          for run in range(runs):
            if session.should_stop():
              break
            clock.now += first_run_secs if run == 0 else 0.1
            session.run(train_op)
    return _progress_lines(logs), len(fetches)

  def test_line_shape_with_everything_known(self):
    lines, _ = self._run(runs=10, max_steps=10, examples_per_step=32,
                         last_step=10)
    self.assertEqual(
        lines[0],
        "train | chief/0 | step 3/10 | 10.0 steps/s | 320 examples/s | "
        "loss=0.25 | eta 0:00:01")

  def test_start_up_stays_out_of_the_rate_and_eta(self):
    # Issue 39: a slow first run (tf.data, first compile) made the first
    # line say 0.6 steps/s and an ETA many times the job's length.
    lines, _ = self._run(runs=10, max_steps=10, last_step=10,
                         first_run_secs=5.0)
    self.assertEqual(lines[0], "train | chief/0 | step 3/10 | 10.0 steps/s | "
                     "loss=0.25 | eta 0:00:01")
    # A first line the first run itself reaches shows no ETA.
    lines, _ = self._run(runs=3, steps_per_run=3, max_steps=9, last_step=9,
                         first_run_secs=5.0)
    self.assertNotIn("eta", lines[0])
    self.assertIn("eta", lines[1])

  def test_logs_every_n_steps_and_the_last_step(self):
    lines, fetches = self._run(runs=10, max_steps=10, last_step=10)
    steps = [int(re.search(r"step (\d+)/10", l).group(1)) for l in lines]
    self.assertEqual(steps, [3, 6, 9, 10])
    # Tensors are fetched only on the logged steps.
    self.assertEqual(fetches, 4)

  def test_unknown_parts_are_left_out(self):
    lines, _ = self._run(runs=3, every_n_steps=3)
    self.assertEqual(lines, ["train | chief/0 | step 3 | 10.0 steps/s | "
                             "loss=0.25"])

  def test_end_logs_last_step_without_fetching_loss(self):
    lines, fetches = self._run(runs=7, every_n_steps=5)
    self.assertEqual(lines, [
        "train | chief/0 | step 5 | 10.0 steps/s | loss=0.25",
        "train | chief/0 | step 7 | 10.0 steps/s",
    ])
    self.assertEqual(fetches, 1)

  def test_several_steps_per_run(self):
    lines, fetches = self._run(runs=20, steps_per_run=5, every_n_steps=10)
    steps = [int(re.search(r"step (\d+)", l).group(1)) for l in lines]
    self.assertEqual(steps, [10, 20, 30, 40, 50, 60, 70, 80, 90, 100])
    self.assertLessEqual(fetches, 11)

  def test_rejects_bad_every_n_steps(self):
    with self.assertRaisesRegex(errors.ConfigError, "every_n_steps.*0"):
      hooks.ProgressLoggerHook(loss_tensor=None, global_step_tensor=None,
                               every_n_steps=0)


_model_fn = _support.scalar_weight_model_fn()


def _input_fn():
  x = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x)).batch(2)


class InMemoryEvaluatorHookTest(absltest.TestCase):

  def test_writes_eval_events_while_training(self):
    from harness import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
    model_dir = self.create_tempdir().full_path
    est = estimator_lib.Estimator(_model_fn, model_dir=model_dir)
    evaluator = hooks.InMemoryEvaluatorHook(est, _input_fn, every_n_iter=4)
    est.train(lambda: _input_fn().repeat(), hooks=[evaluator], max_steps=8)
    metrics = early_stopping.read_eval_metrics(
        os.path.join(model_dir, "eval"))
    # At session creation, every 4 training runs, and at the end (step 8 again).
    self.assertEqual(list(metrics), [0, 4, 8])
    self.assertAlmostEqual(metrics[0]["loss"], 30.0)  # w = 0: mean of (2x)^2.
    self.assertLess(metrics[8]["loss"], metrics[4]["loss"])
    self.assertIn("mae", metrics[8])
    self.assertEqual(metrics[0]["mean_pred"], 0.0)
    self.assertGreater(metrics[8]["mean_pred"], 0.0)

  def test_rejects_bad_every_n_iter(self):
    from harness import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
    est = estimator_lib.Estimator(
        _model_fn, model_dir=self.create_tempdir().full_path)
    with self.assertRaisesRegex(errors.ConfigError, "every_n_iter=0"):
      hooks.InMemoryEvaluatorHook(est, _input_fn, every_n_iter=0)

  def test_rejects_multi_worker_config(self):
    from harness import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
    from harness import run_config  # pylint: disable=g-import-not-at-top
    tf_config = {"cluster": {"chief": ["127.0.0.1:1"],
                             "worker": ["127.0.0.1:2"]},
                 "task": {"type": "chief", "index": 0}}
    config = run_config.RunConfig(
        environ={"TF_CONFIG": json.dumps(tf_config)})
    est = estimator_lib.Estimator(
        _model_fn, model_dir=self.create_tempdir().full_path, config=config)
    with self.assertRaisesRegex(errors.ConfigError, "single machine"):
      hooks.InMemoryEvaluatorHook(est, _input_fn)


class StopAtCheckpointStepHookTest(absltest.TestCase):

  def _write_checkpoint(self, model_dir, step):
    with tf.Graph().as_default():
      global_step = tf.compat.v1.train.get_or_create_global_step()
      with tf.compat.v1.Session() as session:
        session.run(global_step.initializer)
        session.run(global_step.assign(step))
        tf.compat.v1.train.Saver().save(
            session, os.path.join(model_dir, "model.ckpt"), global_step=step)

  def _run_worker(self, model_dir, last_step, runs):
    sleeps = []
    with tf.Graph().as_default():
      global_step = tf.compat.v1.train.get_or_create_global_step()
      train_op = global_step.assign_add(1)
      hook = hooks._StopAtCheckpointStepHook(  # pylint: disable=protected-access
          model_dir, last_step, wait_after_file_check_secs=7,
          sleep=sleeps.append)
      with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as session:
        done = 0
        while not session.should_stop() and done < runs:
          session.run(train_op)
          done += 1
    return done, sleeps

  def test_stops_once_checkpoint_reaches_last_step(self):
    model_dir = self.create_tempdir().full_path
    self._write_checkpoint(model_dir, 5)
    done, sleeps = self._run_worker(model_dir, last_step=5, runs=100)
    # The global step fetched with train_op may be read before or after its
    # increment, so the check starts after run 4 or run 5.
    self.assertIn(done, (4, 5))
    self.assertEqual(sleeps, [])

  def test_waits_while_checkpoint_is_behind(self):
    model_dir = self.create_tempdir().full_path
    self._write_checkpoint(model_dir, 2)
    done, sleeps = self._run_worker(model_dir, last_step=3, runs=4)
    self.assertEqual(done, 4)  # Never stops: the checkpoint stays at 2.
    self.assertIn(sleeps, ([7, 7], [7, 7, 7]))

  def test_chief_gets_stop_at_step_hook(self):
    from harness import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
    est = estimator_lib.Estimator(
        _model_fn, model_dir=self.create_tempdir().full_path)
    hook = hooks.make_stop_at_checkpoint_step_hook(est, 10)
    self.assertIsInstance(hook, hooks.StopAtStepHook)


if __name__ == "__main__":
  absltest.main()
