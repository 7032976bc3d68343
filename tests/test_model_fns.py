"""Each example model_fn trains, evaluates, predicts and exports via Estimator."""

import os

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from harness import errors
from harness import export
from harness._tf import tf
from harness.cli import registry
from harness.estimator import Estimator
from harness.spec import ModeKeys
import model_fns
from model_fns import linear
from model_fns import mnist_cnn
from model_fns import mnist_dropout
from model_fns import mnist_mlp
from tests import conftest

_REAL_MNIST_DIR = conftest.MNIST_DIR  # Shipped in input_fns/data/mnist.

_SMALL_SYNTHETIC = {"train_examples": 512, "eval_examples": 128}


def _estimator(test, model_name, **params):
  all_params = registry.model_default_params(model_name)
  all_params.update(params)
  return Estimator(registry.resolve_model_fn(model_name),
                   model_dir=test.create_tempdir().full_path,
                   params=all_params)


class ModelFnTest(parameterized.TestCase):

  @parameterized.parameters(linear, mnist_cnn, mnist_dropout, mnist_mlp)
  def test_module_documents_its_command_and_defaults(self, module):
    self.assertIn("python -m harness.main", module.__doc__)
    self.assertIn("learning_rate", module.DEFAULT_PARAMS)
    self.assertIn(module.DEFAULT_PARAMS["optimizer"], model_fns.OPTIMIZERS)

  @parameterized.named_parameters(
      ("linear", "linear", "constant", {}),
      ("mnist_cnn", "mnist_cnn", "synthetic", _SMALL_SYNTHETIC),
      ("mnist_mlp", "mnist_mlp", "synthetic", _SMALL_SYNTHETIC),
      ("mnist_dropout", "mnist_dropout", "synthetic", _SMALL_SYNTHETIC),
  )
  def test_trains_and_evaluates(self, model_name, input_name, input_params):
    est = _estimator(self, model_name)
    make_input_fn = registry.resolve_input_fn(input_name)
    train_fn = make_input_fn(ModeKeys.TRAIN, batch_size=32,
                             params=input_params)
    eval_fn = make_input_fn(ModeKeys.EVAL, batch_size=32, params=input_params)

    est.train(train_fn, max_steps=1)
    before = est.evaluate(eval_fn, steps=4)
    est.train(train_fn, max_steps=40)
    after = est.evaluate(eval_fn, steps=4)

    self.assertEqual(before["global_step"], 1)
    self.assertEqual(after["global_step"], 40)
    self.assertLess(after["loss"], before["loss"])
    self.assertGreater(after["accuracy"], 0.5)
    self.assertEqual(os.path.basename(est.latest_checkpoint()), "model.ckpt-40")

    prediction = next(iter(est.predict(eval_fn)))
    if model_name == "linear":
      self.assertEqual(sorted(prediction), ["predictions"])
    else:
      self.assertEqual(sorted(prediction),
                       ["classes", "logits", "probabilities"])
      self.assertAlmostEqual(float(prediction["probabilities"].sum()), 1.0,
                             places=5)

  def test_linear_learns_identity_on_constant(self):
    est = _estimator(self, "linear")
    make_input_fn = registry.resolve_input_fn("constant")
    est.train(make_input_fn(ModeKeys.TRAIN), max_steps=100)
    metrics = est.evaluate(make_input_fn(ModeKeys.EVAL), steps=10)
    self.assertLess(metrics["mean_squared_error"], 1e-4)
    self.assertEqual(metrics["accuracy"], 1.0)

  def test_dropout_only_in_training(self):
    est = _estimator(self, "mnist_dropout", dropout_rate=0.9)
    make_input_fn = registry.resolve_input_fn("synthetic")
    params = dict(_SMALL_SYNTHETIC, eval_examples=16)
    est.train(make_input_fn(ModeKeys.TRAIN, batch_size=16, params=params),
              max_steps=2)
    predict_fn = make_input_fn(ModeKeys.PREDICT, batch_size=16, params=params)
    first = [p["logits"] for p in est.predict(predict_fn)]
    second = [p["logits"] for p in est.predict(predict_fn)]
    np.testing.assert_array_equal(np.stack(first), np.stack(second))

  @parameterized.parameters("sgd", "adagrad", "rmsprop", "ftrl", "adam")
  def test_optimizer_param(self, optimizer):
    est = _estimator(self, "linear", optimizer=optimizer, learning_rate=0.05)
    make_input_fn = registry.resolve_input_fn("constant")
    est.train(make_input_fn(ModeKeys.TRAIN), max_steps=3)
    self.assertEqual(est.get_variable_value("global_step"), 3)

  def test_unknown_optimizer_names_choices(self):
    est = _estimator(self, "linear", optimizer="lbfgs")
    make_input_fn = registry.resolve_input_fn("constant")
    with self.assertRaisesRegex(errors.ModelFnError,
                                "optimizer.*'lbfgs'.*adam"):
      est.train(make_input_fn(ModeKeys.TRAIN), max_steps=1)

  def test_mnist_cnn_on_real_digits(self):
    if not (_REAL_MNIST_DIR / "t10k-images-idx3-ubyte.gz").exists():
      self.skipTest(f"real MNIST IDX files not found at {_REAL_MNIST_DIR} "
                    "(the repository ships them: git checkout -- "
                    "input_fns/data/mnist)")
    est = _estimator(self, "mnist_cnn")
    make_input_fn = registry.resolve_input_fn("mnist_idx")
    kwargs = dict(data_dir=str(_REAL_MNIST_DIR), batch_size=64)
    est.train(make_input_fn(ModeKeys.TRAIN, **kwargs), max_steps=100)
    metrics = est.evaluate(make_input_fn(ModeKeys.EVAL, **kwargs), steps=8)
    self.assertGreater(metrics["accuracy"], 0.7)

  @parameterized.parameters(
      ("linear", {"x": [1, 1]}, "predictions"),
      ("mnist_cnn", {"image": [1, 28, 28, 1]}, "probabilities"),
  )
  def test_export_serves_predictions(self, model_name, shapes, output_key):
    est = _estimator(self, model_name)
    input_name = "constant" if model_name == "linear" else "synthetic"
    est.train(registry.resolve_input_fn(input_name)(
        ModeKeys.TRAIN, batch_size=8, params=_SMALL_SYNTHETIC), max_steps=2)
    receiver_fn = export.build_raw_serving_input_receiver_fn(
        {k: tf.zeros(s) for k, s in shapes.items()})
    export_dir = est.export_saved_model(
        self.create_tempdir().full_path, receiver_fn)
    loaded = tf.saved_model.load(export_dir)
    outputs = loaded.signatures["serving_default"](
        **{k: tf.ones(s) for k, s in shapes.items()})
    self.assertIn(output_key, outputs)
    self.assertEqual(outputs[output_key].shape[0], 1)


if __name__ == "__main__":
  absltest.main()
