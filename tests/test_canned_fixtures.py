"""Model_dirs written by tf.estimator 2.15's canned estimators, on harness.

For each of tests/data/fixtures/canned215/: the same constructor call builds
the same variables (names and shapes, optimizer slots included), restores
the model_dir by name, evaluates to the same metrics, predicts the same
values, and resumes training at step 1000.
"""

import json
import shutil

import numpy as np
from absl.testing import absltest
from absl.testing import parameterized

import harness
from harness._tf import tf
from tests import conftest

FIXTURES = conftest.FIXTURES_DIR / "canned215"
_TRAIN_ROWS = 1500
_FC = tf.feature_column


def _columns():
  x = _FC.numeric_column("x", shape=[64])
  shade = _FC.categorical_column_with_vocabulary_list(
      "shade", ["light", "dark"])
  return x, shade


def _config():
  return harness.RunConfig(tf_random_seed=1, save_checkpoints_steps=1000,
                           keep_checkpoint_max=1)


# Fixture name -> (constructor(model_dir), label(digit) -> label array).
def _dnn_classifier(model_dir):
  x, _ = _columns()
  return harness.DNNClassifier(hidden_units=[32, 16], feature_columns=[x],
                               n_classes=10, model_dir=model_dir,
                               config=_config())


def _linear_classifier_binary(model_dir):
  x, shade = _columns()
  return harness.LinearClassifier(feature_columns=[x, shade],
                                  weight_column="w", model_dir=model_dir,
                                  config=_config())


def _dnn_linear_combined_classifier(model_dir):
  x, shade = _columns()
  return harness.DNNLinearCombinedClassifier(
      linear_feature_columns=[shade],
      dnn_feature_columns=[x, _FC.embedding_column(shade, 4)],
      dnn_hidden_units=[16], n_classes=10, model_dir=model_dir,
      config=_config())


def _dnn_regressor(model_dir):
  x, _ = _columns()
  return harness.DNNRegressor(hidden_units=[16, 8], feature_columns=[x],
                              model_dir=model_dir, config=_config())


def _linear_regressor(model_dir):
  x, shade = _columns()
  return harness.LinearRegressor(feature_columns=[x, shade],
                                 model_dir=model_dir, config=_config())


def _digit(label):
  return label.astype(np.int64)


def _high(label):
  return (label >= 5).astype(np.int64)


def _scaled(label):
  return (label / 9.0).astype(np.float32).reshape(-1, 1)


CASES = {
    "dnn_classifier": (_dnn_classifier, _digit),
    "linear_classifier_binary": (_linear_classifier_binary, _high),
    "dnn_linear_combined_classifier": (_dnn_linear_combined_classifier,
                                       _digit),
    "dnn_regressor": (_dnn_regressor, _scaled),
    "linear_regressor": (_linear_regressor, _scaled),
}


def _data(label_fn):
  """Returns (features, labels) of every row, as the fixtures were fed."""
  data = np.load(FIXTURES / "data.npz")
  features = {"x": (data["x"].reshape(-1, 64) / 16.0).astype(np.float32),
              "shade": data["shade"].astype(np.bytes_),
              "w": data["weight"].astype(np.float32)}
  return features, label_fn(data["label"])


def _input_fn(label_fn, train, with_labels=True):
  def input_fn():
    features, labels = _data(label_fn)
    rows = slice(0, _TRAIN_ROWS) if train else slice(_TRAIN_ROWS, None)
    features = {k: v[rows] for k, v in features.items()}
    if not with_labels:
      return tf.data.Dataset.from_tensor_slices(features).batch(64)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels[rows]))
    return dataset.repeat().batch(32) if train else dataset.batch(64)
  return input_fn


def _expected(name):
  return json.loads((FIXTURES / f"{name}.expected.json").read_text())


@absltest.skipUnless(FIXTURES.is_dir(), f"fixture dir {FIXTURES} is absent "
                     "(the repository ships it: restore tests/data)")
class CannedVariablesTest(parameterized.TestCase):
  """The TRAIN graph holds exactly the fixture's variables."""

  @parameterized.named_parameters((name, name) for name in CASES)
  def test_train_graph_variables_match_215(self, name):
    build, label_fn = CASES[name]
    est = build(self.create_tempdir().full_path)
    with tf.Graph().as_default():
      tf.compat.v1.train.get_or_create_global_step()
      features, labels = tf.compat.v1.data.make_one_shot_iterator(
          _input_fn(label_fn, train=True)()).get_next()
      spec = est.model_fn(features, labels, harness.ModeKeys.TRAIN,
                          est.config)
      self.assertIsNotNone(spec.train_op)
      got = {v.op.name: v.shape.as_list()
             for v in tf.compat.v1.global_variables()}
    self.assertEqual(got, _expected(name)["variables"])


@absltest.skipUnless(FIXTURES.is_dir(), f"fixture dir {FIXTURES} is absent "
                     "(the repository ships it: restore tests/data)")
class CannedFixtureTest(parameterized.TestCase):
  """Restore, evaluate, predict and resume each 2.15 model_dir."""

  def _estimator(self, name):
    model_dir = self.create_tempdir().full_path
    shutil.copytree(FIXTURES / name, model_dir, dirs_exist_ok=True)
    build, label_fn = CASES[name]
    return build(model_dir), label_fn

  @parameterized.named_parameters((name, name) for name in CASES)
  def test_evaluate_predict_resume(self, name):
    est, label_fn = self._estimator(name)
    want = _expected(name)
    self.assertEqual(est.latest_checkpoint().rsplit("-", 1)[1], "1000")

    metrics = est.evaluate(_input_fn(label_fn, train=False))
    self.assertEqual(sorted(metrics), sorted(want["evaluate"]))
    for key, value in want["evaluate"].items():
      np.testing.assert_allclose(metrics[key], value, rtol=1e-5, atol=1e-7,
                                 err_msg=f"{name} evaluate[{key!r}]")

    predictions = est.predict(_input_fn(label_fn, train=False,
                                        with_labels=False))
    for row, expected in enumerate(want["predict_eval_first5"]):
      got = next(predictions)
      self.assertEqual(sorted(got), sorted(expected), f"{name} row {row}")
      for key, value in expected.items():
        got_value = got[key]
        if np.asarray(got_value).dtype.kind in "SO":
          got_value = [v.decode() if isinstance(v, bytes) else v
                       for v in np.asarray(got_value).tolist()]
          self.assertEqual(got_value, value, f"{name} row {row} {key}")
        else:
          np.testing.assert_allclose(
              got_value, value, rtol=1e-5, atol=1e-6,
              err_msg=f"{name} row {row} predict[{key!r}]")

    est.train(_input_fn(label_fn, train=True), steps=50)
    self.assertEqual(est.get_variable_value("global_step"), 1050)
    self.assertEqual(est.latest_checkpoint().rsplit("-", 1)[1], "1050")
    # Optimizer state resumed: accumulators (+= g^2) only grow from the
    # restored values (re-initialised ones would restart at 0.1).
    restored = str(FIXTURES / name / "model.ckpt-1000")
    for slot in [v for v in want["variables"] if v.endswith("/accumulator")]:
      before = tf.train.load_variable(restored, slot)
      self.assertTrue(np.all(est.get_variable_value(slot) >= before - 1e-6),
                      f"{name}: {slot} restarted instead of resuming")
      self.assertGreater(float(np.max(before)), 0.11, slot)
    # What harness wrote holds exactly 2.15's variables (so 2.15 restores it).
    saved = dict(tf.train.list_variables(est.latest_checkpoint()))
    self.assertEqual(saved, want["variables"])
    after = est.evaluate(_input_fn(label_fn, train=False))
    self.assertEqual(after["global_step"], 1050)
    self.assertTrue(np.isfinite(after["loss"]), after)


@absltest.skipUnless(FIXTURES.is_dir(), f"fixture dir {FIXTURES} is absent "
                     "(the repository ships it: restore tests/data)")
class CannedWarmStartTest(absltest.TestCase):

  def test_warm_start_a_new_model_from_a_215_model_dir(self):
    x, _ = _columns()
    est = harness.DNNClassifier(
        hidden_units=[32, 16], feature_columns=[x], n_classes=10,
        optimizer=tf.keras.optimizers.legacy.SGD(0.0),
        warm_start_from=str(FIXTURES / "dnn_classifier"),
        model_dir=self.create_tempdir().full_path, config=_config())
    est.train(_input_fn(_digit, train=True), steps=1)
    old = str(FIXTURES / "dnn_classifier" / "model.ckpt-1000")
    for name in ("dnn/hiddenlayer_0/kernel", "dnn/logits/bias"):
      np.testing.assert_allclose(est.get_variable_value(name),
                                 tf.train.load_variable(old, name), err_msg=name)
    self.assertEqual(est.get_variable_value("global_step"), 1)

if __name__ == "__main__":
  absltest.main()
