"""experimental.RNNClassifier / RNNEstimator: 2.15 model_dirs restore.

tests/fixtures/rnn215/ holds what real tf.estimator 2.15 wrote (see its
README.md and make_fixture.py): for each model, the same constructor call
built with harness names the same variables with the same shapes, evaluates
the 2.15 checkpoint to the same metrics, predicts the same values, and goes
on training from it.
"""

import importlib.util
import json
import pathlib
import shutil

import numpy as np
from absl.testing import absltest
from absl.testing import parameterized

import harness
import harness.compat  # pylint: disable=g-bad-import-order
from harness import errors
from harness import experimental
from harness._tf import tf
from harness.canned import rnn

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "rnn215"


def _load_fixture_program():
  spec = importlib.util.spec_from_file_location(
      "rnn215_make_fixture", FIXTURES / "make_fixture.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


FIXTURE = _load_fixture_program()


def _expected(name):
  return json.loads((FIXTURES / name / "expected.json").read_text())


class Rnn215FixtureTest(parameterized.TestCase):

  def _estimator(self, name):
    model_dir = self.create_tempdir().full_path
    shutil.rmtree(model_dir)
    shutil.copytree(FIXTURES / name, model_dir)
    return FIXTURE.build(name, model_dir, experimental, harness, tf,
                         harness.RunConfig)

  @parameterized.parameters(*FIXTURE.MODELS)
  def test_restores_215_model_dir(self, name):
    est = self._estimator(name)
    expected = _expected(name)
    actual = FIXTURE.results(est, name, FIXTURE.data(), tf)
    self.assertEqual(set(expected["metrics"]), set(actual["metrics"]))
    for key, value in expected["metrics"].items():
      np.testing.assert_allclose(actual["metrics"][key], value, rtol=1e-5,
                                 err_msg=key)
    self.assertEqual(len(expected["predictions"]), len(actual["predictions"]))
    for want, got in zip(expected["predictions"], actual["predictions"]):
      self.assertEqual(set(want), set(got))
      for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)

  @parameterized.parameters(*FIXTURE.MODELS)
  def test_graph_variables_match_215(self, name):
    est = self._estimator(name)
    est.train(FIXTURE.input_fn_for(FIXTURE.data(), FIXTURE.label_key(name),
                                   tf), steps=1)
    self.assertEqual(FIXTURE.STEPS + 1,
                     est.get_variable_value("global_step"))
    shapes = {n: list(s) for n, s in
              tf.train.list_variables(est.latest_checkpoint())}
    self.assertEqual(_expected(name)["variables"], shapes)


class RnnArgumentsTest(absltest.TestCase):

  def test_public_paths(self):
    self.assertIs(experimental.RNNClassifier, rnn.RNNClassifier)
    self.assertIs(experimental.RNNEstimator, rnn.RNNEstimator)
    self.assertIs(tf.estimator.experimental.RNNClassifier, rnn.RNNClassifier)
    module = importlib.import_module(
        "tensorflow_estimator.python.estimator.canned.rnn")
    self.assertIs(module.RNNEstimator, rnn.RNNEstimator)

  def test_rnn_cell_fn_excludes_units_and_cell_type(self):
    sequence, _ = FIXTURE.columns()
    with self.assertRaisesRegex(
        ValueError, "^units and cell_type must not be specified when using "
        "rnn_cell_fn$"):
      rnn.RNNClassifier(sequence_feature_columns=sequence, units=[2],
                        rnn_cell_fn=lambda: tf.keras.layers.LSTMCell(2))

  def test_model_config_round_trip(self):
    sequence, context = FIXTURE.columns()
    model = rnn.RNNModel(tf.keras.layers.SimpleRNN(3), 4, sequence, context,
                         activation="sigmoid", name="rnn_model")
    config = model.get_config()
    self.assertEqual(config, rnn.RNNModel.from_config(config).get_config())
    self.assertEqual(4, config["units"])
    self.assertLen(config["context_feature_columns"], 1)

  def test_trains_on_one_example_with_static_batch_size(self):
    price = tf.feature_column.sequence_numeric_column("price")

    def input_fn():
      features = {"price": tf.sparse.SparseTensor(
          values=[1.0], indices=[[0, 0]], dense_shape=[1, 1])}
      return features, tf.constant([[1]])

    est = rnn.RNNClassifier(
        sequence_feature_columns=[price], units=[2],
        model_dir=self.create_tempdir().full_path)
    est.train(input_fn, steps=1)
    self.assertEqual(1, est.get_variable_value("global_step"))

  def test_return_sequences_is_not_provided(self):
    sequence, _ = FIXTURE.columns()
    with self.assertRaisesRegex(errors.NotSupportedError,
                                "return_sequences=True"):
      rnn.RNNClassifier(sequence_feature_columns=sequence, units=[2],
                        return_sequences=True)


if __name__ == "__main__":
  absltest.main()
