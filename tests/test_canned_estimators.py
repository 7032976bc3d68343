"""Canned estimators: arguments, feature columns, optimizers, v1 classes,
warm start, aliases, and a run under MirroredStrategy.

(Restoring tf.estimator 2.15's own model_dirs: test_canned_fixtures.py.)
"""

import importlib
import inspect
import subprocess
import sys

import numpy as np
from absl.testing import absltest
from absl.testing import parameterized
import pytest

import harness
import harness.compat  # pylint: disable=unused-import
from harness._tf import tf
from harness.canned import baseline
from harness.canned import dnn
from harness.canned import dnn_linear_combined
from harness.canned import linear
from tests import conftest

_FC = tf.feature_column
_ROWS = 64


def _features():
  rng = np.random.RandomState(0)
  n = rng.rand(_ROWS, 1).astype(np.float32)
  return {
      "n": n,
      "s": rng.choice([b"a", b"b", b"c"], size=(_ROWS, 1)),
      "t": rng.choice([b"x", b"y"], size=(_ROWS, 1)),
      "i": rng.randint(0, 4, size=(_ROWS, 1)).astype(np.int64),
      "w": (1.0 + rng.rand(_ROWS, 1)).astype(np.float32),
  }


def _labels(kind):
  n = _features()["n"]
  if kind == "regression":
    return 2.0 * n + 1.0
  if kind == "vocab":
    return np.where(n > 0.5, b"hi", b"lo")
  return (n > 0.5).astype(np.int64)


def _input_fn(kind, epochs=None, labels=True):
  def input_fn():
    data = (_features(), _labels(kind)) if labels else _features()
    dataset = tf.data.Dataset.from_tensor_slices(data)
    return dataset.repeat(epochs).batch(16)
  return input_fn


def _config(**kwargs):
  return harness.RunConfig(tf_random_seed=1, **kwargs)


def _every_column_kind(vocab_file):
  """One column of each tf.feature_column kind (dense forms for a DNN)."""
  n = _FC.numeric_column("n")
  s = _FC.categorical_column_with_vocabulary_list("s", ["a", "b", "c"])
  t = _FC.categorical_column_with_vocabulary_file("t", vocab_file)
  i = _FC.categorical_column_with_identity("i", 4)
  h = _FC.categorical_column_with_hash_bucket("s", 5)
  crossed = _FC.crossed_column(["s", _FC.bucketized_column(n, [0.5])], 7)
  weighted = _FC.weighted_categorical_column(i, "w")
  linear_columns = [n, _FC.bucketized_column(n, [0.3, 0.6]), s, t, crossed,
                    weighted]
  dense = [n, _FC.bucketized_column(n, [0.3, 0.6]), _FC.embedding_column(s, 2),
           _FC.indicator_column(t), _FC.indicator_column(h),
           _FC.indicator_column(crossed), _FC.embedding_column(weighted, 2)]
  with tf.Graph().as_default():  # TF refuses them eagerly (2.15 too).
    shared = _FC.shared_embeddings(
        [_FC.categorical_column_with_vocabulary_list("s", ["a", "b"]),
         _FC.categorical_column_with_vocabulary_list("t", ["x", "y"])], 3)
  return linear_columns, dense + list(shared)


class CannedEstimatorsTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.vocab_file = self.create_tempfile(content="x\ny\n").full_path

  def _train_eval_predict(self, est, kind, steps=4):
    est.train(_input_fn(kind), steps=steps)
    metrics = est.evaluate(_input_fn(kind, epochs=1), steps=2)
    self.assertEqual(metrics["global_step"], steps)
    self.assertTrue(np.isfinite(metrics["loss"]), metrics)
    prediction = next(est.predict(_input_fn(kind, epochs=1, labels=False)))
    return metrics, prediction

  def test_steps_per_loop_trains_with_one_loss_summary(self):
    # The head's "loss" summary is made inside the loop body; harness must
    # not add a second one (TF: "Duplicate tag loss found in summary").
    model_dir = self.create_tempdir().full_path
    est = harness.DNNRegressor(
        hidden_units=[4], feature_columns=[_FC.numeric_column("n")],
        model_dir=model_dir, config=_config(steps_per_loop=5,
                                            save_summary_steps=5))
    est.train(_input_fn("regression"), steps=10)
    self.assertEqual(est.get_variable_value("global_step"), 10)
    steps = conftest.summary_steps(model_dir, "loss")
    self.assertEqual(steps, [5, 10])

  def test_every_feature_column_kind_trains(self):
    linear_columns, dnn_columns = _every_column_kind(self.vocab_file)
    est = harness.DNNLinearCombinedClassifier(
        linear_feature_columns=linear_columns,
        dnn_feature_columns=dnn_columns, dnn_hidden_units=[4],
        model_dir=self.create_tempdir().full_path, config=_config())
    metrics, prediction = self._train_eval_predict(est, "binary")
    self.assertIn("auc", metrics)
    self.assertEqual(prediction["probabilities"].shape, (2,))
    names = est.get_variable_names()
    for name in ("linear/linear_model/n_bucketized_X_s/weights",
                 "linear/linear_model/i_weighted_by_w/weights",
                 "linear/linear_model/t/weights", "s_t_shared_embedding",
                 "dnn/input_from_feature_columns/input_layer/"
                 "s_embedding/embedding_weights",
                 "training/Ftrl/linear/linear_model/t/weights/accumulator"):
      self.assertIn(name, names)

  @parameterized.parameters("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD")
  def test_optimizer_names(self, name):
    est = harness.DNNRegressor(
        hidden_units=[3], feature_columns=[_FC.numeric_column("n")],
        optimizer=name, model_dir=self.create_tempdir().full_path,
        config=_config())
    est.train(_input_fn("regression"), steps=2)
    self.assertEqual(est.get_variable_value("global_step"), 2)
    self.assertTrue(any(v.startswith(f"training/{name}".replace(
        "RMSProp", "RMSprop")) for v in est.get_variable_names()))

  def test_optimizer_instance_and_callable(self):
    for optimizer in (tf.keras.optimizers.legacy.Adam(0.01),
                      lambda: tf.keras.optimizers.legacy.SGD(0.1)):
      est = harness.LinearRegressor(
          feature_columns=[_FC.numeric_column("n")], optimizer=optimizer,
          model_dir=self.create_tempdir().full_path, config=_config())
      est.train(_input_fn("regression"), steps=3)
      self.assertEqual(est.get_variable_value("global_step"), 3)
      # A second train() builds a new graph: the instance still works.
      est.train(_input_fn("regression"), steps=2)
      self.assertEqual(est.get_variable_value("global_step"), 5)

  def test_bad_optimizers_say_why(self):
    est = harness.DNNRegressor(
        hidden_units=[3], feature_columns=[_FC.numeric_column("n")],
        optimizer="Adamax", model_dir=self.create_tempdir().full_path)
    with self.assertRaisesRegex(ValueError, "Unsupported optimizer name: "
                                "Adamax.*'Adagrad'"):
      est.train(_input_fn("regression"), steps=1)
    est = harness.LinearRegressor(
        feature_columns=[_FC.numeric_column("n")],
        optimizer=tf.compat.v1.train.FtrlOptimizer(0.1),
        model_dir=self.create_tempdir().full_path)
    with self.assertRaisesRegex(ValueError, "not a tf.keras.optimizers.Opt"
                                ".*tf.compat.v1.estimator.* classes take"):
      est.train(_input_fn("regression"), steps=1)

  def test_dropout_batch_norm_activation(self):
    est = harness.DNNClassifier(
        hidden_units=[4, 3], feature_columns=[_FC.numeric_column("n")],
        activation_fn=tf.nn.tanh, dropout=0.2, batch_norm=True,
        model_dir=self.create_tempdir().full_path, config=_config())
    self._train_eval_predict(est, "binary")
    mean = est.get_variable_value(
        "dnn/hiddenlayer_0/batchnorm_0/moving_mean")
    self.assertEqual(mean.shape, (4,))
    self.assertTrue(np.any(mean != 0), "batch-norm statistics never updated")

  def test_label_vocabulary_and_weight_column(self):
    est = harness.LinearClassifier(
        feature_columns=[_FC.numeric_column("n")],
        label_vocabulary=["lo", "hi"],
        weight_column=_FC.numeric_column("w"),
        model_dir=self.create_tempdir().full_path, config=_config())
    _, prediction = self._train_eval_predict(est, "vocab", steps=20)
    self.assertIn(prediction["classes"][0], (b"lo", b"hi"))
    self.assertEqual(list(prediction["all_classes"]), [b"lo", b"hi"])

  def test_loss_reduction_sum(self):
    kwargs = dict(feature_columns=[_FC.numeric_column("n")], config=_config())
    mean = harness.LinearRegressor(model_dir=self.create_tempdir().full_path,
                                   **kwargs)
    mean.train(_input_fn("regression"), steps=1)
    total = harness.LinearRegressor(
        model_dir=mean.model_dir,
        loss_reduction=tf.keras.losses.Reduction.SUM, **kwargs)
    got_mean = mean.evaluate(_input_fn("regression", epochs=1), steps=1)
    got_sum = total.evaluate(_input_fn("regression", epochs=1), steps=1)
    np.testing.assert_allclose(got_sum["loss"], 16 * got_mean["loss"],
                               rtol=1e-5)
    np.testing.assert_allclose(got_sum["average_loss"],
                               got_mean["average_loss"], rtol=1e-6)

  def test_sparse_combiner_mean_halves_two_ids(self):
    column = _FC.categorical_column_with_vocabulary_list("s", ["a", "b", "c"])
    model_dir = self.create_tempdir().full_path

    def two_ids_input_fn():
      features = {"s": tf.constant([["a", "b"]] * 16)}
      return tf.data.Dataset.from_tensors(
          (features, tf.ones([16, 1]))).repeat()

    by_sum = harness.LinearRegressor(feature_columns=[column],
                                     model_dir=model_dir, config=_config())
    by_sum.train(two_ids_input_fn, steps=3)
    by_mean = harness.LinearRegressor(feature_columns=[column],
                                      sparse_combiner="mean",
                                      model_dir=model_dir, config=_config())
    bias = by_sum.get_variable_value("linear/linear_model/bias_weights")[0]
    take = lambda est: next(est.predict(  # pylint: disable=g-long-lambda
        lambda: tf.data.Dataset.from_tensors(
            {"s": tf.constant([["a", "b"]])})))["predictions"][0]
    np.testing.assert_allclose(take(by_sum) - bias,
                               2 * (take(by_mean) - bias), rtol=1e-5)
    with self.assertRaisesRegex(ValueError, "sparse_combiner='max'"):
      harness.LinearRegressor(feature_columns=[column], sparse_combiner="max",
                              model_dir=model_dir).train(two_ids_input_fn,
                                                         steps=1)

  def test_warm_start_remaps_vocabulary(self):
    old_vocab = self.create_tempfile(content="a\nb\n").full_path
    new_vocab = self.create_tempfile(content="b\nc\na\n").full_path
    old = harness.LinearRegressor(
        feature_columns=[_FC.categorical_column_with_vocabulary_file(
            "s", old_vocab)],
        model_dir=self.create_tempdir().full_path, config=_config())
    old.train(_input_fn("regression"), steps=5)
    old_weights = old.get_variable_value("linear/linear_model/s/weights")
    name = "linear/linear_model/s/weights"
    settings = harness.WarmStartSettings(
        old.model_dir, vars_to_warm_start=".*",
        var_name_to_vocab_info={name: harness.VocabInfo(
            new_vocab=new_vocab, new_vocab_size=3, num_oov_buckets=0,
            old_vocab=old_vocab)})
    new = harness.LinearRegressor(
        feature_columns=[_FC.categorical_column_with_vocabulary_file(
            "s", new_vocab)],
        optimizer=tf.keras.optimizers.legacy.SGD(0.0),
        warm_start_from=settings,
        model_dir=self.create_tempdir().full_path, config=_config())
    new.train(_input_fn("regression"), steps=1)
    got = new.get_variable_value(name)
    np.testing.assert_allclose(got[0], old_weights[1])  # b
    np.testing.assert_allclose(got[2], old_weights[0])  # a
    np.testing.assert_allclose(got[1], [0.0])  # c: new, initialised


class V1ClassesTest(absltest.TestCase):

  def test_v1_classes_use_v1_optimizers_and_slot_names(self):
    self.assertIs(tf.compat.v1.estimator.DNNClassifier, dnn.DNNClassifierV1)
    est = tf.compat.v1.estimator.DNNLinearCombinedClassifier(
        linear_feature_columns=[_FC.numeric_column("n")],
        dnn_feature_columns=[_FC.numeric_column("n")], dnn_hidden_units=[3],
        model_dir=self.create_tempdir().full_path, config=_config())
    est.train(_input_fn("binary"), steps=3)
    names = est.get_variable_names()
    self.assertEqual(est.get_variable_value("global_step"), 3)
    # Partitioned in the graph (`.../kernel/part_0`, as 2.15's v1 classes),
    # saved under the whole variable's name.
    for name in ("dnn/hiddenlayer_0/kernel",
                 "dnn/hiddenlayer_0/kernel/Adagrad",
                 "linear/linear_model/n/weights/Ftrl_1"):
      self.assertIn(name, names)
    self.assertFalse([n for n in names if n.startswith("training/")])
    metrics = est.evaluate(_input_fn("binary", epochs=1), steps=2)
    self.assertIn("accuracy", metrics)

  def test_v1_shared_embeddings_need_a_v1_class(self):
    with tf.Graph().as_default():
      shared = tf.compat.v1.feature_column.shared_embedding_columns(
          [_FC.categorical_column_with_vocabulary_list("t", ["x", "y"]),
           _FC.categorical_column_with_vocabulary_list("s", ["a", "b"])], 2)
    model_dir = self.create_tempdir().full_path
    v2 = harness.DNNClassifier(hidden_units=[2], feature_columns=shared,
                               model_dir=model_dir, config=_config())
    with self.assertRaisesRegex(ValueError, "feature column from TensorFlow "
                                "v1.*tf.compat.v1.estimator"):
      v2.train(_input_fn("binary"), steps=1)
    v1 = tf.compat.v1.estimator.DNNClassifier(
        hidden_units=[2], feature_columns=shared, model_dir=model_dir,
        config=_config())
    v1.train(_input_fn("binary"), steps=2)
    self.assertIn("dnn/input_from_feature_columns/input_layer/"
                  "s_t_shared_embedding/embedding_weights",
                  v1.get_variable_names())

  def test_v1_batch_norm_names_and_updates(self):
    est = tf.compat.v1.estimator.DNNRegressor(
        hidden_units=[3], feature_columns=[_FC.numeric_column("n")],
        batch_norm=True, model_dir=self.create_tempdir().full_path,
        config=_config())
    est.train(_input_fn("regression"), steps=3)
    mean = est.get_variable_value("dnn/batchnorm_0/moving_mean")
    self.assertEqual(mean.shape, (3,))
    self.assertTrue(np.any(mean != 0), "batch-norm statistics never updated")

  def test_v1_baseline_and_linear_train(self):
    for est in (tf.compat.v1.estimator.BaselineRegressor(
        model_dir=self.create_tempdir().full_path, config=_config()),
                tf.compat.v1.estimator.LinearRegressor(
                    feature_columns=[_FC.numeric_column("n")],
                    model_dir=self.create_tempdir().full_path,
                    config=_config())):
      est.train(_input_fn("regression"), steps=2)
      self.assertEqual(est.get_variable_value("global_step"), 2)


class LogitFnsTest(absltest.TestCase):

  def test_logit_fn_builders_in_a_model_fn(self):
    experimental = tf.compat.v1.estimator.experimental
    column = _FC.numeric_column("n")

    def model_fn(features, labels, mode, config):
      with tf.compat.v1.variable_scope("dnn"):
        logits = experimental.call_logit_fn(
            experimental.dnn_logit_fn_builder(
                units=3, hidden_units=[4], feature_columns=[column],
                activation_fn=tf.nn.relu, dropout=None,
                input_layer_partitioner=None, batch_norm=False),
            features, mode, None, config)
      with tf.compat.v1.variable_scope("linear"):
        logits += experimental.call_logit_fn(
            experimental.linear_logit_fn_builder(3, [column]), features,
            mode, None, config)
      optimizer = tf.compat.v1.train.AdagradOptimizer(0.1)
      return harness.MultiClassHead(3).create_estimator_spec(
          features=features, mode=mode, logits=logits, labels=labels,
          train_op_fn=lambda loss: optimizer.minimize(
              loss, global_step=tf.compat.v1.train.get_global_step()))

    est = harness.Estimator(model_fn, model_dir=self.create_tempdir().full_path,
                            config=_config())
    est.train(_input_fn("binary"), steps=2)
    names = est.get_variable_names()
    for name in ("dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
                 "linear/linear_model/n/weights",
                 "linear/linear_model/bias_weights"):
      self.assertIn(name, names)
    with self.assertRaisesRegex(ValueError, "logit_fn should return a Tensor"):
      experimental.call_logit_fn(lambda features: [1], {}, "train", None,
                                 None)


class BaselineTest(absltest.TestCase):

  def test_baseline_classifier_learns_the_label_mix(self):
    est = harness.BaselineClassifier(
        n_classes=3, optimizer=tf.keras.optimizers.legacy.SGD(0.5),
        model_dir=self.create_tempdir().full_path, config=_config())

    def input_fn():
      labels = tf.constant([[0], [1], [1], [1]], tf.int64)
      return tf.data.Dataset.from_tensors(
          ({"n": tf.zeros([4, 1])}, labels)).repeat()

    est.train(input_fn, steps=200)
    self.assertEqual(est.get_variable_names().count("baseline/bias"), 1)
    probabilities = next(est.predict(
        lambda: tf.data.Dataset.from_tensors({"n": tf.zeros([1, 1])})))[
            "probabilities"]
    np.testing.assert_allclose(probabilities, [0.25, 0.75, 0.0], atol=0.05)


# tf.estimator 2.15's constructor signatures (parameter, default).
_RELU = tf.nn.relu
_SOB = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_SIGNATURES = {
    dnn.DNNClassifier: "hidden_units feature_columns model_dir=None "
                       "n_classes=2 weight_column=None label_vocabulary=None "
                       "optimizer='Adagrad' activation_fn=relu dropout=None "
                       "config=None warm_start_from=None "
                       "loss_reduction='sum_over_batch_size' batch_norm=False",
    dnn.DNNClassifierV1: "hidden_units feature_columns model_dir=None "
                         "n_classes=2 weight_column=None "
                         "label_vocabulary=None optimizer='Adagrad' "
                         "activation_fn=relu dropout=None "
                         "input_layer_partitioner=None config=None "
                         "warm_start_from=None loss_reduction='weighted_sum' "
                         "batch_norm=False",
    linear.LinearClassifier: "feature_columns model_dir=None n_classes=2 "
                             "weight_column=None label_vocabulary=None "
                             "optimizer='Ftrl' config=None "
                             "warm_start_from=None "
                             "loss_reduction='sum_over_batch_size' "
                             "sparse_combiner='sum'",
    linear.LinearEstimator: "head feature_columns model_dir=None "
                            "optimizer='Ftrl' config=None "
                            "sparse_combiner='sum' warm_start_from=None",
    dnn_linear_combined.DNNLinearCombinedClassifier: (
        "model_dir=None linear_feature_columns=None linear_optimizer='Ftrl' "
        "dnn_feature_columns=None dnn_optimizer='Adagrad' "
        "dnn_hidden_units=None dnn_activation_fn=relu dnn_dropout=None "
        "n_classes=2 weight_column=None label_vocabulary=None config=None "
        "warm_start_from=None loss_reduction='sum_over_batch_size' "
        "batch_norm=False linear_sparse_combiner='sum'"),
    baseline.BaselineRegressor: "model_dir=None label_dimension=1 "
                                "weight_column=None optimizer='Ftrl' "
                                "config=None "
                                "loss_reduction='sum_over_batch_size'",
}


def _describe(cls):
  words = []
  for name, parameter in list(inspect.signature(cls).parameters.items()):
    if parameter.default is inspect.Parameter.empty:
      words.append(name)
    elif callable(parameter.default):
      words.append(f"{name}={parameter.default.__name__}")
    else:
      words.append(f"{name}={parameter.default!r}")
  return " ".join(words)


class SurfaceTest(absltest.TestCase):

  def test_signatures_are_215s(self):
    for cls, want in _SIGNATURES.items():
      self.assertEqual(_describe(cls), want, cls.__name__)

  def test_submodules_are_attributes(self):
    code = ("import harness.canned as c; print(hasattr(c, 'head'), "
            "c.head.MultiClassHead is c.MultiClassHead, c.dnn.__name__)")
    result = subprocess.run([sys.executable, "-c", code],
                            env=conftest.child_env(), capture_output=True,
                            text=True, timeout=120, check=False)
    self.assertEqual(result.stdout.split(),
                     ["True", "True", "harness.canned.dnn"], result.stderr)

  def test_aliases(self):
    self.assertIs(tf.estimator.DNNClassifier, harness.DNNClassifier)
    self.assertIs(tf.estimator.MultiClassHead, harness.MultiClassHead)
    self.assertIs(tf.compat.v1.estimator.LinearRegressor,
                  linear.LinearRegressorV1)
    module = importlib.import_module(
        "tensorflow_estimator.python.estimator.canned.dnn_linear_combined")
    self.assertIs(module.DNNLinearCombinedClassifierV2,
                  harness.DNNLinearCombinedClassifier)
    self.assertIs(module.DNNLinearCombinedClassifier,
                  dnn_linear_combined.DNNLinearCombinedClassifierV1)
    heads = importlib.import_module(
        "tensorflow_estimator.python.estimator.head.regression_head")
    self.assertIs(heads.RegressionHead, harness.RegressionHead)
    head_utils = importlib.import_module(
        "tensorflow_estimator.python.estimator.head.head_utils")
    self.assertIsInstance(
        head_utils.binary_or_multi_class_head(3, None, None, "sum"),
        harness.MultiClassHead)
    with self.assertRaisesRegex(harness.errors.NotSupportedError,
                                "LinearSDCA"):
      tf.estimator.experimental.LinearSDCA  # pylint: disable=pointless-statement
    with self.assertRaisesRegex(harness.errors.NotSupportedError,
                                "BoostedTreesEstimator.*Decision Forests"):
      tf.estimator.BoostedTreesEstimator  # pylint: disable=pointless-statement


_MIRRORED_CHILD = """
import sys
import numpy as np
import harness
from harness._tf import tf
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
n = tf.feature_column.numeric_column("n")
def input_fn():
  x = np.linspace(0, 1, 64, dtype=np.float32).reshape(-1, 1)
  return tf.data.Dataset.from_tensor_slices(({"n": x}, 2 * x + 1)).repeat(
      ).batch(16)
est = harness.DNNLinearCombinedRegressor(
    linear_feature_columns=[n], dnn_feature_columns=[n], dnn_hidden_units=[3],
    model_dir=sys.argv[1], config=harness.RunConfig(
        train_distribute=strategy, tf_random_seed=1))
est.train(input_fn, steps=4)
metrics = est.evaluate(input_fn, steps=2)
print("REPLICAS", strategy.num_replicas_in_sync, "STEP",
      est.get_variable_value("global_step"), "LOSS", metrics["average_loss"])
"""


@pytest.mark.slow  # A child process; test_canned_programs covers Mirrored too.
class MirroredTest(absltest.TestCase):

  def test_dnn_linear_combined_under_mirrored_strategy(self):
    model_dir = self.create_tempdir().full_path
    command = [sys.executable, "-c", _MIRRORED_CHILD, model_dir]
    result = subprocess.run(command, env=conftest.child_env(),
                            capture_output=True, text=True, timeout=300,
                            check=False)
    tail = (result.stdout + result.stderr)[-3000:]
    self.assertEqual(result.returncode, 0, tail)
    words = result.stdout.split()
    self.assertEqual(words[words.index("REPLICAS") + 1], "2", tail)
    self.assertEqual(words[words.index("STEP") + 1], "4", tail)
    self.assertTrue(np.isfinite(float(words[words.index("LOSS") + 1])), tail)
    self.assertIn("training/Adagrad/dnn/logits/kernel/accumulator",
                  tf.train.list_variables(model_dir).__repr__())


if __name__ == "__main__":
  absltest.main()
