"""Harness accepts what tf.estimator 2.15 accepted and raises what it raised.

Issue 28, items 1 and 3: Python / numpy features and labels, numpy labels
and weights given to a canned head, a `functools.partial` model_fn with
bound arguments, and EstimatorSpec's TypeError / ValueError sentences.
"""

import functools
import tempfile
import time
from unittest import mock

from absl.testing import absltest
import numpy as np

import harness
from harness import errors
from harness import spec
from harness._tf import tf
from harness.canned.head import regression_head


def _sum_model_fn(features, labels, mode):
  """Predicts sum(x) * w; the loss is the squared error to `labels`."""
  weight = tf.compat.v1.get_variable(
      "w", [], initializer=tf.zeros_initializer())
  x = tf.cast(features["x"], tf.float32)
  predictions = tf.reduce_sum(x, axis=-1) * weight
  if mode == spec.ModeKeys.PREDICT:
    return spec.EstimatorSpec(mode, predictions={"y": predictions})
  labels = tf.reshape(tf.cast(labels, tf.float32), [-1])
  loss = tf.reduce_mean(tf.square(predictions - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return spec.EstimatorSpec(mode, predictions=predictions, loss=loss,
                            train_op=train_op)


class PythonInputsTest(absltest.TestCase):
  """input_fns returning Python lists, scalars, nested tuples, numpy."""

  def _estimator(self, model_fn=_sum_model_fn):
    return harness.Estimator(model_fn, model_dir=tempfile.mkdtemp(
        dir=self.create_tempdir().full_path))

  def test_train_evaluate_predict_on_python_lists(self):
    est = self._estimator()
    est.train(lambda: ({"x": [[17., 18.], [1., 2.]]}, [35., 3.]), steps=2)
    self.assertEqual(2, est.get_variable_value("global_step"))
    metrics = est.evaluate(lambda: ({"x": [[1., 2.]]}, [3.]), steps=1)
    self.assertIn("loss", metrics)
    # Constant features never run out: take the first prediction, as 2.15.
    first = next(est.predict(lambda: {"x": [[1., 2.]]}))
    np.testing.assert_allclose(first["y"], 3 * est.get_variable_value("w"),
                               rtol=1e-5)

  def test_nested_tuples_scalars_and_numpy(self):
    est = self._estimator()
    est.train(lambda: ({"x": ((17.,),)}, 17.), steps=1)
    est.train(lambda: ({"x": np.array([[1., 2.]])}, np.array([3.])),
              steps=1)
    self.assertEqual(2, est.get_variable_value("global_step"))

  def test_model_fn_gets_the_values_unchanged(self):
    seen = {}

    def model_fn(features, labels, mode):
      seen.update(features=features, labels=labels)
      return _sum_model_fn(features, labels, mode)

    features, labels = {"x": [[1.], [1.]]}, np.array([1., 1.])
    self._estimator(model_fn).train(lambda: (features, labels), steps=1)
    self.assertIs(features, seen["features"])
    self.assertIs(labels, seen["labels"])

  def test_unconvertible_value_names_it(self):
    est = self._estimator()
    with self.assertRaisesRegex(errors.InputFnError,
                                "tf.convert_to_tensor refuses"):
      est.train(lambda: ({"x": object()}, [1.]), steps=1)


class PartialModelFnTest(absltest.TestCase):

  def test_partial_with_bound_keyword_arguments(self):
    seen = {}

    def model_fn(features, labels, foo, mode, params, config, bar):
      seen.update(foo=foo, bar=bar, params=params, config=config)
      return _sum_model_fn(features, labels, mode)

    est = harness.Estimator(
        functools.partial(model_fn, foo=45., bar=46.),
        model_dir=self.create_tempdir().full_path, params={"p": 1})
    est.train(lambda: ({"x": [[1.]]}, [1.]), steps=1)
    self.assertEqual((45., 46., {"p": 1}),
                     (seen["foo"], seen["bar"], seen["params"]))

  def test_fn_args_drops_bound_arguments(self):
    def fn(a, b, c, d):
      del a, b, c, d
    self.assertEqual(("b", "d"),
                     spec.fn_args(functools.partial(fn, 1, c=3)))


class HeadNumpyLabelsTest(absltest.TestCase):

  def test_regression_head_numpy_labels_and_weights(self):
    head = regression_head.RegressionHead(weight_column="w")
    with tf.Graph().as_default():
      loss = head.loss(
          labels=np.array([[1.], [2.]], dtype=np.float64),
          logits=np.array([[1.], [3.]], dtype=np.float32),
          features={"w": np.array([[1.], [2.]], dtype=np.float64)},
          mode=spec.ModeKeys.EVAL)
      with tf.compat.v1.Session() as session:
        # Weighted sum over batch size: (1 * 0 + 2 * 1) / 2.
        self.assertAlmostEqual(1.0, session.run(loss), places=5)


class EstimatorSpecErrorsTest(absltest.TestCase):
  """2.15's exception type, with 2.15's sentence first."""

  def _spec(self, **kwargs):
    kwargs.setdefault("mode", spec.ModeKeys.EVAL)
    kwargs.setdefault("loss", tf.constant(1.))
    return spec.EstimatorSpec(**kwargs)

  def assert_raises(self, error_type, sentence, **kwargs):
    with tf.Graph().as_default():
      with self.assertRaises(error_type) as raised:
        self._spec(**kwargs)
    self.assertTrue(str(raised.exception).startswith(sentence),
                    str(raised.exception))
    self.assertIn("Fix:", str(raised.exception))
    self.assertIsInstance(raised.exception, errors.ModelFnError)

  def test_loss_not_a_tensor(self):
    self.assert_raises(TypeError, "loss must be Tensor, given: 1.0", loss=1.)

  def test_sparse_loss(self):
    with tf.Graph().as_default():
      sparse = tf.sparse.SparseTensor([[0]], [0.], [1])
      with self.assertRaisesRegex(TypeError, "^loss must be Tensor"):
        self._spec(loss=sparse)

  def test_predictions_not_tensors(self):
    self.assert_raises(TypeError, "predictions[number] must be Tensor",
                       predictions={"number": 1.})

  def test_train_op_not_op(self):
    self.assert_raises(
        TypeError, "train_op must be Operation or Tensor, given: nope",
        mode=spec.ModeKeys.TRAIN, train_op="nope")

  def test_eval_metric_ops_not_dict_or_tuple(self):
    self.assert_raises(TypeError, "eval_metric_ops must be a dict, given:",
                       eval_metric_ops=[1])
    self.assert_raises(
        TypeError,
        "Values of eval_metric_ops must be (metric_value, update_op) tuples",
        eval_metric_ops={"m": 1})

  def test_wrong_scaffold(self):
    self.assert_raises(TypeError, "scaffold must be tf.train.Scaffold.",
                       scaffold=object())

  def test_keras_metric_without_update(self):
    with tf.Graph().as_default():
      metric = tf.keras.metrics.Mean(name="m")
      with self.assertRaisesRegex(
          ValueError, r'^Please call update_state\(...\) on the "m" metric'):
        self._spec(eval_metric_ops={"m": metric})

  def test_mode_none_trains_as_in_2_15(self):
    def model_fn(features):
      del features
      return spec.EstimatorSpec(
          mode=None, loss=tf.constant(0.), train_op=tf.compat.v1.assign_add(
              tf.compat.v1.train.get_global_step(), 1))

    est = harness.Estimator(model_fn,
                            model_dir=self.create_tempdir().full_path)
    est.train(lambda: {"x": [[1.]]}, steps=1)
    self.assertEqual(1, est.get_variable_value("global_step"))
    with tf.Graph().as_default(), self.assertRaisesRegex(
        ValueError, "mode must be one of"):
      self._spec(mode="training")

  def test_other_graph(self):
    with tf.Graph().as_default():
      loss = tf.constant(1.)
    with tf.Graph().as_default():
      with self.assertRaisesRegex(ValueError,
                                  "must be from the default graph"):
        self._spec(loss=loss)

  def test_keras_metric_variables_join_collections(self):
    with tf.Graph().as_default():
      metric = tf.keras.metrics.Mean()
      metric.update_state(tf.constant(1.))
      self._spec(eval_metric_ops={"m": metric})
      for key in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                  tf.compat.v1.GraphKeys.METRIC_VARIABLES):
        self.assertContainsSubset(metric.variables,
                                  tf.compat.v1.get_collection(key))


class HooksAndConfigErrorsTest(absltest.TestCase):
  """2.15's types and sentences outside EstimatorSpec."""

  def test_in_memory_evaluator_custom_saver_is_a_value_error(self):
    def model_fn(features, labels, mode):
      spec_out = _sum_model_fn(features, labels, mode)
      if mode != spec.ModeKeys.EVAL:
        return spec_out
      return spec_out._replace(scaffold=tf.compat.v1.train.Scaffold(
          saver=tf.compat.v1.train.Saver()))

    est = harness.Estimator(model_fn,
                            model_dir=self.create_tempdir().full_path)
    hook = harness.experimental.InMemoryEvaluatorHook(
        est, lambda: ({"x": [[1.]]}, [1.]))
    with self.assertRaisesRegex(
        ValueError, "^InMemoryEvaluator does not support custom saver"):
      est.train(lambda: ({"x": [[1.]]}, [1.]), steps=1, hooks=[hook])

  def test_stop_at_checkpoint_step_hook_sleeps_through_time_sleep(self):
    slept = []
    hook = harness.hooks._StopAtCheckpointStepHook(  # pylint: disable=protected-access
        model_dir=self.create_tempdir().full_path, last_step=1)
    with tf.Graph().as_default():
      tf.compat.v1.train.create_global_step()
      no_op = tf.no_op()
      with mock.patch.object(time, "sleep", slept.append):
        with tf.compat.v1.train.SingularMonitoredSession(
            hooks=[hook]) as session:
          session.run(no_op)
          self.assertFalse(session.should_stop())
    self.assertEqual([30], slept)

  def test_tpu_config_positive_integers(self):
    from harness.tpu import tpu_config  # pylint: disable=g-import-not-at-top
    with self.assertRaisesRegex(ValueError, "^TPUConfig num_shards must be positive"):
      tpu_config.TPUConfig(num_shards=0)
    with self.assertRaisesRegex(TypeError, "^TPUConfig num_shards must be int"):
      tpu_config.TPUConfig(num_shards=1.5)
    for bad in (0, -1, "-1h"):
      with self.assertRaisesRegex(ValueError, "must be positive"):
        tpu_config.TPUConfig(iterations_per_loop=bad)

  def test_predict_checks_hooks_first(self):
    def model_fn(features):  # No predictions: fails if it is ever called.
      del features
      return spec.EstimatorSpec(spec.ModeKeys.PREDICT)

    est = harness.Estimator(model_fn,
                            model_dir=self.create_tempdir().full_path)
    with self.assertRaisesRegex(TypeError, "^Hooks must be a SessionRunHook"):
      next(est.predict(lambda: {"x": [[1.]]}, hooks=["NotAHook"]))

  def test_untrained_variable_read_is_a_value_error(self):
    est = harness.Estimator(_sum_model_fn,
                            model_dir=self.create_tempdir().full_path)
    for read in (est.get_variable_names, lambda: est.get_variable_value("w")):
      with self.assertRaisesRegex(
          ValueError, "^Could not find trained model in model_dir: "):
        read()
    with self.assertRaises(errors.CheckpointError):
      est.get_variable_names()

  def test_global_step_metric_is_refused(self):
    def model_fn(features, labels, mode):
      spec_out = _sum_model_fn(features, labels, mode)
      return spec_out._replace(eval_metric_ops={
          "global_step": tf.compat.v1.metrics.mean(spec_out.loss)})

    est = harness.Estimator(model_fn,
                            model_dir=self.create_tempdir().full_path)
    est.train(lambda: ({"x": [[1.]]}, [1.]), steps=1)
    with self.assertRaisesRegex(
        ValueError, "^Metric with name `global_step` is not allowed"):
      est.evaluate(lambda: ({"x": [[1.]]}, [1.]), steps=1)

  def test_config_not_a_run_config(self):
    with self.assertRaisesRegex(
        ValueError, r"^config must be an instance of `RunConfig`, but "
        r"provided nope\. Fix:"):
      harness.Estimator(_sum_model_fn, config="nope")

  def test_ragged_feature_accepted_by_receiver(self):
    with tf.Graph().as_default():
      ragged = tf.RaggedTensor.from_row_lengths([1., 2., 3.], [2, 1])
      receiver = harness.export.ServingInputReceiver(
          {"r": ragged}, {"in": tf.compat.v1.placeholder(tf.string)})
      self.assertIs(ragged, receiver.features["r"])
      with self.assertRaisesRegex(
          ValueError, "must be a Tensor, SparseTensor, or RaggedTensor."):
        harness.export.ServingInputReceiver(
            {"r": [1.]}, {"in": tf.compat.v1.placeholder(tf.string)})


class EvalSummaryProtoTest(absltest.TestCase):
  """An eval metric holding a serialized Summary (an image summary)."""

  def test_each_value_is_written_as_key_slash_index(self):

    def model_fn(features, labels, mode):
      del features, labels
      images = tf.compat.v1.summary.image(
          "image", tf.zeros([5, 3, 3, 1]), max_outputs=3)
      return spec.EstimatorSpec(
          mode, loss=tf.constant(1.),
          train_op=tf.compat.v1.assign_add(
              tf.compat.v1.train.get_global_step(), 1),
          eval_metric_ops={"foo": (images, tf.no_op())})

    est = harness.Estimator(model_fn, model_dir=tempfile.mkdtemp())
    est.train(lambda: ({"x": [[1.]]}, [[1.]]), steps=1)
    est.evaluate(lambda: ({"x": [[1.]]}, [[1.]]), steps=1)
    tags = set()
    for path in tf.io.gfile.glob(est.eval_dir() + "/events.*"):
      for event in tf.compat.v1.train.summary_iterator(path):
        tags.update(value.tag for value in event.summary.value)
    self.assertLessEqual({"foo/0", "foo/1", "foo/2"}, tags)
    self.assertNotIn("foo", tags)


class TaskChecksOrderTest(absltest.TestCase):
  """2.15's task checks come before harness's address rules."""

  def _run(self, task):
    tf_config = {"cluster": {"chief": ["host0:0"], "ps": ["host1:1"],
                             "local": ["host2:2"], "alloc": ["host3:3"]},
                 "task": task}
    import json  # pylint: disable=g-import-not-at-top
    config = harness.RunConfig(
        environ={"TF_CONFIG": json.dumps(tf_config)})
    est = harness.Estimator(_sum_model_fn, model_dir=tempfile.mkdtemp(),
                            config=config)
    harness.train_and_evaluate(
        est, harness.TrainSpec(lambda: ({"x": [[1.]]}, [1.])),
        harness.EvalSpec(lambda: ({"x": [[1.]]}, [1.])))

  def test_second_evaluator_before_port_zero(self):
    with self.assertRaisesRegex(ValueError,
                                "there can only be one `evaluator` task"):
      self._run({"type": "evaluator", "index": 1})

  def test_local_task_type_before_port_zero(self):
    with self.assertRaisesRegex(ValueError, "cannot be `local`"):
      self._run({"type": "local", "index": 0})

  def test_unsupported_task_type_as_2_15_said_it(self):
    # 2.15's tests match the whole rest of the message: no "local" in it.
    with self.assertRaisesRegex(
        ValueError, "Task type .* is not supported. Supported task types "
        "are ((?!local).)*$"):
      self._run({"type": "alloc", "index": 0})

  def test_port_zero_still_refused_for_a_real_task(self):
    with self.assertRaisesRegex(ValueError, "port in 1..65535"):
      self._run({"type": "chief", "index": 0})


if __name__ == "__main__":
  absltest.main()
