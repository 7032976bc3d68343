"""Canned models and export outputs at tf.estimator 2.15's edges (issue 28).

The summary tags a canned DNN writes (what TensorBoard shows), the linear
model's sparsity helper, the wide & deep model_fn at its 2.15 path,
TensorFlow's own export output classes in `export_outputs`, and a Keras
model's list of inputs of several shapes returned by an input_fn.
"""

import tempfile
from unittest import mock

from absl.testing import absltest
import numpy as np

import harness
import harness.compat  # noqa: F401  (the tensorflow_estimator.* paths)
from harness import spec
from harness._tf import tf
from harness.canned import linear
from harness.canned.head import regression_head

_fc = tf.feature_column


class _SummaryTags(tf.compat.v1.train.SessionRunHook):
  """Records the tags of every merged summary of the last run."""

  def begin(self):
    self._op = tf.compat.v1.summary.merge_all()
    self.tags = []

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._op)

  def after_run(self, run_context, run_values):
    del run_context
    summary = tf.compat.v1.summary.Summary()
    summary.ParseFromString(run_values.results)
    self.tags = [value.tag for value in summary.value]


def _input_fn():
  return {"age": [[10.]]}, [[1.]]


def _train_tags(estimator):
  hook = _SummaryTags()
  estimator.train(_input_fn, steps=1, hooks=[hook])
  return hook.tags


class DNNSummaryTagsTest(absltest.TestCase):
  """The tags 2.15 wrote, read from a 2.15 run of the same models."""

  def test_v2_tags_name_the_tower_once(self):
    est = harness.DNNRegressor(
        hidden_units=[2, 2], feature_columns=[_fc.numeric_column("age")],
        model_dir=tempfile.mkdtemp())
    self.assertEqual(
        ["dnn/hiddenlayer_0/fraction_of_zero_values",
         "dnn/hiddenlayer_0/activation",
         "dnn/hiddenlayer_1/fraction_of_zero_values",
         "dnn/hiddenlayer_1/activation",
         "dnn/logits/fraction_of_zero_values", "dnn/logits/activation",
         "loss"], _train_tags(est))

  def test_v2_wide_and_deep_tags(self):
    est = harness.DNNLinearCombinedRegressor(
        dnn_hidden_units=[2], dnn_feature_columns=[_fc.numeric_column("age")],
        linear_feature_columns=[_fc.numeric_column("age")],
        model_dir=tempfile.mkdtemp())
    tags = _train_tags(est)
    for tag in ("dnn/hiddenlayer_0/fraction_of_zero_values",
                "dnn/logits/activation", "bias", "fraction_of_zero_weights",
                "linear/fraction_of_zero_values"):
      self.assertIn(tag, tags)
    self.assertFalse([t for t in tags if t.startswith("dnn/dnn/")], tags)

  def test_v1_tags_name_the_tower_twice(self):
    est = harness.canned.dnn.DNNRegressorV1(
        hidden_units=[2],
        feature_columns=[tf.compat.v1.feature_column.numeric_column("age")],
        model_dir=tempfile.mkdtemp())
    self.assertIn("dnn/dnn/hiddenlayer_0/fraction_of_zero_values",
                  _train_tags(est))


class FractionOfZeroTest(absltest.TestCase):
  """`linear.fraction_of_zero`, 2.15's `linear._compute_fraction_of_zero`."""

  def _value(self, variables):
    return float(linear.fraction_of_zero(variables))

  def test_counts_over_all_variables_of_any_dtype(self):
    self.assertAlmostEqual(0.75, self._value([tf.constant([0, 0, 0, 1])]))
    self.assertAlmostEqual(0.6, self._value([
        tf.constant([0., 0., 1., 1., 1.]), tf.constant([0, 0, 0, 0, 1])]))
    self.assertAlmostEqual(0.75, self._value(
        [[tf.constant([0, 0]), tf.constant([0, 1])]]))

  def test_empty_variables(self):
    self.assertAlmostEqual(0.5, self._value(
        [tf.constant([]), tf.constant([0.]), tf.constant([1.])]))
    self.assertTrue(np.isnan(self._value([tf.constant([])])))
    with self.assertRaisesRegex(ValueError, "Empty list of variables"):
      linear.fraction_of_zero([])

  def test_at_the_2_15_path(self):
    from tensorflow_estimator.python.estimator.canned import linear as path  # pylint: disable=g-import-not-at-top
    self.assertIs(linear.fraction_of_zero, path._compute_fraction_of_zero)  # pylint: disable=protected-access


class WideAndDeepModelFnTest(absltest.TestCase):

  def test_dnn_only_model_fn_with_a_head(self):
    from tensorflow_estimator.python.estimator.canned import dnn_linear_combined as path  # pylint: disable=g-import-not-at-top
    model_fn = path._dnn_linear_combined_model_fn_v2  # pylint: disable=protected-access
    with tf.Graph().as_default():
      tf.compat.v1.train.create_global_step()
      got = model_fn(
          features={"age": tf.constant([[10.]])}, labels=tf.constant([[1.]]),
          mode=spec.ModeKeys.TRAIN, head=regression_head.RegressionHead(),
          dnn_feature_columns=[_fc.numeric_column("age")],
          dnn_hidden_units=[3])
      names = sorted(v.op.name for v in
                     tf.compat.v1.trainable_variables())
    self.assertIsNotNone(got.train_op)
    self.assertIn("dnn/hiddenlayer_0/kernel", names)
    self.assertFalse([n for n in names if n.startswith("linear/")], names)

  def test_needs_a_part(self):
    with tf.Graph().as_default():
      with self.assertRaisesRegex(ValueError, "must be defined"):
        harness.canned.dnn_linear_combined.dnn_linear_combined_model_fn_v2(
            features={"age": tf.constant([[1.]])}, labels=None,
            mode=spec.ModeKeys.PREDICT,
            head=regression_head.RegressionHead())


def _export_model_fn(features, labels, mode):
  """A regression whose export outputs are TensorFlow's own classes."""
  from tensorflow.python.saved_model.model_utils import export_output  # pylint: disable=g-import-not-at-top
  del labels
  weight = tf.compat.v1.get_variable("w", [1, 1])
  predictions = tf.matmul(features["x"], weight)
  outputs = {"serving_default": export_output.PredictOutput(predictions),
             "regress": export_output.RegressionOutput(predictions)}
  return spec.EstimatorSpec(
      mode, predictions=predictions, loss=tf.constant(0.),
      train_op=tf.compat.v1.assign_add(
          tf.compat.v1.train.get_or_create_global_step(), 1),
      export_outputs=outputs)


class TensorFlowExportOutputsTest(absltest.TestCase):

  def test_tensorflow_export_output_classes_export(self):
    est = harness.Estimator(_export_model_fn, model_dir=tempfile.mkdtemp())
    est.train(lambda: ({"x": [[1.]]}, [[1.]]), steps=1)
    receiver = harness.export.build_parsing_serving_input_receiver_fn(
        {"x": tf.io.FixedLenFeature([1], tf.float32)})
    path = est.export_saved_model(tempfile.mkdtemp(), receiver)
    loaded = tf.saved_model.load(path)
    self.assertEqual({"serving_default", "regress"},
                     set(loaded.signatures.keys()))

  def test_other_values_still_refused(self):
    with self.assertRaisesRegex(TypeError, "must be ExportOutput objects"):
      harness.export.outputs.get_export_outputs(
          {"serving_default": tf.constant(1.)}, None)


class ListOfInputsTest(absltest.TestCase):

  def test_list_of_arrays_of_several_shapes_reaches_model_fn(self):
    seen = {}

    def model_fn(features, labels, mode):
      seen["shapes"] = [tuple(f.shape) for f in features]
      del labels
      step = tf.compat.v1.train.get_or_create_global_step()
      return spec.EstimatorSpec(
          mode, loss=tf.constant(0.),
          train_op=tf.compat.v1.assign_add(step, 1))

    def input_fn():
      return [np.zeros((4, 3), np.float32), np.zeros((4, 1), np.float32),
              np.array(["a"] * 4)], [np.zeros((4, 1))]

    harness.Estimator(model_fn, model_dir=tempfile.mkdtemp()).train(
        input_fn, steps=1)
    self.assertEqual([(4, 3), (4, 1), (4,)], seen["shapes"])


class HeadOptimizerTest(absltest.TestCase):
  """Which Keras optimizers a head takes (2.15 called `get_updates`)."""

  def _train_op(self, optimizer):
    head = regression_head.RegressionHead()
    with tf.Graph().as_default():
      weight = tf.compat.v1.get_variable("w", [1, 1])
      logits = tf.matmul(tf.constant([[1.]]), weight)
      got = head.create_estimator_spec(
          features={"x": tf.constant([[1.]])}, mode=spec.ModeKeys.TRAIN,
          logits=logits, labels=tf.constant([[2.]]), optimizer=optimizer,
          trainable_variables=[weight])
    return got.train_op

  def test_new_style_subclass_with_get_updates_is_used(self):
    calls = []

    class Optimizer(tf.keras.optimizers.Optimizer):

      def get_updates(self, loss, params):
        calls.append(len(params))
        return [tf.identity(loss)]

    self.assertIsNotNone(self._train_op(Optimizer(name="mine")))
    self.assertEqual([1], calls)

  def test_new_style_optimizer_without_get_updates_is_refused(self):
    with self.assertRaisesRegex(ValueError, "tf.keras.optimizers.legacy"):
      self._train_op(tf.keras.optimizers.SGD())


class MultiDimWeightsTest(absltest.TestCase):
  """[D0, D1] weights of [D0, D1, n] logits: one weight per example."""

  def test_multi_class_head_weights_without_last_dim(self):
    from harness.canned.head import multi_class_head  # pylint: disable=g-import-not-at-top
    head = multi_class_head.MultiClassHead(n_classes=3, weight_column="w")
    logits = np.array([[[10, 0, 0], [12, 0, 0]], [[0, 10, 0], [0, 15, 0]]],
                      dtype=np.float32)
    labels = np.array([[[0], [1]], [[1], [2]]], dtype=np.int64)
    weights = np.array([[1., 1.5], [2., 2.5]], dtype=np.float32)
    # Cross entropies [[0, 12], [0, 15]], weighted: 1.5*12 + 2.5*15 = 55.5,
    # over 4 examples.
    loss = head.loss(labels, logits, features={"w": weights})
    self.assertAlmostEqual(13.875, float(loss), places=2)


def _tpu_spec_head_class():
  """A head that builds its spec in 2.15's `_create_tpu_estimator_spec`.

  Written the way custom heads of 2.15 were (tensorflow_privacy's DP heads
  override that method): it doubles the training loss, so the test can see
  that its spec, not the parent's, is used.
  """
  from harness.canned.head import base_head  # pylint: disable=g-import-not-at-top
  from harness.canned.head import multi_class_head  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator import model_fn as model_fn_lib  # pylint: disable=g-import-not-at-top

  class DoubledLossHead(multi_class_head.MultiClassHead):

    def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                   optimizer=None, trainable_variables=None,
                                   train_op_fn=None, update_ops=None,
                                   regularization_losses=None):
      predictions = self.predictions(logits)
      if mode == spec.ModeKeys.PREDICT:
        return model_fn_lib._TPUEstimatorSpec(  # pylint: disable=protected-access
            mode=mode, predictions=predictions)
      loss = 2. * self.loss(labels, logits, features=features, mode=mode)
      if mode == spec.ModeKeys.EVAL:
        return model_fn_lib._TPUEstimatorSpec(  # pylint: disable=protected-access
            mode=mode, predictions=predictions, loss=loss,
            eval_metrics=base_head.create_eval_metrics_tuple(
                self.update_metrics, {
                    "eval_metrics": self.metrics(), "features": features,
                    "logits": logits, "labels": labels}))
      train_op = base_head.create_estimator_spec_train_op(
          head_name=self.name, optimizer=optimizer,
          trainable_variables=trainable_variables, train_op_fn=train_op_fn,
          update_ops=update_ops, regularized_training_loss=loss)
      return model_fn_lib._TPUEstimatorSpec(  # pylint: disable=protected-access
          mode=mode, predictions=predictions, loss=loss, train_op=train_op)

  return DoubledLossHead


class BaseHeadPathTest(absltest.TestCase):

  def test_2_15_base_head_functions_resolve_at_the_2_15_path(self):
    from tensorflow_estimator.python.estimator.head import base_head as path  # pylint: disable=g-import-not-at-top
    for name in ("check_dense_labels_match_logits_and_reshape",
                 "get_weights_and_check_match_logits",
                 "check_logits_final_dim", "validate_loss_fn_args",
                 "validate_loss_reduction", "validate_update_ops",
                 "validate_v2_optimizer", "validate_trainable_variables",
                 "validate_n_classes", "call_loss_fn",
                 "check_prediction_keys", "all_class_ids", "all_classes",
                 "classification_output", "check_label_range",
                 "update_metric_with_broadcast_weights",
                 "create_eval_metrics_tuple",
                 "create_estimator_spec_train_op",
                 "create_estimator_spec_summary"):
      self.assertTrue(callable(getattr(path, name)), name)


class TPUSpecHeadTest(absltest.TestCase):
  """A custom head overriding `_create_tpu_estimator_spec` (2.15's hook)."""

  def _spec(self, mode):
    head = _tpu_spec_head_class()(n_classes=3)
    with tf.Graph().as_default():
      logits = tf.constant([[10., 0., 0.], [0., 10., 0.]])
      labels = tf.constant([[1], [1]], dtype=tf.int64)
      weight = tf.compat.v1.get_variable("w", [])
      got = head.create_estimator_spec(
          features={"x": tf.constant([[1.]])}, mode=mode,
          logits=logits * weight, labels=labels,
          train_op_fn=lambda loss: tf.no_op(),
          trainable_variables=[weight])
      plain = head.loss(labels, logits, features={})
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(weight.assign(1.))
        session.run(tf.compat.v1.local_variables_initializer())
        return got, session.run([got.loss, plain])

  def test_train_uses_the_override(self):
    got, (loss, plain) = self._spec(spec.ModeKeys.TRAIN)
    self.assertIsInstance(got, spec.EstimatorSpec)
    self.assertIsNotNone(got.train_op)
    self.assertAlmostEqual(2 * plain, loss, places=4)

  def test_eval_metrics_through_create_eval_metrics_tuple(self):
    got, (loss, plain) = self._spec(spec.ModeKeys.EVAL)
    self.assertAlmostEqual(2 * plain, loss, places=4)
    self.assertIn("accuracy", got.eval_metric_ops)


def _constant_model_fn(features, labels, mode):
  del features, labels
  step = tf.compat.v1.train.get_or_create_global_step()
  return spec.EstimatorSpec(
      mode, loss=tf.constant(0.), train_op=tf.compat.v1.assign_add(step, 1),
      predictions=tf.constant([[10.]]))


class EndlessPredictWarningTest(absltest.TestCase):
  """2.15 warned that predict over plain tensors never ends."""

  def setUp(self):
    super().setUp()
    self.est = harness.Estimator(_constant_model_fn,
                                 model_dir=tempfile.mkdtemp())
    self.est.train(lambda: ({"x": [[1.]]}, [[1.]]), steps=1)

  def _warnings(self, input_fn):
    with mock.patch.object(tf.compat.v1.logging, "warning") as warning:
      next(self.est.predict(input_fn))
    return " ".join(str(call) for call in warning.call_args_list)

  def test_plain_tensors_warn(self):
    self.assertRegex(self._warnings(lambda: {"x": tf.constant([[1.]])}),
                     "Input graph does not.*contain a QueueRunner.*Fix:")

  def test_dataset_does_not_warn(self):
    self.assertNotIn("QueueRunner", self._warnings(
        lambda: tf.data.Dataset.from_tensors({"x": [[1.]]})))


if __name__ == "__main__":
  absltest.main()
