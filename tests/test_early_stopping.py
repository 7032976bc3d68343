"""Tests of harness.early_stopping with real Estimators and event files."""

import json
import os

from absl.testing import absltest
import numpy as np

from harness import early_stopping
from harness import errors
from harness import estimator as estimator_lib
from harness import run_config
from harness._tf import tf
from tests import _support


_model_fn = _support.scalar_weight_model_fn(learning_rate=0.01)


def _input_fn():
  x = np.array([[1.0], [2.0]], np.float32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x)).repeat().batch(2)


def _write_summaries(eval_dir, step_to_values):
  """Writes {step: [Summary.Value]} to a new event file in `eval_dir`."""
  # Two writers in one second would otherwise pick the same file name.
  suffix = f".{len(tf.io.gfile.glob(os.path.join(eval_dir, 'events*')))}"
  with tf.Graph().as_default():
    writer = tf.compat.v1.summary.FileWriter(eval_dir, filename_suffix=suffix)
    for step, values in step_to_values.items():
      writer.add_summary(tf.compat.v1.Summary(value=values), step)
    writer.close()


def _write_eval_events(eval_dir, step_to_metrics):
  _write_summaries(eval_dir, {
      step: [tf.compat.v1.Summary.Value(tag=k, simple_value=v)
             for k, v in metrics.items()]
      for step, metrics in step_to_metrics.items()})


def _cluster_config(task_type):
  tf_config = {"cluster": {"chief": ["127.0.0.1:1"],
                           "worker": ["127.0.0.1:2"]},
               "task": {"type": task_type, "index": 0}}
  return run_config.RunConfig(environ={"TF_CONFIG": json.dumps(tf_config)})


class ReadEvalMetricsTest(absltest.TestCase):

  def test_reads_scalars_by_step(self):
    eval_dir = self.create_tempdir().full_path
    _write_eval_events(eval_dir, {20: {"loss": 0.5}, 10: {"loss": 1.0}})
    _write_summaries(eval_dir, {20: [
        # A TF2-style scalar (a rank-0 tensor) and a string to skip.
        tf.compat.v1.Summary.Value(
            tag="accuracy", tensor=tf.compat.v1.make_tensor_proto(
                np.float32(0.75))),
        tf.compat.v1.Summary.Value(
            tag="checkpoint_path", tensor=tf.compat.v1.make_tensor_proto(
                b"/tmp/model.ckpt-20")),
    ]})
    metrics = early_stopping.read_eval_metrics(eval_dir)
    self.assertEqual(list(metrics), [10, 20])
    self.assertEqual(metrics[10], {"loss": 1.0})
    self.assertEqual(metrics[20], {"loss": 0.5, "accuracy": 0.75})

  def test_missing_dir_is_empty(self):
    self.assertEqual(
        early_stopping.read_eval_metrics(
            os.path.join(self.create_tempdir().full_path, "nope")), {})


def _marker(marker):
  """(reason, global_step) of a training_stopped marker."""
  return marker["reason"], marker["global_step"]


class MarkerTest(absltest.TestCase):

  def test_round_trip(self):
    model_dir = self.create_tempdir().full_path
    self.assertIsNone(early_stopping.read_training_stopped_marker(model_dir))
    path = early_stopping.write_training_stopped_marker(
        model_dir, "early_stopping", np.int64(42))
    self.assertEqual(path, os.path.join(model_dir, "training_stopped"))
    with open(path) as f:
      self.assertEqual(json.load(f)["global_step"], 42)
    marker = early_stopping.read_training_stopped_marker(model_dir)
    self.assertEqual((marker["reason"], marker["global_step"]),
                     ("early_stopping", 42))

  def test_unreadable_marker_still_means_stopped(self):
    model_dir = self.create_tempdir()
    model_dir.create_file("training_stopped", content="{truncated")
    self.assertEqual(
        early_stopping.read_training_stopped_marker(model_dir.full_path),
        {"reason": "unreadable marker", "global_step": None})


class StopHooksTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    self.estimator = estimator_lib.Estimator(_model_fn,
                                             model_dir=self.model_dir)

  def _train(self, hook, max_steps=20):
    self.estimator.train(_input_fn, hooks=[hook], max_steps=max_steps)
    return self.estimator.get_variable_value("global_step")

  def _eval(self, step_to_metrics):
    _write_eval_events(self.estimator.eval_dir(), step_to_metrics)

  def test_stop_if_higher_stops_and_writes_marker(self):
    self._eval({0: {"accuracy": 0.5}, 10: {"accuracy": 0.95}})
    hook = early_stopping.stop_if_higher_hook(
        self.estimator, "accuracy", 0.9, run_every_secs=None,
        run_every_steps=3)
    step = self._train(hook)
    self.assertEqual(step, 1)  # The first check is after the first step.
    self.assertEqual(
        _marker(early_stopping.read_training_stopped_marker(self.model_dir)),
        ("early_stopping", 1))

  def test_stop_if_lower_not_reached_trains_to_the_end(self):
    self._eval({0: {"loss": 5.0}, 10: {"loss": 2.0}})
    hook = early_stopping.stop_if_lower_hook(
        self.estimator, "loss", 1.0, run_every_secs=None, run_every_steps=1)
    self.assertEqual(self._train(hook), 20)
    self.assertIsNone(
        early_stopping.read_training_stopped_marker(self.model_dir))

  def test_min_steps_ignores_early_evaluations(self):
    self._eval({5: {"loss": 0.1}, 10: {"loss": 2.0}})
    hook = early_stopping.stop_if_lower_hook(
        self.estimator, "loss", 1.0, min_steps=6, run_every_secs=None,
        run_every_steps=1)
    self.assertEqual(self._train(hook), 20)

  def test_stop_if_no_decrease(self):
    self._eval({0: {"loss": 1.0}, 10: {"loss": 0.5}, 20: {"loss": 0.6},
                30: {"loss": 0.7}})
    patient = early_stopping.stop_if_no_decrease_hook(
        self.estimator, "loss", 21, run_every_secs=None, run_every_steps=1)
    self.assertEqual(self._train(patient, max_steps=5), 5)
    impatient = early_stopping.stop_if_no_decrease_hook(
        self.estimator, "loss", 20, run_every_secs=None, run_every_steps=1)
    self.assertEqual(self._train(impatient, max_steps=10), 6)

  def test_stop_if_no_increase(self):
    self._eval({0: {"auc": 0.6}, 10: {"auc": 0.7}, 20: {"auc": 0.65}})
    hook = early_stopping.stop_if_no_increase_hook(
        self.estimator, "auc", 10, run_every_secs=None, run_every_steps=1)
    self.assertEqual(self._train(hook), 1)

  def test_unknown_metric_names_the_available_ones(self):
    self._eval({0: {"loss": 1.0}})
    hook = early_stopping.stop_if_higher_hook(
        self.estimator, "acc", 0.9, run_every_secs=None, run_every_steps=1)
    with self.assertRaisesRegex(errors.ConfigError, r"'acc'.*\['loss'\]"):
      self._train(hook)


class MakeEarlyStoppingHookTest(absltest.TestCase):

  def test_argument_checks(self):
    est = estimator_lib.Estimator(
        _model_fn, model_dir=self.create_tempdir().full_path)
    with self.assertRaisesRegex(errors.ConfigError, "Only one of"):
      early_stopping.make_early_stopping_hook(
          est, lambda: False, run_every_secs=10, run_every_steps=10)
    with self.assertRaisesRegex(TypeError, "must be callable"):
      early_stopping.make_early_stopping_hook(est, True)
    with self.assertRaisesRegex(TypeError, "tf.estimator.Estimator"):
      early_stopping.make_early_stopping_hook(object(), lambda: False)

  def test_mirrored_strategy_takes_the_local_path(self):
    # 2.15 took the multi-worker path for any strategy and rejected the
    # default run_every_secs; one process needs no signalling.
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    est = estimator_lib.Estimator(
        _model_fn, model_dir=self.create_tempdir().full_path,
        config=run_config.RunConfig(train_distribute=strategy))
    stop_at = []

    def should_stop():
      stop_at.append(1)
      return len(stop_at) >= 2

    hook = early_stopping.make_early_stopping_hook(
        est, should_stop, run_every_secs=None, run_every_steps=2)
    est.train(_input_fn, hooks=[hook], max_steps=20)
    self.assertLen(stop_at, 2)
    self.assertBetween(est.get_variable_value("global_step"), 2, 5)
    self.assertNotIn("signal_early_stopping/STOP", est.get_variable_names())
    early_stopping.make_early_stopping_hook(est, should_stop)  # secs: fine.

  def test_collective_strategy_votes_through_an_all_reduce(self):
    strategy = (
        tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy())
    est = estimator_lib.Estimator(
        _model_fn, model_dir=self.create_tempdir().full_path,
        config=run_config.RunConfig(train_distribute=strategy))
    with self.assertRaisesRegex(errors.ConfigError, "run_every_secs should"):
      early_stopping.make_early_stopping_hook(est, lambda: True)
    votes = []
    hook = early_stopping.make_early_stopping_hook(
        est, lambda: votes.append(1) or len(votes) >= 2, run_every_secs=None,
        run_every_steps=2)
    est.train(_input_fn, hooks=[hook], max_steps=20)
    self.assertLen(votes, 2)
    step = est.get_variable_value("global_step")
    self.assertBetween(step, 3, 6)  # Votes at ~1 and ~3; all stop a run later.
    self.assertIn("signal_early_stopping/STOP", est.get_variable_names())
    self.assertEqual(
        _marker(early_stopping.read_training_stopped_marker(est.model_dir)),
        ("early_stopping", step))

  def test_chief_signals_worker_through_a_shared_variable(self):
    chief_est = estimator_lib.Estimator(
        _model_fn, model_dir=self.create_tempdir().full_path,
        config=_cluster_config("chief"))
    worker_est = estimator_lib.Estimator(
        _model_fn, model_dir=chief_est.model_dir,
        config=_cluster_config("worker"))
    server = tf.distribute.Server.create_local_server()

    def run(hook, is_chief):
      runs = 0
      with tf.Graph().as_default():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        train_op = global_step.assign_add(1)
        with tf.compat.v1.train.MonitoredTrainingSession(
            master=server.target, is_chief=is_chief, hooks=[hook],
            save_checkpoint_secs=None, save_summaries_steps=None,
            log_step_count_steps=None) as session:
          while not session.should_stop() and runs < 50:
            session.run(train_op)
            runs += 1
      return runs

    chief_hook = early_stopping.make_early_stopping_hook(
        chief_est, lambda: True, run_every_secs=None, run_every_steps=1)
    self.assertEqual(run(chief_hook, is_chief=True), 1)
    worker_hook = early_stopping.make_early_stopping_hook(
        worker_est, lambda: self.fail("a worker must not evaluate"))
    self.assertEqual(run(worker_hook, is_chief=False), 1)
    self.assertEqual(
        _marker(early_stopping.read_training_stopped_marker(
            chief_est.model_dir)),
        ("early_stopping", 1))


if __name__ == "__main__":
  absltest.main()
