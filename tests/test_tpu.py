"""TPUEstimator on CPU (use_tpu=False): harness.tpu, as tf.estimator 2.15.

In-process tests of params["batch_size"], TPUEstimatorSpec conversion,
iterations_per_loop as steps per session.run, host_call, scaffold_fn,
use_tpu=True, checkpoint compatibility with a 2.15 model_dir, and the
aliases. The BERT-style program under `python -m harness.run` is in
tests/test_tpu_program.py.
"""

import glob
import json
import os
import shutil
from unittest import mock

import numpy as np
from absl.testing import absltest

from harness import errors
from harness import tpu
from harness._tf import tf
import harness
import harness.compat  # pylint: disable=unused-import
from tests import _support
from tests import conftest

FIXTURE = conftest.FIXTURES_DIR / "estimator215_dnn"
EXPECTED = conftest.FIXTURES_DIR / "estimator215_dnn.expected.json"


def _data(rows=256):
  x = np.random.RandomState(0).randn(rows, 10).astype(np.float32)
  w = (np.arange(1, 11, dtype=np.float32) / 10).reshape(10, 1)
  return x, np.tanh(x @ w)


def input_fn(params):
  x, y = _data()
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(
      params["batch_size"])


def eval_input_fn(params):
  x, y = _data(64)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(
      params["batch_size"])


def model_fn(features, labels, mode, params):
  """The 2.15 fixture's model (tests/test_fixture_estimator215), TPU style."""
  h = tf.compat.v1.layers.dense(features["x"], params["hidden"],
                                activation=tf.nn.relu)
  pred = tf.compat.v1.layers.dense(h, 1)
  if mode == harness.ModeKeys.PREDICT:
    return tpu.TPUEstimatorSpec(mode, predictions={"y": pred})
  loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
  train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())

  def metric_fn(labels, pred):
    return {"mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred)}

  return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                              eval_metrics=(metric_fn, [labels, pred]))


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 10], name="x")
  return harness.export.ServingInputReceiver({"x": x}, {"x": x})


class RunCounter(tf.compat.v1.train.SessionRunHook):
  """Counts session.run calls and the global step after each."""

  def begin(self):
    self.steps = []
    self._step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._step)

  def after_run(self, run_context, run_values):
    self.steps.append(None)


def _config(model_dir, iterations_per_loop=50, **kwargs):
  return tpu.RunConfig(
      model_dir=model_dir, tf_random_seed=1,
      tpu_config=tpu.TPUConfig(iterations_per_loop=iterations_per_loop),
      **kwargs)


def _estimator(model_dir, iterations_per_loop=50, fn=model_fn, params=None,
               **kwargs):
  config_args = {k: kwargs.pop(k) for k in list(kwargs)
                 if k in ("save_checkpoints_steps", "steps_per_loop")}
  for name, size in (("train_batch_size", 32), ("eval_batch_size", 16),
                     ("predict_batch_size", 8)):
    kwargs.setdefault(name, size)
  return tpu.TPUEstimator(
      model_fn=fn, config=_config(model_dir, iterations_per_loop,
                                  **config_args),
      params={"hidden": 16} if params is None else params, use_tpu=False,
      **kwargs)


class TPUJobNameTest(absltest.TestCase):
  """TPUConfig's tpu_job_name from TF_CONFIG["service"] (2.15's), parsed
  by harness.cluster.tf_config."""

  def test_from_tf_config_service(self):
    config = {"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"},
              "service": {"tpu_worker_job_name": "tpu_worker"}}
    with mock.patch.dict(os.environ, {"TF_CONFIG": json.dumps(config)}):
      self.assertEqual(tpu.TPUConfig().tpu_job_name, "tpu_worker")
      self.assertEqual(tpu.TPUConfig(tpu_job_name="mine").tpu_job_name,
                       "mine")
    for text in ("", "{not json", json.dumps({"service": {}})):
      with mock.patch.dict(os.environ, {"TF_CONFIG": text}):
        self.assertIsNone(tpu.TPUConfig().tpu_job_name, text)


class BatchSizeAndParamsTest(absltest.TestCase):

  def test_input_fn_and_model_fn_get_batch_size_by_mode(self):
    seen = []

    def recording_input_fn(params, mode):
      seen.append(("input_fn", mode, params.get("batch_size")))
      return input_fn(params) if mode == "train" else eval_input_fn(params)

    def recording_model_fn(features, labels, mode, params):
      seen.append(("model_fn", mode, params.get("batch_size"),
                   params["use_tpu"], params["hidden"]))
      return model_fn(features, labels, mode, params)

    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir, fn=recording_model_fn)
    est.train(recording_input_fn, max_steps=3)
    est.evaluate(recording_input_fn, steps=1)
    preds = list(est.predict(lambda params: eval_input_fn(params)))
    self.assertLen(preds, 64)  # Every example, batched by 8.
    seen.append("export")
    est.export_saved_model(
        os.path.join(model_dir, "export"),
        serving_input_receiver_fn)
    self.assertIn(("input_fn", "train", 32), seen)
    self.assertIn(("model_fn", "train", 32, False, 16), seen)
    self.assertIn(("input_fn", "eval", 16), seen)
    self.assertIn(("model_fn", "eval", 16, False, 16), seen)
    self.assertIn(("model_fn", "infer", 8, False, 16), seen)
    # Export: 2.15 gave model_fn no batch size.
    self.assertEqual(seen[seen.index("export") + 1:],
                     [("model_fn", "infer", None, False, 16)])

  def test_reserved_params_and_missing_params_arguments(self):
    model_dir = self.create_tempdir().full_path
    with self.assertRaisesRegex(
        errors.ConfigError,
        r"\['batch_size', 'context'\] are reserved keys but existed in "
        r"params \{'batch_size': 4\}"):
      _estimator(model_dir, params={"batch_size": 4})
    with self.assertRaisesRegex(errors.ModelFnError,
                                r"does not include params argument"):
      _estimator(model_dir, fn=lambda features, labels, mode: None,
                 params={})
    est = _estimator(model_dir)
    with self.assertRaisesRegex(
        errors.InputFnError,
        r'does not include params argument, required by TPUEstimator to '
        r'pass batch size as params\["batch_size"\]'):
      est.train(lambda: input_fn({"batch_size": 4}), max_steps=1)
    with self.assertRaisesRegex(errors.ConfigError,
                                "must be provided with type"):
      tpu.TPUEstimator(model_fn, config=harness.RunConfig(), use_tpu=False)

  def test_batch_sizes_are_not_checked_off_tpu(self):
    # 2.15 checked them only with use_tpu=True; AdaNet passes 0 off TPU.
    seen = []

    def recording_input_fn(params):
      seen.append(params["batch_size"])
      return input_fn({"batch_size": 4})

    est = _estimator(self.create_tempdir().full_path, train_batch_size=0)
    est.train(recording_input_fn, max_steps=1)
    self.assertEqual(seen, [0])
    self.assertEqual(est.get_variable_value("global_step"), 1)

  def test_use_tpu_true_raises_with_the_fix(self):
    with self.assertRaises(errors.NotSupportedError) as caught:
      tpu.TPUEstimator(model_fn, config=_config(None), use_tpu=True,
                       train_batch_size=32)
    message = str(caught.exception)
    self.assertIn("use_tpu=False", message)
    self.assertIn("TPUStrategy", message)
    # The default of use_tpu is True, as in 2.15.
    with self.assertRaises(errors.NotSupportedError):
      tpu.TPUEstimator(model_fn, config=_config(None), train_batch_size=32)


class TPUEstimatorSpecTest(absltest.TestCase):

  def test_bad_eval_metrics_and_host_call_name_the_rule(self):
    def metric_fn(labels, pred):
      return {}

    tensors = [tf.constant([1.0]), tf.constant([2.0])]
    cases = (
        ({"eval_metrics": metric_fn}, "eval_metrics should be tuple or list"),
        ({"eval_metrics": (metric_fn,)}, "should have two elements"),
        ({"eval_metrics": ("f", tensors)}, r"eval_metrics\[0\] should be a "
         "function"),
        ({"host_call": (metric_fn, tf.constant(1))},
         r"host_call\[1\] should be tuple or list, or dict"),
        ({"eval_metrics": (metric_fn, tensors[:1])},
         "length of tensors 1 does not match"),
        ({"scaffold_fn": 3}, "scaffold_fn must be callable"),
    )
    for kwargs, message in cases:
      with self.assertRaisesRegex(errors.ModelFnError, message):
        tpu.TPUEstimatorSpec("eval", loss=tf.constant(1.0), **kwargs)
    with self.assertRaisesRegex(TypeError, "SessionRunHook"):
      tpu.TPUEstimatorSpec("train", training_hooks=[object()])

  def test_as_estimator_spec_and_plain_estimator_spec_model_fn(self):
    with tf.Graph().as_default():
      labels, pred = tf.constant([[1.0]]), tf.constant([[0.5]])
      spec = tpu.TPUEstimatorSpec(
          "eval", loss=tf.constant(0.25),
          eval_metrics=(lambda labels, pred: {
              "mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred)},
                        {"labels": labels, "pred": pred}),
          scaffold_fn=lambda: tf.compat.v1.train.Scaffold(
              init_fn=lambda scaffold, session: None))
      converted = spec.as_estimator_spec()
      self.assertIsInstance(converted, harness.EstimatorSpec)
      self.assertEqual(sorted(converted.eval_metric_ops), ["mae"])
      self.assertIsNotNone(converted.scaffold.init_fn)

    def plain_model_fn(features, labels, mode, params):
      return model_fn(features, labels, mode, params).as_estimator_spec()

    est = _estimator(self.create_tempdir().full_path, fn=plain_model_fn)
    est.train(input_fn, max_steps=2)
    self.assertEqual(est.get_variable_value("global_step"), 2)


class TPUConfigTest(absltest.TestCase):

  def test_defaults_and_checks_as_215(self):
    config = tpu.TPUConfig()
    self.assertEqual(config.iterations_per_loop, 2)
    self.assertEqual(config.per_host_input_for_training,
                     tpu.InputPipelineConfig.PER_HOST_V1)
    self.assertEqual(
        tpu.TPUConfig(per_host_input_for_training=False)
        .per_host_input_for_training, tpu.InputPipelineConfig.PER_SHARD_V1)
    for bad in (0, -3, "10x", 2.5, True):
      with self.assertRaisesRegex(errors.ConfigError, "iterations_per_loop"):
        tpu.TPUConfig(iterations_per_loop=bad)
    with self.assertRaisesRegex(errors.ConfigError, "num_cores_per_replica"):
      tpu.TPUConfig(num_cores_per_replica=3)
    run_config = tpu.RunConfig(tpu_config=tpu.TPUConfig(
        iterations_per_loop=7), master="grpc://x:1")
    self.assertEqual(run_config.master, "grpc://x:1")
    self.assertEqual(run_config.evaluation_master, "grpc://x:1")
    replaced = run_config.replace(tpu_config=tpu.TPUConfig(3),
                                  keep_checkpoint_max=2)
    self.assertEqual(replaced.tpu_config.iterations_per_loop, 3)
    self.assertEqual(replaced.keep_checkpoint_max, 2)
    self.assertEqual(run_config.tpu_config.iterations_per_loop, 7)
    with self.assertRaisesRegex(errors.ConfigError, "master and cluster"):
      tpu.RunConfig(master="a", cluster=object())
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec({"worker": ["127.0.0.1:2222"]}),
        master="grpc://127.0.0.1:2222")
    with_cluster = tpu.RunConfig(cluster=resolver)
    self.assertEqual(with_cluster.master, "grpc://127.0.0.1:2222")
    self.assertEqual(with_cluster.evaluation_master, "grpc://127.0.0.1:2222")
    self.assertEqual(with_cluster.cluster_spec.as_dict(),
                     {"worker": ["127.0.0.1:2222"]})
    self.assertEqual(
        with_cluster.session_config.cluster_def.job[0].name, "worker")
    self.assertIs(with_cluster.replace(save_summary_steps=5).cluster,
                  resolver)

  def test_iterations_per_loop_becomes_steps_per_loop(self):
    est = _estimator(None, iterations_per_loop=50)
    self.assertEqual(est.config.steps_per_loop, 50)
    est = _estimator(None, iterations_per_loop="30s")
    self.assertEqual(est.config.steps_per_loop, "auto")
    # An explicit steps_per_loop wins.
    est = _estimator(None, iterations_per_loop=50, steps_per_loop=1)
    self.assertEqual(est.config.steps_per_loop, 1)


class TrainingLoopTest(absltest.TestCase):

  def test_fifty_steps_per_session_run_with_exact_checkpoints(self):
    model_dir = self.create_tempdir().full_path
    counter = RunCounter()
    est = _estimator(model_dir, save_checkpoints_steps=60)
    est.train(input_fn, max_steps=150, hooks=[counter])
    # Loops end at the checkpoint steps 60, 120 and at max_steps: 50, 60
    # (10 steps), 110, 120 (10), 150 (30): five runs for 150 steps.
    self.assertLen(counter.steps, 5)
    self.assertEqual(_support.checkpoint_steps(model_dir)[-3:], [60, 120, 150])
    self.assertEqual(est.get_variable_value("global_step"), 150)
    # One step per run with iterations_per_loop=1.
    counter = RunCounter()
    est = _estimator(model_dir, iterations_per_loop=1)
    est.train(input_fn, steps=7, hooks=[counter])
    self.assertLen(counter.steps, 7)

  def test_evaluate_predict_export_after_looped_training(self):
    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir)
    est.train(input_fn, max_steps=100)
    metrics = est.evaluate(eval_input_fn)
    self.assertEqual(metrics["global_step"], 100)
    self.assertLess(metrics["mae"], 0.5)
    preds = [p["y"][0] for p in est.predict(eval_input_fn)]
    self.assertLen(preds, 64)
    export_dir = est.export_saved_model(
        os.path.join(model_dir, "export"),
        serving_input_receiver_fn)
    loaded = tf.saved_model.load(export_dir.decode())
    x, _ = _data(64)
    served = loaded.signatures["serving_default"](x=tf.constant(x[:5]))
    np.testing.assert_allclose(served["y"].numpy()[:, 0], preds[:5],
                               rtol=1e-5)

  def test_host_call_runs_every_step_with_one_step_per_run(self):
    model_dir = self.create_tempdir().full_path
    host_dir = os.path.join(model_dir, "host")

    def host_model_fn(features, labels, mode, params):
      spec = model_fn(features, labels, mode, params)
      step = tf.reshape(tf.compat.v1.train.get_global_step(), [1])

      def host_call_fn(gs, loss):
        writer = tf.compat.v2.summary.create_file_writer(host_dir)
        with writer.as_default():
          return [tf.compat.v2.summary.scalar("host_loss", loss[0],
                                              step=gs[0])]

      return spec._replace(host_call=(host_call_fn, [
          step, tf.reshape(spec.loss, [1])]))

    est = _estimator(model_dir, fn=host_model_fn)
    counter = RunCounter()
    with self.assertLogs(level="WARNING") as logs:
      est.train(input_fn, max_steps=9, hooks=[counter])
    self.assertTrue(any("steps_per_loop=50 -> 1" in line and "HostCallHook"
                        in line for line in logs.output), logs.output)
    self.assertLen(counter.steps, 9)
    steps = []
    for path in glob.glob(os.path.join(host_dir, "events*")):
      for event in tf.compat.v1.train.summary_iterator(path):
        if any(v.tag == "host_loss" for v in event.summary.value):
          steps.append(event.step)
    self.assertLen(steps, 9)
    # In evaluation too: once per eval batch (64 examples / 16).
    est.evaluate(eval_input_fn)
    eval_steps = 0
    for path in glob.glob(os.path.join(host_dir, "events*")):
      for event in tf.compat.v1.train.summary_iterator(path):
        eval_steps += any(v.tag == "host_loss" for v in event.summary.value)
    self.assertEqual(eval_steps, 9 + 4)

  def test_init_from_checkpoint_in_scaffold_fn_keeps_the_loop(self):
    source = self.create_tempdir().full_path
    _estimator(source).train(input_fn, max_steps=50)
    source_ckpt = tf.train.latest_checkpoint(source)

    def warm_model_fn_builder(in_scaffold):

      def warm_model_fn(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        assignment = {"dense/": "dense/", "dense_1/": "dense_1/"}
        if not in_scaffold:  # BERT's use_tpu=False branch.
          tf.compat.v1.train.init_from_checkpoint(source_ckpt, assignment)
          return spec

        def scaffold_fn():
          tf.compat.v1.train.init_from_checkpoint(source_ckpt, assignment)
          return tf.compat.v1.train.Scaffold()

        return spec._replace(scaffold_fn=scaffold_fn)

      return warm_model_fn

    for in_scaffold, runs in ((True, 1), (False, 3)):
      model_dir = self.create_tempdir().full_path
      counter = RunCounter()
      est = _estimator(model_dir, fn=warm_model_fn_builder(in_scaffold))
      # 3 steps at learning rate 0.01 move weights little; Adam's first
      # step moves each by ~lr, so compare with a tolerance of 3 * lr.
      est.train(input_fn, steps=3, hooks=[counter])
      self.assertLen(counter.steps, runs)
      for name in ("dense/kernel", "dense_1/bias"):
        np.testing.assert_allclose(
            est.get_variable_value(name),
            tf.train.load_variable(source_ckpt, name), atol=0.031,
            err_msg=f"{name}, in_scaffold={in_scaffold}")


class TrainAndEvaluateTest(absltest.TestCase):

  def test_train_and_evaluate_with_eval_metrics_dict(self):

    def dict_model_fn(features, labels, mode, params):
      spec = model_fn(features, labels, mode, params)
      if mode != harness.ModeKeys.EVAL:
        return spec
      return spec._replace(eval_metrics=(
          lambda labels, predictions: {
              "mse": tf.compat.v1.metrics.mean_squared_error(
                  labels, predictions)},
          {"labels": labels, "predictions": spec.eval_metrics[1][1]}))

    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir, fn=dict_model_fn)
    metrics, _ = harness.train_and_evaluate(
        est, harness.TrainSpec(input_fn, max_steps=60),
        harness.EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
    self.assertEqual(metrics["global_step"], 60)
    self.assertIn("mse", metrics)
    self.assertAlmostEqual(metrics["mse"], metrics["loss"], places=4)


  def test_mirrored_strategy_with_iterations_per_loop(self):
    from harness.distribute import strategies  # pylint: disable=g-import-not-at-top
    model_dir = self.create_tempdir().full_path
    config = _config(model_dir, 50, train_distribute=strategies.make_strategy(
        "mirrored", num_devices_per_worker=2))
    est = tpu.TPUEstimator(model_fn, config=config, params={"hidden": 16},
                           use_tpu=False, train_batch_size=32,
                           eval_batch_size=16)
    counter = RunCounter()
    est.train(input_fn, max_steps=60, hooks=[counter])
    self.assertLen(counter.steps, 2)  # 50, then 10.
    self.assertEqual(est.get_variable_value("global_step"), 60)
    self.assertEqual(est.evaluate(eval_input_fn)["global_step"], 60)

  def test_mirrored_falls_back_to_one_step_for_init_in_model_fn(self):
    from harness.distribute import strategies  # pylint: disable=g-import-not-at-top
    source = self.create_tempdir().full_path
    _estimator(source, iterations_per_loop=1).train(input_fn, max_steps=20)
    source_ckpt = tf.train.latest_checkpoint(source)

    def warm_model_fn(features, labels, mode, params):
      spec = model_fn(features, labels, mode, params)
      tf.compat.v1.train.init_from_checkpoint(
          source_ckpt, {"dense/": "dense/", "dense_1/": "dense_1/"})
      return spec

    model_dir = self.create_tempdir().full_path
    config = _config(model_dir, 50, train_distribute=strategies.make_strategy(
        "mirrored", num_devices_per_worker=2))
    est = tpu.TPUEstimator(warm_model_fn, config=config,
                           params={"hidden": 16}, use_tpu=False,
                           train_batch_size=32)
    counter = RunCounter()
    with self.assertLogs(level="WARNING") as logs:
      est.train(input_fn, max_steps=3, hooks=[counter])
    self.assertTrue(any("InitFromCheckpointInModelFn" in line
                        for line in logs.output), logs.output)
    self.assertLen(counter.steps, 3)
    np.testing.assert_allclose(
        est.get_variable_value("dense_1/bias"),
        tf.train.load_variable(source_ckpt, "dense_1/bias"), atol=0.031)


@absltest.skipUnless(FIXTURE.is_dir(), f"fixture {FIXTURE} is absent (the "
                     "repository ships it: restore tests/data)")
class CheckpointCompatibilityTest(absltest.TestCase):
  """A model_dir of tf.estimator 2.15 restores in TPUEstimator, and back.

  2.15's TPUEstimator with use_tpu=False saved what its Estimator saved: the
  model_fn's variables and `global_step` (its `iterations_per_loop`
  variable exists only on a TPU, and is a local variable). So the 2.15
  fixture model_dir (same model_fn) is that checkpoint.
  """

  def setUp(self):
    super().setUp()
    self.expected = json.loads(EXPECTED.read_text())

  def test_215_model_dir_restores_evaluates_and_resumes(self):
    model_dir = self.create_tempdir().full_path
    shutil.copytree(FIXTURE, model_dir, dirs_exist_ok=True)
    est = _estimator(model_dir, iterations_per_loop=5,
                     save_checkpoints_steps=40, train_batch_size=32,
                     eval_batch_size=32)
    self.assertEqual(set(est.get_variable_names()),
                     set(self.expected["variables"]))

    def fixture_input_fn(params):
      x, y = _data(512)
      return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat(
      ).batch(params["batch_size"])

    metrics = est.evaluate(fixture_input_fn, steps=4)
    want = self.expected["eval_steps4"]
    self.assertAlmostEqual(metrics["loss"], want["loss"], places=5)
    self.assertAlmostEqual(metrics["mae"], want["mae"], places=5)
    est.train(fixture_input_fn, steps=5)
    self.assertEqual(est.get_variable_value("global_step"), 45)
    self.assertAlmostEqual(float(est.get_variable_value("beta1_power")),
                           self.expected["variables"]["beta1_power"] * 0.9**5,
                           places=6)

  def test_tpu_estimator_model_dir_has_215_names_and_restores_elsewhere(self):
    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir)
    est.train(input_fn, max_steps=50)
    self.assertEqual(set(est.get_variable_names()),
                     set(self.expected["variables"]))
    plain = harness.Estimator(
        lambda features, labels, mode, params: model_fn(
            features, labels, mode, dict(params, batch_size=16))
        .as_estimator_spec(), model_dir=model_dir, params={"hidden": 16})
    self.assertEqual(
        plain.evaluate(lambda: eval_input_fn({"batch_size": 16}))["loss"],
        est.evaluate(eval_input_fn)["loss"])


class AliasesTest(absltest.TestCase):

  def test_tf_and_tensorflow_estimator_names(self):
    # pylint: disable=g-import-not-at-top
    from tensorflow_estimator.python.estimator.tpu import tpu_config
    from tensorflow_estimator.python.estimator.tpu import tpu_estimator
    # pylint: enable=g-import-not-at-top
    self.assertIs(tf.compat.v1.estimator.tpu.TPUEstimator, tpu.TPUEstimator)
    self.assertIs(tf.estimator.tpu.TPUEstimatorSpec, tpu.TPUEstimatorSpec)
    self.assertIs(tf.compat.v1.estimator.tpu.RunConfig, tpu.RunConfig)
    self.assertIs(tf.compat.v1.estimator.tpu.InputPipelineConfig,
                  tpu.InputPipelineConfig)
    self.assertIs(tpu_estimator.TPUEstimator, tpu.TPUEstimator)
    self.assertIs(tpu_estimator.TPUEstimatorSpec, tpu.TPUEstimatorSpec)
    self.assertIs(tpu_config.TPUConfig, tpu.TPUConfig)
    self.assertIs(tpu_config.RunConfig, tpu.RunConfig)

  def test_cross_shard_optimizer_passes_through_off_tpu(self):
    with tf.Graph().as_default():
      v = tf.compat.v1.get_variable(
          "v", [2], initializer=tf.compat.v1.ones_initializer())
      opt = tpu.CrossShardOptimizer(
          tf.compat.v1.train.GradientDescentOptimizer(0.1))
      train_op = opt.minimize(tf.reduce_sum(v * v))
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(train_op)
        np.testing.assert_allclose(session.run(v), [0.8, 0.8])
    with self.assertRaisesRegex(errors.ConfigError, "Keras optimizers"):
      tpu.CrossShardOptimizer(object())


if __name__ == "__main__":
  absltest.main()
