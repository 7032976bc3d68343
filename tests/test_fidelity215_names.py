"""tf.estimator 2.15 module-level names public code reaches (issue 28, 7).

Each name is read at its 2.15 module path through `harness.compat` and
checked for 2.15's behaviour: the training executor and its hooks, the
gc filters (and the exporters' collection of every timestamp folder),
`util.parse_input_fn_result`, `model_fn.LOSS_METRIC_KEY` /
`call_logit_fn`, `_load_global_step_from_checkpoint_dir`, the v2 parsing
spec names and `build_supervised_input_receiver_fn_from_input_fn`.
"""

import importlib
import json
import os
import sys
import time
from unittest import mock

from absl.testing import absltest

import harness
import harness.compat  # pylint: disable=unused-import
from harness._tf import tf
from harness.distribute import roles
from harness.export import exporter as exporter_lib
from tests import _support

_PKG = "tensorflow_estimator.python.estimator"


def _module(rel):
  return importlib.import_module(f"{_PKG}.{rel}")


def _input_fn():
  return {"x": [[1.], [2.]]}, [[2.], [4.]]


class TrainingExecutorTest(absltest.TestCase):

  def _estimator(self):
    return harness.Estimator(_support.scalar_weight_model_fn(),
                             model_dir=self.create_tempdir().full_path)

  def _specs(self, max_steps=3):
    return (harness.TrainSpec(_input_fn, max_steps=max_steps),
            harness.EvalSpec(_input_fn, steps=1, throttle_secs=0))

  def test_run_trains_and_evaluates_locally(self):
    training = _module("training")
    est = self._estimator()
    metrics, exports = training._TrainingExecutor(est, *self._specs()).run()
    self.assertEqual(3, metrics["global_step"])
    self.assertEqual([], exports)

  def test_subclass_override_and_train_hooks(self):
    training = _module("training")
    calls = []

    class Counting(tf.compat.v1.train.SessionRunHook):

      def after_run(self, run_context, run_values):
        calls.append("step")

    class Executor(training._TrainingExecutor):

      def run_local(self):
        calls.append("run_local")
        return super().run_local()

    Executor(self._estimator(), *self._specs(max_steps=2),
             train_hooks=[Counting()]).run()
    self.assertEqual(["run_local", "step", "step"], calls)

  def test_non_exporter_after_an_exporter_is_a_type_error(self):
    exporter = exporter_lib.LatestExporter(
        "a", lambda: None)  # Never called here.
    with self.assertRaisesRegex(TypeError, "must be an Exporter"):
      harness.EvalSpec(_input_fn, exporters=[exporter, object()])

  def test_local_and_master_need_an_eval_spec(self):
    training = _module("training")
    executor = training._TrainingExecutor(
        self._estimator(), self._specs()[0], None)
    for run in (executor.run_local, executor.run_master):
      with self.assertRaisesRegex(
          TypeError, "`eval_spec` must have type `tf.estimator.EvalSpec`"):
        run()

  def test_train_spec_hooks_are_read_only_by_training_roles(self):
    # 2.15 merged train_hooks into the spec's hooks when a role trained, so
    # building an executor for the evaluator never read them.
    training = _module("training")
    train_spec = mock.Mock(spec=harness.TrainSpec)
    training._TrainingExecutor(self._estimator(), train_spec,
                               self._specs()[1])

  def _chief_config(self):
    tf_config = {"cluster": {"chief": ["127.0.0.1:2222"],
                             "worker": ["127.0.0.1:2223"]},
                 "task": {"type": "chief", "index": 0}}
    with mock.patch.dict(os.environ, {"TF_CONFIG": json.dumps(tf_config)}):
      return harness.RunConfig()

  def test_chief_starts_its_server_then_trains_with_2_15_keywords(self):
    training = _module("training")
    est = mock.Mock(spec=harness.Estimator)
    est.config = self._chief_config()
    train_spec = harness.TrainSpec(_input_fn, max_steps=2)
    server_module = sys.modules[tf.distribute.Server.__module__]
    # A fresh registry: the fake server must not serve later tests.
    with mock.patch.object(server_module, "Server") as server, \
        mock.patch.object(roles, "_PREPARED", []):
      training._TrainingExecutor(est, train_spec, None).run_chief()
      # Once a process: Estimator.train in this task finds it prepared.
      self.assertIs(server.return_value,
                    roles.prepare_task(est.config).server)
    server.assert_called_once_with(
        est.config.cluster_spec, job_name="chief", task_index=0,
        config=mock.ANY, protocol=None, start=False)
    self.assertTrue(server.return_value.start.called)
    est.train.assert_called_once_with(
        input_fn=_input_fn, max_steps=2, hooks=[], saving_listeners=())

  def test_no_cluster_no_server(self):
    training = _module("training")
    est = mock.Mock(spec=harness.Estimator)
    est.config = harness.RunConfig()
    with self.assertRaisesRegex(RuntimeError, "^Could not start server; "):
      training._TrainingExecutor(
          est, harness.TrainSpec(_input_fn, max_steps=2), None).run_chief()
    est.train.assert_not_called()

  def test_custom_listener_is_called(self):
    training = _module("training")

    class Listener(training._ContinuousEvalListener):

      def __init__(self, stop_after):
        self.results = []
        self._stop_after = stop_after

      def after_eval(self, eval_result):
        self.results.append(eval_result)
        return len(self.results) < self._stop_after

    def run(listener, max_steps):
      est = harness.Estimator(
          _support.scalar_weight_model_fn(),
          model_dir=self.create_tempdir().full_path,
          config=harness.RunConfig(save_checkpoints_steps=1))
      training._TrainingExecutor(est, *self._specs(max_steps=max_steps),
                                 continuous_eval_listener=listener).run()
      return est

    listener = Listener(stop_after=99)
    run(listener, max_steps=3)
    self.assertEqual([training._EvalStatus.EVALUATED] * 3,
                     [r.status for r in listener.results])
    self.assertEqual([1, 2, 3],
                     [r.metrics["global_step"] for r in listener.results])
    # after_eval returning False ends training there.
    est = run(Listener(stop_after=1), max_steps=10)
    self.assertLess(est.get_variable_value("global_step"), 10)
    with self.assertRaisesRegex(TypeError, "must have type `_Continuous"):
      training._TrainingExecutor(self._estimator(), *self._specs(),
                                 continuous_eval_listener=object())

  def test_eval_result_is_checked_as_2_15(self):
    training = _module("training")
    status = training._EvalStatus
    with self.assertRaisesRegex(ValueError, "should never return empty"):
      training._EvalResult(status.EVALUATED, {}, "ckpt")
    with self.assertRaisesRegex(TypeError, "should return dict"):
      training._EvalResult(status.EVALUATED, 123, "ckpt")
    with self.assertRaisesRegex(ValueError, "should have `global_step`"):
      training._EvalResult(status.EVALUATED, {"loss": 1.}, "ckpt")
    self.assertIsNone(training._EvalResult(status.NO_NEW_CHECKPOINT).metrics)

  def test_train_hooks_must_be_hooks(self):
    training = _module("training")
    with self.assertRaisesRegex(
        TypeError, "^All hooks must be `SessionRunHook` instances, given: "):
      training._TrainingExecutor(self._estimator(), *self._specs(),
                                 train_hooks=[object()])

  def test_stop_at_secs_hook(self):
    hook = _module("training")._StopAtSecsHook(0)
    est = self._estimator()
    est.train(_input_fn, hooks=[hook], max_steps=100)
    self.assertEqual(1, est.get_variable_value("global_step"))

  def test_load_global_step_from_checkpoint_dir(self):
    load = _module("estimator")._load_global_step_from_checkpoint_dir
    est = self._estimator()
    self.assertEqual(0, load(est.model_dir))
    est.train(_input_fn, steps=2)
    self.assertEqual(2, load(est.model_dir))


class GcTest(absltest.TestCase):

  def test_filters_at_their_2_15_names(self):
    gc = _module("gc")
    paths = [gc.Path("/e", v) for v in (0, 1, 3, 5, 6, 7, 8, 33)]
    self.assertEqual([3, 6, 8, 33], [
        p.export_version
        for p in gc._one_of_every_n_export_versions(3)(paths)])
    self.assertEqual([8, 33], [
        p.export_version for p in gc._largest_export_versions(2)(paths)])
    keep = gc._union(gc._largest_export_versions(1),
                     gc._mod_export_version(3))
    self.assertEqual([0, 3, 6, 33],
                     [p.export_version for p in keep(paths)])
    self.assertEqual([1, 5, 7, 8], [
        p.export_version for p in gc._negation(keep)(paths)])

  def test_exporter_collects_folders_it_did_not_write(self):
    base = self.create_tempdir().full_path
    stamps = [str(int(time.time()) - 100 + i) for i in range(4)]
    for stamp in stamps:  # Empty folders: no saved_model.pb inside.
      tf.io.gfile.makedirs(os.path.join(base, stamp))
    tf.io.gfile.makedirs(os.path.join(base, "notes"))

    class _Estimator:  # export() only calls export_saved_model.
      def export_saved_model(self, export_dir_base, *args, **kwargs):
        del args, kwargs
        return os.path.join(export_dir_base, "written")

    exporter_lib.LatestExporter(
        "latest", lambda: None, exports_to_keep=2).export(
            _Estimator(), base, None, {}, False)
    self.assertEqual(sorted(stamps[2:] + ["notes"]),
                     sorted(tf.io.gfile.listdir(base)))


class CannedOptimizerInstanceTest(absltest.TestCase):
  """A Keras optimizer instance given to a canned estimator, as 2.15."""

  def test_users_instance_counts_steps_then_a_copy_trains_again(self):
    opt = tf.keras.optimizers.legacy.SGD(learning_rate=0.1)
    est = harness.LinearRegressor(
        [tf.feature_column.numeric_column("x")], optimizer=opt,
        model_dir=self.create_tempdir().full_path)
    est.train(_input_fn, steps=2)
    # The user's object ran: its iterations is the global step (2.15).
    self.assertEqual("global_step:0", opt.iterations.name)
    self.assertEqual(2, est.get_variable_value(opt.iterations.name))
    est.train(_input_fn, steps=1)  # 2.15 failed here; a copy trains.
    self.assertEqual(3, est.get_variable_value("global_step"))


class ModuleNamesTest(absltest.TestCase):

  def test_model_fn_names(self):
    model_fn = _module("model_fn")
    self.assertEqual("loss", model_fn.LOSS_METRIC_KEY)
    with tf.Graph().as_default():
      logits = model_fn.call_logit_fn(
          lambda features, mode: features["x"] * 2., {"x": tf.constant(1.)},
          "train", None, None)
      self.assertTrue(tf.is_tensor(logits))
      with self.assertRaisesRegex(ValueError, "logit_fn should return"):
        model_fn.call_logit_fn(lambda features: 1, {}, "train", None, None)

  def test_util_parse_input_fn_result(self):
    util = _module("util")
    with tf.Graph().as_default():
      dataset = tf.data.Dataset.from_tensors(({"x": [1.]}, [2.]))
      features, labels, hooks = util.parse_input_fn_result(dataset)
      self.assertIsInstance(hooks[0], util._DatasetInitializerHook)
      self.assertTrue(tf.is_tensor(features["x"]) and tf.is_tensor(labels))
      with self.assertRaisesRegex(ValueError, "len 2 tuple"):
        util.parse_input_fn_result((1, 2, 3))

  def test_parsing_utils_v2_names(self):
    parsing_utils = _module("canned.parsing_utils")
    column = tf.feature_column.numeric_column("x")
    spec = parsing_utils.classifier_parse_example_spec_v2([column], "y")
    self.assertEqual({"x", "y"}, set(spec))
    spec = parsing_utils.regressor_parse_example_spec_v2([column], "y")
    self.assertEqual(tf.float32, spec["y"].dtype)

  def test_build_supervised_input_receiver_fn_from_input_fn(self):
    export_lib = _module("export.export_lib")
    receiver_fn = export_lib.build_supervised_input_receiver_fn_from_input_fn(
        lambda scale: tf.data.Dataset.from_tensors(
            ({"x": tf.constant([[1.]]) * scale}, tf.constant([3]))), scale=2.)
    with tf.Graph().as_default():
      receiver = receiver_fn()
      self.assertEqual(tf.float32, receiver.features["x"].dtype)
      self.assertEqual(tf.int32, receiver.labels["label"].dtype
                       if isinstance(receiver.labels, dict)
                       else receiver.labels.dtype)
      self.assertEqual("Placeholder", receiver.features["x"].op.type)


if __name__ == "__main__":
  absltest.main()
