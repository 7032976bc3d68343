"""harness.keras_lib.model_to_estimator: the models tf.estimator 2.15 took.

Functional models with several inputs and outputs, subclassed models, both
checkpoint formats, the warm start from the Keras weights, and the model
rebuilt on the features' own shapes (through training and export).
"""

import contextlib
import io
import os
import re

import numpy as np
from absl.testing import absltest

from harness import export as export_lib
from harness import keras_lib
from harness._tf import tf
from tests import conftest

_ROWS = 64


def _multi_io_model():
  tf.keras.utils.set_random_seed(0)
  a = tf.keras.Input((3,), name="a")
  b = tf.keras.Input((2,), name="b")
  hidden = tf.keras.layers.Dense(8, activation="relu", name="hidden")(
      tf.keras.layers.Concatenate()([a, b]))
  y = tf.keras.layers.Dense(1, name="y")(hidden)
  c = tf.keras.layers.Dense(3, activation="softmax", name="c")(hidden)
  model = tf.keras.Model([a, b], [y, c])
  model.compile(tf.keras.optimizers.legacy.SGD(0.05),
                loss={"y": "mse", "c": "sparse_categorical_crossentropy"},
                metrics={"y": ["mae"], "c": ["accuracy"]})
  return model


def _multi_io_data():
  rng = np.random.RandomState(0)
  a = rng.normal(size=(_ROWS, 3)).astype(np.float32)
  b = rng.normal(size=(_ROWS, 2)).astype(np.float32)
  y = (a.sum(axis=1, keepdims=True) - b[:, :1]).astype(np.float32)
  c = (a[:, 0] > 0).astype(np.int64) + (b[:, 0] > 0).astype(np.int64)
  return {"a": a, "b": b}, {"y": y, "c": c}


def _dataset_input_fn(features, labels, repeat=False):
  def input_fn():
    ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    return ds.repeat() if repeat else ds

  return input_fn


class _Subclassed(tf.keras.Model):

  def __init__(self, units=1, **kwargs):
    super().__init__(**kwargs)
    self.units = units
    self.dense = tf.keras.layers.Dense(units)

  def call(self, inputs):
    return self.dense(inputs)

  def get_config(self):
    return {"units": self.units}


class ModelToEstimatorTest(absltest.TestCase):

  def test_multi_io_losses_summed_metrics_per_output_and_warm_start(self):
    model = _multi_io_model()
    features, labels = _multi_io_data()
    keras_results = model.evaluate(
        [features["a"], features["b"]], [labels["y"], labels["c"]],
        batch_size=_ROWS, verbose=0, return_dict=True)
    est = keras_lib.model_to_estimator(
        keras_model=model, model_dir=self.create_tempdir().full_path,
        checkpoint_format="saver")
    # No checkpoint yet: evaluation starts from the Keras weights.
    results = est.evaluate(_dataset_input_fn(features, labels))
    self.assertEqual(
        {"loss", "global_step", "y_mae", "c_accuracy"}, set(results))
    np.testing.assert_allclose(keras_results["loss"], results["loss"],
                               atol=1e-4)
    np.testing.assert_allclose(keras_results["y_mae"], results["y_mae"],
                               atol=1e-4)
    np.testing.assert_allclose(keras_results["c_accuracy"],
                               results["c_accuracy"])
    est.train(_dataset_input_fn(features, labels, repeat=True), steps=40)
    trained = est.evaluate(_dataset_input_fn(features, labels))
    self.assertEqual(40, trained["global_step"])
    self.assertLess(trained["loss"], results["loss"])
    predictions = next(est.predict(
        _dataset_input_fn(features, labels), yield_single_examples=False))
    self.assertEqual({"y", "c"}, set(predictions))
    self.assertEqual((16, 3), predictions["c"].shape)

  def test_object_checkpoints_resume_to_max_steps(self):
    # The default format keeps the step under an object key, not
    # `global_step`; a second train(max_steps=) reads it (no NotFoundError).
    features, labels = _multi_io_data()
    model_dir = self.create_tempdir().full_path
    est = keras_lib.model_to_estimator(keras_model=_multi_io_model(),
                                       model_dir=model_dir)
    input_fn = _dataset_input_fn(features, labels, repeat=True)
    est.train(input_fn, max_steps=5)
    est.train(input_fn, max_steps=5)  # Already there: skipped.
    self.assertEqual(est.get_variable_value(
        "estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE"), 5)
    est.train(input_fn, max_steps=8)
    self.assertEqual(est.evaluate(_dataset_input_fn(features, labels),
                                  steps=1)["global_step"], 8)

  def test_wrong_input_key_raises_formatted_key_error(self):
    model = _multi_io_model()
    features, labels = _multi_io_data()
    est = keras_lib.model_to_estimator(
        keras_model=model, model_dir=self.create_tempdir().full_path)
    wrong = {"a": features["a"], "bee": features["b"]}
    with self.assertRaises(keras_lib.FormattedKeyError) as caught:
      est.train(_dataset_input_fn(wrong, labels), steps=1)
    self.assertIsInstance(caught.exception, KeyError)
    message = str(caught.exception)
    self.assertTrue(message.startswith(
        "The dictionary passed into features does not cover requested "
        "inputs keys defined in the keras model.\n"), message)
    self.assertIn("Missed keys: {'b'}", message)

  def test_subclassed_model_trains_with_saver_format(self):
    tf.keras.utils.set_random_seed(0)
    model = _Subclassed()
    model.compile(tf.keras.optimizers.legacy.SGD(0.1), loss="mse")
    x = np.random.RandomState(1).normal(size=(_ROWS, 4)).astype(np.float32)
    y = x @ np.array([[1.0], [-1.0], [0.5], [2.0]], np.float32)
    est = keras_lib.model_to_estimator(
        keras_model=model, model_dir=self.create_tempdir().full_path,
        checkpoint_format="saver")
    before = est.evaluate(_dataset_input_fn(x, y))
    est.train(_dataset_input_fn(x, y, repeat=True), steps=60)
    after = est.evaluate(_dataset_input_fn(x, y))
    self.assertLess(after["loss"], before["loss"] / 2)
    # The caller's model is left as it was (compiled, same optimizer).
    self.assertIsNotNone(model.optimizer)

  def test_subclassed_model_with_object_checkpoints_is_refused(self):
    model = _Subclassed()
    model.compile("sgd", loss="mse")
    with self.assertRaisesRegex(
        ValueError, "^Object-based checkpoints are currently not supported "
        "with subclassed models."):
      keras_lib.model_to_estimator(
          keras_model=model, model_dir=self.create_tempdir().full_path,
          checkpoint_format="checkpoint")

  def test_checkpoint_formats(self):
    for checkpoint_format in ("checkpoint", "saver"):
      with self.subTest(checkpoint_format):
        tf.keras.utils.set_random_seed(0)
        model = tf.keras.Sequential(
            [tf.keras.layers.Dense(1, input_shape=(4,), name="dense")])
        model.compile(tf.keras.optimizers.legacy.SGD(0.1), loss="mse")
        x = np.ones((8, 4), np.float32)
        est = keras_lib.model_to_estimator(
            keras_model=model, model_dir=self.create_tempdir().full_path,
            checkpoint_format=checkpoint_format)
        est.train(_dataset_input_fn(x, np.ones((8, 1), np.float32)), steps=2)
        names = est.get_variable_names()
        if checkpoint_format == "saver":
          self.assertIn("dense/kernel", names)
          continue
        self.assertNotIn("dense/kernel", names)
        # Object-based keys: Keras itself loads the Estimator's checkpoint.
        fresh = tf.keras.Sequential(
            [tf.keras.layers.Dense(1, input_shape=(4,))])
        fresh.load_weights(est.latest_checkpoint())
        kernel = [v for k, v in zip(names, map(est.get_variable_value, names))
                  if "kernel" in k and "OPTIMIZER" not in k]
        self.assertLen(kernel, 1)
        np.testing.assert_allclose(kernel[0], fresh.get_weights()[0])

  def test_model_rebuilt_on_feature_shapes_trains_and_exports(self):
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(10, activation="softmax", input_shape=(784,))])
    model.compile(tf.keras.optimizers.legacy.SGD(0.1),
                  loss="sparse_categorical_crossentropy")
    x = np.random.RandomState(2).uniform(size=(32, 1, 784)).astype(np.float32)
    y = np.random.RandomState(3).randint(0, 10, size=(32, 1))
    model_dir = self.create_tempdir().full_path
    est = keras_lib.model_to_estimator(keras_model=model, model_dir=model_dir)
    est.train(_dataset_input_fn(x, y), steps=2)
    name = model.input_names[0]

    def receiver():
      images = tf.compat.v1.placeholder(tf.float32, [None, 1, 784])
      return export_lib.ServingInputReceiver({name: images}, {name: images})

    export_dir = est.export_saved_model(
        os.path.join(model_dir, "export"), receiver)
    loaded = tf.saved_model.load(export_dir)
    out = loaded.signatures["serving_default"](**{name: tf.constant(x[:3])})
    self.assertEqual([3, 1, 10], list(next(iter(out.values())).shape))

  def test_uncompiled_model_raises_215_sentence(self):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    with self.assertRaisesRegex(
        ValueError, r"^The given keras model has not been compiled yet\."):
      keras_lib.model_to_estimator(
          keras_model=model, model_dir=self.create_tempdir().full_path)

  def test_keras_3_model_is_named_as_such(self):
    # Issue 39: was "Object-based checkpoints are currently not supported
    # with subclassed models" for a functional model of `import keras`.
    import keras  # Keras 3 (TensorFlow's own dependency).  # pylint: disable=g-import-not-at-top
    inputs = keras.Input((4,), name="x")
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile("sgd", "mse")
    with self.assertRaises(ValueError) as cm:
      keras_lib.model_to_estimator(
          keras_model=model, model_dir=self.create_tempdir().full_path)
    message = str(cm.exception)
    self.assertIn("keras_model is a Keras 3 model (keras.", message)
    self.assertIn("Fix: build the model with tf.keras after `import harness`",
                  message)
    self.assertNotIn("subclassed", message)


class ReadmeExampleTest(absltest.TestCase):

  def test_readme_multi_output_example_runs(self):
    readme = (conftest.REPO_ROOT / "README.md").read_text()
    section = readme.split("## Keras models (model_to_estimator)", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    self.assertIn('"/tmp/keras_multi"', code)
    model_dir = self.create_tempdir().full_path
    namespace = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      # pylint: disable-next=exec-used
      exec(code.replace('"/tmp/keras_multi"', repr(model_dir)), namespace)
    self.assertLen(namespace["model"].outputs, 2)
    printed = out.getvalue()
    self.assertIn("'kind_accuracy'", printed)
    self.assertIn("'loss'", printed)
    self.assertRegex(printed, r"'global_step': (np\.int64\()?100\b")


if __name__ == "__main__":
  absltest.main()
