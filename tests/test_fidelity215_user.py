"""The 2.15 differences a new user met (issue 47, "2.15 differences"),
each asserted against what tf.estimator 2.15 does, its source cited.

Cited as `2.15 FILE:LINE`: tensorflow/estimator at tag v2.15.0 under
tensorflow_estimator/python/estimator/, and TensorFlow 2.15's
tensorflow/python/training/monitored_session.py (unchanged in 2.21).
"""

import os

from absl.testing import absltest
import numpy as np

import harness
from harness import spec
from harness._tf import tf


def _input_fn():
  x = np.random.RandomState(0).rand(64, 2).astype(np.float32)
  y = (x.sum(axis=1) > 1).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8)


def _eval_input_fn():
  return _input_fn().take(4)


class BestExporterFirstEvaluationTest(absltest.TestCase):
  """Item 1: a run that evaluates once gets its export/best."""

  def test_one_evaluation_exports(self):
    # 2.15 exporter.py:279-305 (BestExporter.export): `not
    # self._has_exported` exports on the first call, whatever the result.
    model_dir = self.create_tempdir().full_path
    columns = [tf.feature_column.numeric_column("x", shape=[2])]
    est = harness.DNNClassifier(
        hidden_units=[4], feature_columns=columns, model_dir=model_dir,
        config=harness.RunConfig(tf_random_seed=1))
    exporter = harness.BestExporter(
        name="best",
        serving_input_receiver_fn=(
            harness.export.build_parsing_serving_input_receiver_fn(
                tf.feature_column.make_parse_example_spec(columns))))
    _, exports = harness.train_and_evaluate(
        est, harness.TrainSpec(_input_fn, max_steps=100),
        harness.EvalSpec(_eval_input_fn, steps=None, exporters=[exporter]))
    self.assertLen(exports, 1)
    self.assertIsNotNone(exports[0], "2.15 exports on the first evaluation")
    best = os.path.join(model_dir, "export", "best")
    self.assertLen(tf.io.gfile.listdir(best), 1)
    self.assertEqual(os.path.basename(exports[0].decode()),
                     tf.io.gfile.listdir(best)[0].rstrip("/"))


class _Recorder(tf.compat.v1.train.SessionRunHook):

  def __init__(self, name, events):
    self._name, self._events = name, events

  def begin(self):
    self._events.append(("begin", self._name))

  def after_run(self, run_context, run_values):
    self._events.append(("after_run", self._name))

  def end(self, session):
    self._events.append(("end", self._name))


class _SaveRecorder(tf.compat.v1.train.CheckpointSaverListener):
  """Marks the chief's CheckpointSaverHook's place (its listener's calls)."""

  def __init__(self, events):
    self._events = events

  def begin(self):
    self._events.append(("begin", "saver"))

  def after_save(self, session, global_step_value):
    self._events.append(("save", int(global_step_value)))


class ChiefHookOrderTest(absltest.TestCase):
  """Item 2: training_chief_hooks run in 2.15's place."""

  def test_chief_hooks_before_caller_and_training_hooks(self):
    # 2.15 estimator.py:1446-1520 (_train_with_estimator_spec) gives
    # MonitoredTrainingSession chief_only_hooks=(its CheckpointSaverHook,
    # *training_chief_hooks) and hooks=(input hooks, the caller's hooks,
    # NanTensorHook, LoggingTensorHook, *training_hooks); TF 2.15
    # monitored_session.py:566-605 runs chief_only_hooks first, then
    # StepCounterHook and SummarySaverHook, then hooks.
    events = []

    def model_fn(features, labels, mode):
      del labels
      w = tf.compat.v1.get_variable("w", [2, 1])
      loss = tf.reduce_mean(tf.matmul(features["x"], w))
      train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
      return spec.EstimatorSpec(
          mode, loss=loss, train_op=train_op,
          training_hooks=[_Recorder("training", events)],
          training_chief_hooks=[_Recorder("chief", events)])

    est = harness.Estimator(model_fn, model_dir=self.create_tempdir(
        ).full_path, config=harness.RunConfig(save_checkpoints_steps=2))
    est.train(_input_fn, steps=2, hooks=[_Recorder("caller", events)],
              saving_listeners=[_SaveRecorder(events)])
    self.assertEqual(
        [e for e in events if e[0] == "begin"],
        [("begin", "saver"), ("begin", "chief"), ("begin", "caller"),
         ("begin", "training")])
    self.assertEqual([e for e in events if e[0] == "after_run"][:3],
                     [("after_run", "chief"), ("after_run", "caller"),
                      ("after_run", "training")])
    # The saver's end (the final save) comes before the chief hooks' end.
    ends = [e for e in events if e[0] in ("end", "save")]
    self.assertEqual(ends[-3:], [("end", "chief"), ("end", "caller"),
                                 ("end", "training")])
    self.assertEqual(ends[-4], ("save", 2))


if __name__ == "__main__":
  absltest.main()
