"""RunConfig(input_pipeline=...) and RunConfig(xla=...).

"tuned" (the default) must not change what a program computes: the same
elements in the same order, and so, at a fixed `tf_random_seed`, the same
trained variables as "as_written" (tf.estimator 2.15's behaviour).
"""

import os

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from harness import errors
from harness import fields
from harness import estimator as estimator_lib
from harness import spec as spec_lib
from harness._tf import tf
from harness.core import input_pipeline
from harness.run_config import RunConfig
from harness.run_config import distribution


def _pipeline():
  """A pipeline with the usual legacy pieces: a map, a filter, a seeded
  shuffle, batch, repeat; no prefetch."""
  xs = np.arange(200, dtype=np.float32)
  dataset = tf.data.Dataset.from_tensor_slices(xs)
  dataset = dataset.map(lambda x: (x * 2.0, tf.cast(x, tf.int64) % 3))
  dataset = dataset.filter(lambda x, y: y < 2)
  dataset = dataset.shuffle(64, seed=7).batch(16).repeat(2)
  return dataset


def _elements(make_dataset, tune):
  with tf.Graph().as_default():
    dataset = make_dataset()
    if tune:
      dataset = input_pipeline.tuned(dataset)
    iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
    next_element = iterator.get_next()
    out = []
    with tf.compat.v1.Session() as session:
      while True:
        try:
          out.append(session.run(next_element))
        except tf.errors.OutOfRangeError:
          return out


class TunedDatasetTest(absltest.TestCase):

  def test_same_elements_same_order(self):
    written = _elements(_pipeline, tune=False)
    tuned = _elements(_pipeline, tune=True)
    self.assertLen(written, 18)  # 134 kept: 9 batches of <= 16, twice.
    self.assertEqual(len(written), len(tuned))
    for (x1, y1), (x2, y2) in zip(written, tuned):
      np.testing.assert_array_equal(x1, x2)
      np.testing.assert_array_equal(y1, y2)

  def test_adds_prefetch_and_unset_options(self):
    with tf.Graph().as_default():
      result = input_pipeline.tuned(_pipeline())
      options = result.options()
    self.assertTrue(options.experimental_optimization.map_fusion)
    self.assertTrue(options.experimental_optimization.filter_parallelization)
    self.assertIn("Prefetch", type(result).__name__)

  def test_keeps_what_the_input_fn_set(self):
    with tf.Graph().as_default():
      options = tf.data.Options()
      options.experimental_optimization.map_fusion = False
      result = input_pipeline.tuned(_pipeline().with_options(options))
      self.assertIs(result.options().experimental_optimization.map_fusion,
                    False)
      options = tf.data.Options()
      options.experimental_optimization.apply_default_optimizations = False
      result = input_pipeline.tuned(_pipeline().with_options(options))
      self.assertIsNone(
          result.options().experimental_optimization.filter_parallelization)

  def test_no_op_before_model_fn(self):
    """The tuned dataset's ops come at the hook's begin(), after model_fn:
    the graph model_fn sees is as_written's, op for op."""
    names, hooks = {}, {}
    for mode in fields.INPUT_PIPELINES:
      with tf.Graph().as_default() as graph:
        _, _, hooks[mode] = input_pipeline.parse_input_fn_result(
            _pipeline(), mode)
        names[mode] = [op.name for op in graph.get_operations()]
        hooks[mode][0].begin()
        names[mode, "begin"] = [op.name for op in graph.get_operations()]
    self.assertEqual(names["tuned"], names["as_written"])
    self.assertEqual(names["as_written", "begin"], names["as_written"])
    self.assertGreater(len(names["tuned", "begin"]), len(names["tuned"]))

  def test_logs_one_line_per_mode(self):
    input_pipeline._logged.discard("probe_mode")  # pylint: disable=protected-access
    with tf.Graph().as_default():
      with self.assertLogs(level="INFO") as logs:
        input_pipeline.tuned(_pipeline(), "probe_mode")
        input_pipeline.tuned(_pipeline(), "probe_mode")
    lines = [l for l in logs.output if "input_pipeline=tuned" in l]
    self.assertLen(lines, 1)
    self.assertIn("(probe_mode): prefetch(AUTOTUNE) + map_fusion", lines[0])
    self.assertLess(len(lines[0]), 150)


def _input_fn():
  rng = np.random.default_rng(3)
  x = rng.random((256, 8), dtype=np.float32)
  y = (x.sum(axis=1) > 4).astype(np.int64)
  # Unseeded shuffle: its op seed comes from the graph seed and the op's
  # place in the graph, so this also checks that tuning adds no op before
  # model_fn.
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).shuffle(
      256).repeat().batch(32)


def _model_fn(features, labels, mode):
  logits = tf.compat.v1.layers.dense(
      tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu), 2)
  if mode == spec_lib.ModeKeys.PREDICT:
    return spec_lib.EstimatorSpec(mode, predictions={"logits": logits})
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return spec_lib.EstimatorSpec(
      mode, loss=loss, train_op=train_op,
      eval_metric_ops={"accuracy": tf.compat.v1.metrics.accuracy(
          labels, tf.argmax(logits, 1))})


class TrainedResultTest(parameterized.TestCase):

  def _train(self, input_pipeline_mode, steps_per_loop):
    config = RunConfig(
        model_dir=self.create_tempdir().full_path, tf_random_seed=11,
        input_pipeline=input_pipeline_mode, steps_per_loop=steps_per_loop,
        save_checkpoints_steps=1000)
    estimator = estimator_lib.Estimator(_model_fn, config=config)
    estimator.train(_input_fn, max_steps=40)
    values = {n: estimator.get_variable_value(n)
              for n in estimator.get_variable_names()}
    metrics = estimator.evaluate(lambda: _input_fn().take(4))
    predictions = [p["logits"] for p in estimator.predict(
        lambda: _input_fn().map(lambda f, l: f).take(2))]
    return values, metrics, predictions

  @parameterized.named_parameters(("one_step_a_run", 1),
                                  ("four_steps_a_run", 4))
  def test_same_training_result_at_a_fixed_seed(self, steps_per_loop):
    written = self._train(fields.AS_WRITTEN, steps_per_loop)
    tuned = self._train(fields.TUNED, steps_per_loop)
    self.assertEqual(sorted(written[0]), sorted(tuned[0]))
    for name, value in written[0].items():
      np.testing.assert_array_equal(value, tuned[0][name], err_msg=name)
    self.assertEqual(written[1], tuned[1])
    np.testing.assert_array_equal(np.stack(written[2]), np.stack(tuned[2]))

  def test_default_is_tuned_and_checked(self):
    self.assertEqual(RunConfig().input_pipeline, fields.TUNED)
    self.assertEqual(
        RunConfig().replace(input_pipeline="as_written").input_pipeline,
        "as_written")
    with self.assertRaisesRegex(errors.ConfigError,
                                "input_pipeline must be one of tuned, "
                                "as_written. Given: 'fast'. Fix:"):
      RunConfig(input_pipeline="fast")


class NumpyInputFnTest(absltest.TestCase):
  """harness's numpy_input_fn returns Tensors (as 2.15's); harness itself
  trains from the Dataset behind them, with the same batches."""

  def _train(self, input_fn, steps_per_loop):
    """Returns (estimator, the global step after each session.run)."""
    config = RunConfig(model_dir=self.create_tempdir().full_path,
                       tf_random_seed=5, steps_per_loop=steps_per_loop)
    estimator = estimator_lib.Estimator(_model_fn, config=config)
    steps = []

    class StepsHook(tf.compat.v1.train.SessionRunHook):

      def begin(self):
        self._step = tf.compat.v1.train.get_global_step()

      def before_run(self, run_context):
        # Its own session.run, before the training run: a fetch in the
        # training run itself may read the step before or after that run's
        # increment (no order between them), which a loaded machine shows.
        steps.append(int(run_context.session.run(self._step)))

    estimator.train(input_fn, max_steps=12, hooks=[StepsHook()])
    return estimator, steps

  def test_same_batches_and_several_steps_a_run(self):
    from harness import inputs  # pylint: disable=g-import-not-at-top
    rng = np.random.default_rng(0)
    x = {"x": rng.random((96, 8), dtype=np.float32)}
    y = rng.integers(0, 2, 96).astype(np.int64)
    input_fn = inputs.numpy_input_fn(x, y, batch_size=8, num_epochs=None,
                                     shuffle=True)
    self.assertTrue(callable(getattr(input_fn, spec_lib.DATASET_FN_ATTR)))
    with tf.Graph().as_default():  # Called directly: Tensors, as in 2.15.
      features, labels = input_fn()
      self.assertTrue(tf.is_tensor(labels))
      self.assertTrue(tf.is_tensor(features["x"]))
    # A lambda hides the Dataset: harness trains from the Tensors.
    from_tensors, _ = self._train(lambda: input_fn(), 1)  # pylint: disable=unnecessary-lambda
    from_dataset, _ = self._train(input_fn, 1)
    for name in from_dataset.get_variable_names():
      np.testing.assert_array_equal(from_dataset.get_variable_value(name),
                                    from_tensors.get_variable_value(name),
                                    err_msg=name)
    _, steps = self._train(input_fn, 4)
    self.assertEqual(steps, [0, 4, 8])  # Read as each run starts.
    _, steps = self._train(lambda: input_fn(), 4)  # pylint: disable=unnecessary-lambda
    self.assertEqual(steps, list(range(12)))  # Tensors: one step a run.


class XlaTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self._flags = os.environ.get("TF_XLA_FLAGS")
    self.addCleanup(self._restore)

  def _restore(self):
    if self._flags is None:
      os.environ.pop("TF_XLA_FLAGS", None)
    else:
      os.environ["TF_XLA_FLAGS"] = self._flags

  def test_off_by_default(self):
    self.assertFalse(RunConfig().xla)
    self.assertIsNone(RunConfig().session_config)

  def test_on_sets_jit_level_on_a_copy(self):
    os.environ["TF_XLA_FLAGS"] = "--xla_other=1"
    mine = tf.compat.v1.ConfigProto(log_device_placement=True)
    config = RunConfig(session_config=mine, xla=True)
    jit = config.session_config.graph_options.optimizer_options
    self.assertEqual(jit.global_jit_level,
                     tf.compat.v1.OptimizerOptions.ON_1)
    self.assertTrue(config.session_config.log_device_placement)
    self.assertEqual(mine.graph_options.optimizer_options.global_jit_level,
                     tf.compat.v1.OptimizerOptions.DEFAULT)
    self.assertEqual(os.environ["TF_XLA_FLAGS"],
                     "--xla_other=1 --tf_xla_cpu_global_jit")
    distribution.with_xla(None)  # Already there: not added twice.
    self.assertEqual(os.environ["TF_XLA_FLAGS"].count("cpu_global_jit"), 1)

  def test_not_a_bool(self):
    with self.assertRaisesRegex(errors.ConfigError, "xla must be True or "
                                "False"):
      RunConfig(xla="yes")


if __name__ == "__main__":
  absltest.main()
