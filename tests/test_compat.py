"""Legacy tf.estimator code on harness: `harness.compat` and `harness.run`.

The acceptance test runs tests/legacy_programs/legacy_regression.py, which
names only `tf.estimator.*`, unmodified under `python -m harness.run`, and
checks that the same model trained through harness directly gives the same
loss trajectory, metrics and predictions.
"""

import contextlib
import importlib
import io
import json
import os
import pathlib
import re
import runpy
import sys

import numpy as np
import pytest
from absl.testing import absltest
from absl.testing import parameterized

import harness
from harness import errors
import harness.compat  # pylint: disable=g-bad-import-order
from harness import run as run_lib
from harness._tf import tf
from tests import _support
from tests import conftest

_PROGRAMS = pathlib.Path(__file__).resolve().parent / "legacy_programs"
_TIMEOUT_SECS = 240


def _run_python(args, timeout=_TIMEOUT_SECS, env=None):
  """Runs `python args...` from the repository root (tests._support.run)."""
  return _support.run([sys.executable, *args], timeout_secs=timeout, env=env)


class NamespaceAliasTest(absltest.TestCase):
  """`tf.estimator` and friends resolve to harness in this process."""

  def test_tf_estimator_names_are_harness_objects(self):
    self.assertIs(tf.estimator.Estimator, harness.Estimator)
    self.assertIs(tf.estimator.RunConfig, harness.RunConfig)
    self.assertIs(tf.estimator.EstimatorSpec, harness.EstimatorSpec)
    self.assertIs(tf.estimator.ModeKeys, harness.ModeKeys)
    self.assertIs(tf.estimator.train_and_evaluate, harness.train_and_evaluate)
    self.assertIs(tf.estimator.LoggingTensorHook,
                  tf.compat.v1.train.LoggingTensorHook)
    self.assertIs(tf.estimator.export.build_raw_serving_input_receiver_fn,
                  harness.export.build_raw_serving_input_receiver_fn)
    self.assertIs(tf.estimator.experimental.stop_if_no_decrease_hook,
                  harness.experimental.stop_if_no_decrease_hook)
    self.assertIs(tf.estimator.inputs.numpy_input_fn,
                  harness.inputs.numpy_input_fn)

  def test_v1_and_v2_namespaces_are_distinct_objects(self):
    self.assertIsNot(tf.compat.v1.estimator, tf.estimator)
    self.assertIs(tf.compat.v2.estimator, tf.estimator)
    self.assertIs(tf.compat.v1.estimator.Estimator, harness.Estimator)
    self.assertIs(tf.compat.v1.estimator.inputs.pandas_input_fn,
                  harness.inputs.pandas_input_fn)
    import tensorflow.compat.v1 as tf_v1  # pylint: disable=g-import-not-at-top
    self.assertIs(tf_v1.estimator, tf.compat.v1.estimator)

  def test_forwarding_is_live_not_a_copy(self):
    sentinel = object()
    original = harness.export.PredictOutput
    harness.export.PredictOutput = sentinel
    try:
      self.assertIs(tf.estimator.export.PredictOutput, sentinel)
    finally:
      harness.export.PredictOutput = original
    self.assertIs(tf.estimator.export.PredictOutput, original)

  def test_tensorflow_estimator_module_imports(self):
    # pylint: disable=g-import-not-at-top
    from tensorflow_estimator.python.estimator import estimator
    from tensorflow_estimator.python.estimator import run_config
    from tensorflow_estimator.python.estimator import model_fn as model_fn_lib
    from tensorflow_estimator.python.estimator import training
    from tensorflow_estimator.python.estimator.export import export_lib
    from tensorflow_estimator.python.estimator.export import export_output
    from tensorflow_estimator.python.estimator.inputs import numpy_io
    from tensorflow_estimator.python.estimator.mode_keys import ModeKeys
    from tensorflow.python.estimator import estimator as tf_python_estimator
    import tensorflow_estimator as tfe
    # pylint: enable=g-import-not-at-top
    self.assertIs(estimator.Estimator, harness.Estimator)
    self.assertIs(run_config.RunConfig, harness.RunConfig)
    self.assertIs(model_fn_lib.EstimatorSpec, harness.EstimatorSpec)
    self.assertIs(ModeKeys, harness.ModeKeys)
    self.assertIs(training.TrainSpec, harness.TrainSpec)
    self.assertIs(export_lib.ServingInputReceiver,
                  harness.export.ServingInputReceiver)
    self.assertIs(export_output.PredictOutput, harness.export.PredictOutput)
    self.assertIs(numpy_io.numpy_input_fn, harness.inputs.numpy_input_fn)
    self.assertIs(tf_python_estimator.Estimator, harness.Estimator)
    self.assertIs(tfe.estimator.Estimator, harness.Estimator)
    self.assertIs(
        sys.modules["tensorflow_estimator.python.estimator.api._v2.estimator"],
        tf.estimator)

  def test_missing_names_raise_not_supported_naming_them(self):
    with self.assertRaisesRegex(errors.NotSupportedError,
                                "BoostedTreesClassifier.*Decision Forests"):
      tf.estimator.BoostedTreesClassifier  # pylint: disable=pointless-statement
    with self.assertRaisesRegex(errors.NotSupportedError,
                                r"tf\.compat\.v1\.estimator\.tpu\.NoSuch"):
      tf.compat.v1.estimator.tpu.NoSuch  # pylint: disable=pointless-statement
    with self.assertRaisesRegex(errors.NotSupportedError,
                                r"tpu\.tpu_context'.*use_tpu=False"):
      importlib.import_module(
          "tensorflow_estimator.python.estimator.tpu.tpu_context")
    with self.assertRaisesRegex(errors.NotSupportedError,
                                r"tf\.estimator\.NoSuchThing"):
      tf.estimator.NoSuchThing  # pylint: disable=pointless-statement
    with self.assertRaisesRegex(errors.NotSupportedError,
                                r"canned\.boosted_trees'.*BoostedTrees"):
      importlib.import_module(
          "tensorflow_estimator.python.estimator.canned.boosted_trees")
    # Also an ImportError, for libraries that probe with try/except.
    with self.assertRaises(ImportError):
      importlib.import_module(
          "tensorflow_estimator.python.estimator.estimator_export")
    # Dunder probes by tools stay ordinary AttributeErrors.
    self.assertFalse(hasattr(tf.estimator, "__wrapped__"))

  def test_import_twice_and_install_again_change_nothing(self):
    namespace_v1, namespace_v2 = tf.compat.v1.estimator, tf.estimator
    modules = {n: m for n, m in sys.modules.items()
               if n.startswith("tensorflow_estimator")}
    finders = len(sys.meta_path)
    import harness.compat as again  # pylint: disable=g-import-not-at-top,reimported
    importlib.reload(again)
    registry = again.install()
    self.assertIs(tf.estimator, namespace_v2)
    self.assertIs(tf.compat.v1.estimator, namespace_v1)
    self.assertEqual(len(sys.meta_path), finders)
    for name, module in modules.items():
      self.assertIs(sys.modules[name], module, name)
      self.assertIs(registry[name], module, name)


class LegacyKerasErrorTest(parameterized.TestCase):
  """TensorFlow touched before harness: LegacyKerasError, not a late crash."""

  @parameterized.named_parameters(
      # tf.keras resolved to Keras 3: harness.compat's own check.
      ("tf_keras_touched", "tf.keras.layers.Dense", "loaded as Keras 3"),
      # tf.compat.v1.layers failed to load: harness._tf's error, unchanged.
      ("v1_layers_touched", "getattr(tf.compat.v1.layers, 'Dense', None)",
       "tf.compat.v1.layers and Keras 2 are unavailable"))
  def test_legacy_keras_error(self, touch, message):
    code = (
        "import json, tensorflow as tf\n"
        f"{touch}\n"
        "try:\n"
        "  import harness.compat\n"
        "except Exception as e:\n"
        "  import harness.errors\n"
        "  print(json.dumps({'type': type(e).__name__, 'message': str(e),\n"
        "      'legacy': isinstance(e, harness.errors.LegacyKerasError)}))\n")
    env = {k: v for k, v in conftest.child_env().items()
           if k != "TF_USE_LEGACY_KERAS"}
    result = _run_python(["-c", code], env=env)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertTrue(result.stdout.strip(),
                    "harness.compat imported without error\n" +
                    result.description)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    self.assertEqual(report["type"], "LegacyKerasError", report)
    self.assertTrue(report["legacy"])
    self.assertIn(message, report["message"])
    self.assertIn("python -m harness.run", report["message"])

  def test_plain_import_harness_stops_at_first_use_when_keras_3_loaded(self):
    # Issue 39: README promises it for `import harness` too (was silent;
    # model_to_estimator then failed with a misleading "subclassed").
    code = (
        "import json, tensorflow as tf\n"
        "tf.keras.layers.Dense\n"
        "import harness\n"
        "try:\n"
        "  harness.RunConfig\n"
        "except Exception as e:\n"
        "  print(json.dumps({'type': type(e).__name__, 'message': str(e)}))\n")
    env = {k: v for k, v in conftest.child_env().items()
           if k != "TF_USE_LEGACY_KERAS"}
    result = _run_python(["-c", code], env=env)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertTrue(result.stdout.strip(), "no error\n" + result.description)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    self.assertEqual(report["type"], "LegacyKerasError", report)
    self.assertIn("loaded as Keras 3", report["message"])
    self.assertIn("Fix: import harness", report["message"])


@contextlib.contextmanager
def _preserved_interpreter_state(cwd=None):
  """Restores sys.argv, sys.path and the cwd that harness.run changes."""
  argv, path, old_cwd = list(sys.argv), list(sys.path), os.getcwd()
  if cwd is not None:
    os.chdir(cwd)
  try:
    yield
  finally:
    os.chdir(old_cwd)
    sys.argv[:] = argv
    sys.path[:] = path


class RunMainTest(absltest.TestCase):
  """`harness.run.main` in this process: argv, __name__, sys.path, status."""

  def _report(self, out):
    with open(out) as f:
      return json.load(f)

  def test_script_form(self):
    out = os.path.join(self.create_tempdir().full_path, "out.json")
    script = str(_PROGRAMS / "legacy_argv.py")
    with _preserved_interpreter_state():
      with self.assertRaises(SystemExit) as raised:
        run_lib.main([script, out, "5"])
    self.assertEqual(raised.exception.code, 5)
    report = self._report(out)
    self.assertEqual(report["argv"], [script, out, "5"])
    self.assertEqual(report["name"], "__main__")
    self.assertEqual(report["path0"], str(_PROGRAMS))
    self.assertEqual(report["estimator"], "harness.estimator")
    self.assertEqual(report["v1_estimator"], "harness.estimator")

  def test_double_dash_and_normal_return(self):
    tmp = self.create_tempdir()
    out = os.path.join(tmp.full_path, "out.txt")
    script = tmp.create_file(
        "prog.py", "import sys\n"
        "open(sys.argv[1], 'w').write(' '.join(sys.argv[2:]) + ' ' +"
        " __name__)\n").full_path
    with _preserved_interpreter_state():
      status = run_lib.main(["--", script, out, "--flag=1", "-x"])
    self.assertEqual(status, 0)
    self.assertEqual(pathlib.Path(out).read_text(), "--flag=1 -x __main__")

  def test_module_form(self):
    tmp = self.create_tempdir()
    tmp.create_file("legacy_pkg_for_run/__init__.py", "")
    tmp.create_file(
        "legacy_pkg_for_run/prog.py",
        "import json, sys\nimport tensorflow as tf\n"
        "json.dump({'argv': sys.argv, 'name': __name__, 'path0': sys.path[0],"
        " 'estimator': tf.estimator.Estimator.__module__},"
        " open(sys.argv[1], 'w'))\n"
        "sys.exit(4)\n")
    out = os.path.join(tmp.full_path, "out.json")
    with _preserved_interpreter_state(cwd=tmp.full_path):
      with self.assertRaises(SystemExit) as raised:
        run_lib.main(["-m", "legacy_pkg_for_run.prog", out, "--steps=3"])
      sys.modules.pop("legacy_pkg_for_run", None)
    self.assertEqual(raised.exception.code, 4)
    report = self._report(out)
    self.assertEqual(report["argv"][1:], [out, "--steps=3"])
    self.assertTrue(report["argv"][0].endswith("prog.py"), report["argv"])
    self.assertEqual(report["name"], "__main__")
    self.assertEqual(os.path.realpath(report["path0"]),
                     os.path.realpath(tmp.full_path))
    self.assertEqual(report["estimator"], "harness.estimator")

  def test_usage_errors_exit_2_with_a_message(self):
    cases = {
        (): "no program given",
        ("-m",): "-m needs a module name",
        ("--",): "no program given after",
        ("--verbose", "x.py"): "unknown option '--verbose'",
        ("/no/such/script.py",): "can't open file '/no/such/script.py'",
        ("-m", "no_such_module_for_harness_run"): "No module named",
    }
    for argv, message in cases.items():
      with self.subTest(argv=argv):
        with _preserved_interpreter_state(), \
            contextlib.redirect_stderr(io.StringIO()) as err:
          status = run_lib.main(list(argv))
        self.assertEqual(status, 2)
        self.assertIn(message, err.getvalue())
        self.assertIn("usage: python -m harness.run", err.getvalue())


class RunSubprocessTest(absltest.TestCase):
  """`python -m harness.run` as a real process."""

  def test_exit_status_and_argv_propagate(self):
    out = os.path.join(self.create_tempdir().full_path, "out.json")
    script = "tests/legacy_programs/legacy_argv.py"
    result = _run_python(["-m", "harness.run", script, out, "3"])
    self.assertEqual(result.returncode, 3, result.description)
    with open(out) as f:
      report = json.load(f)
    self.assertEqual(report["argv"], [script, out, "3"])
    self.assertEqual(report["name"], "__main__")
    self.assertEqual(report["path0"], str(_PROGRAMS))

  def test_nan_loss_raises_tf_estimator_error(self):
    tmp = self.create_tempdir().full_path
    out = os.path.join(tmp, "nan.json")
    result = _run_python(["-m", "harness.run",
                          "tests/legacy_programs/legacy_nan.py", out,
                          os.path.join(tmp, "model")])
    self.assertEqual(result.returncode, 1, result.description)
    self.assertIn("NanLossDuringTrainingError", result.stderr)
    with open(out) as f:
      report = json.load(f)
    self.assertTrue(report["is_tf_class"], report)
    self.assertEqual(report["message"], "NaN loss during training.")


def _harness_model_fn(features, labels, mode, params):
  """legacy_regression.model_fn, written against harness directly."""
  # TF's v1 initializer follows RunConfig(tf_random_seed); the Keras 2
  # default (glorot_uniform) of tf.compat.v1.layers draws an unseeded Python
  # random seed, so only an explicit initializer makes the run repeatable.
  init = tf.compat.v1.glorot_uniform_initializer()
  hidden = tf.compat.v1.layers.dense(
      features["x"], 8, activation=tf.nn.relu, kernel_initializer=init,
      name="hidden")
  output = tf.compat.v1.layers.dense(
      hidden, 1, kernel_initializer=init, name="output")[:, 0]
  predictions = {"y": output}
  if mode == harness.ModeKeys.PREDICT:
    return harness.EstimatorSpec(mode, predictions=predictions)
  loss = tf.compat.v1.losses.mean_squared_error(labels, output)
  metrics = {"rmse": tf.compat.v1.metrics.root_mean_squared_error(
      labels, output)}
  global_step = tf.compat.v1.train.get_global_step()
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["lr"])
  train_op = optimizer.minimize(loss, global_step=global_step)
  hook = _LossRecorder(loss, params["losses_key"])
  return harness.EstimatorSpec(
      mode, loss=loss, train_op=train_op, eval_metric_ops=metrics,
      predictions=predictions, training_hooks=[hook])


_RECORDED = {}


class _LossRecorder(harness.SessionRunHook):
  """Appends the loss of every step, in order, to _RECORDED[key]."""

  def __init__(self, loss, key):
    self._loss = loss
    self._key = key

  def before_run(self, run_context):
    return harness.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    _RECORDED.setdefault(self._key, []).append(float(run_values.results))


class LegacyProgramTest(absltest.TestCase):
  """Acceptance: an unmodified tf.estimator program matches harness."""

  @pytest.mark.slow
  def test_legacy_program_matches_direct_harness_run(self):
    tmp = self.create_tempdir().full_path
    out = os.path.join(tmp, "legacy.json")
    legacy_dir = os.path.join(tmp, "legacy_model")
    result = _run_python(["-m", "harness.run",
                          "tests/legacy_programs/legacy_regression.py", out,
                          legacy_dir])
    self.assertEqual(result.returncode, 0, result.description)
    with open(out) as f:
      legacy = json.load(f)

    # The same model, data and seed, through harness's own names.
    program = runpy.run_path(str(_PROGRAMS / "legacy_regression.py"),
                             run_name="legacy_regression")
    est = harness.Estimator(
        _harness_model_fn, model_dir=os.path.join(tmp, "direct_model"),
        config=harness.RunConfig(
            tf_random_seed=program["SEED"], save_checkpoints_steps=20,
            save_summary_steps=10, log_step_count_steps=None),
        params={"lr": program["LEARNING_RATE"], "losses_key": tmp})
    est.train(program["train_input_fn"], steps=program["TRAIN_STEPS"])
    direct_losses = _RECORDED.pop(tmp)
    metrics = est.evaluate(program["eval_input_fn"])
    predictions = [float(p["y"]) for p in
                   est.predict(program["predict_input_fn"])]

    self.assertLen(legacy["losses"], program["TRAIN_STEPS"])
    self.assertLen(direct_losses, program["TRAIN_STEPS"])
    np.testing.assert_allclose(legacy["losses"], direct_losses, rtol=0,
                               atol=1e-6)
    self.assertLess(legacy["losses"][-1], legacy["losses"][0])
    for key in ("loss", "rmse", "global_step"):
      self.assertAlmostEqual(legacy["eval"][key], float(metrics[key]),
                             delta=1e-6, msg=key)
    np.testing.assert_allclose(legacy["predictions"], predictions, rtol=0,
                               atol=1e-6)
    # The rest of the program: export, train_and_evaluate with an exporter.
    self.assertEqual(legacy["estimator_class"], "harness.estimator.Estimator")
    self.assertTrue(os.path.isfile(
        os.path.join(legacy["export_dir"], "saved_model.pb")))
    self.assertEqual(legacy["final_step"], program["MAX_STEPS"])
    self.assertBetween(len(legacy["latest_exports"]), 1, 2)
    self.assertLen(legacy["later_losses"],
                   program["MAX_STEPS"] - program["TRAIN_STEPS"])


def _keras_data():
  rng = np.random.RandomState(0)
  x = rng.normal(size=(128, 3)).astype(np.float32)
  y = (x @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)
  return x, y


def _keras_model(batch_norm):
  # A fresh model per use: cloning into an Estimator graph invalidates
  # tf_keras models built before it (as with tf.estimator 2.15).
  # Seeded: the weights are drawn eagerly, before the Estimator's graph.
  tf.keras.utils.set_random_seed(0)
  layers = [tf.keras.layers.Dense(8, activation="relu", input_shape=(3,))]
  if batch_norm:
    # momentum 0.9: the moving statistics that evaluation uses settle
    # within the test's 150 steps (0.99, the default, lags by ~20%).
    layers.append(tf.keras.layers.BatchNormalization(momentum=0.9))
  layers.append(tf.keras.layers.Dense(1))
  return tf.keras.Sequential(layers)


class ModelToEstimatorTest(absltest.TestCase):
  """tf_keras's model_to_estimator, through the keras_lib alias."""

  def _input_fn(self, input_name, repeat=True):
    x, y = _keras_data()

    def input_fn():
      ds = tf.data.Dataset.from_tensor_slices(({input_name: x}, y)).batch(32)
      return ds.repeat() if repeat else ds

    return input_fn

  def test_starts_from_keras_weights(self):
    model = _keras_model(batch_norm=False)
    model.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse")
    x, _ = _keras_data()
    keras_predictions = model.predict(x[:4], verbose=0)[:, 0]
    est = tf.keras.estimator.model_to_estimator(
        keras_model=model, model_dir=self.create_tempdir().full_path)
    self.assertIsInstance(est, harness.Estimator)
    est.train(self._input_fn(model.input_names[0]), steps=1)
    predictions = [p[model.output_names[0]][0] for p in est.predict(
        lambda: tf.data.Dataset.from_tensor_slices(x[:4]).batch(4))]
    np.testing.assert_allclose(predictions, keras_predictions, atol=1e-5)

  def test_trains_with_compiled_optimizer_metrics_and_batch_norm(self):
    model = _keras_model(batch_norm=True)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse",
                  metrics=["mae"])
    input_name = model.input_names[0]
    est = tf.keras.estimator.model_to_estimator(
        keras_model=model, model_dir=self.create_tempdir().full_path,
        metric_names_map={"mae": "mean_abs_error"}, checkpoint_format="saver")
    est.train(self._input_fn(input_name), steps=1)
    first = est.evaluate(self._input_fn(input_name, repeat=False))
    est.train(self._input_fn(input_name), steps=150)
    last = est.evaluate(self._input_fn(input_name, repeat=False))
    self.assertEqual(last["global_step"], 151)
    self.assertLess(last["loss"], first["loss"] / 2)
    self.assertIn("mean_abs_error", last)
    names = est.get_variable_names()
    moving_mean = next(n for n in names if n.endswith("moving_mean"))
    self.assertTrue(np.any(est.get_variable_value(moving_mean) != 0),
                    "BatchNorm moving statistics never updated")
    # 2.15's names: the Keras optimizer's slots under training/Adam/.
    self.assertTrue(any(n.startswith("training/Adam/") for n in names), names)

  def test_argument_errors(self):
    model = _keras_model(batch_norm=False)
    lib = importlib.import_module(
        "tensorflow_estimator.python.estimator.keras_lib")
    with self.assertRaisesRegex(errors.ConfigError, "has not been compiled"):
      lib.model_to_estimator(keras_model=model)
    model.compile(optimizer="sgd", loss="mse")
    with self.assertRaisesRegex(errors.ConfigError, "but not both"):
      lib.model_to_estimator(keras_model=model, keras_model_path="/m.h5")
    with self.assertRaisesRegex(errors.ConfigError, "Checkpoint format"):
      lib.model_to_estimator(keras_model=model, checkpoint_format="h5")
    with self.assertRaisesRegex(errors.ConfigError, "needs to be provided"):
      lib.model_to_estimator()

    class Subclassed(tf.keras.Model):

      def call(self, inputs):
        return inputs

    subclassed = Subclassed()
    subclassed.compile(optimizer="sgd", loss="mse")
    # 2.15 took subclassed models, but not with object-based checkpoints
    # (its default checkpoint_format).
    with self.assertRaisesRegex(
        ValueError, "^Object-based checkpoints are currently not supported "
        "with subclassed models."):
      lib.model_to_estimator(keras_model=subclassed)


class ReadmeListsExampleTest(absltest.TestCase):

  def test_readme_python_lists_example_runs(self):
    readme = (conftest.REPO_ROOT / "README.md").read_text()
    section = readme.split("Inputs are taken as 2.15 took them", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    self.assertIn('return {"age": [17, 25, 33, 41]}, [1.7, 2.5, 3.3, 4.1]',
                  code)
    model_dir = self.create_tempdir().full_path
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      # pylint: disable-next=exec-used
      exec(code.replace('"/tmp/lists"', repr(model_dir)), {})
    printed = out.getvalue()
    self.assertRegex(printed, r"'global_step': (np\.int64\()?200\b")
    loss = float(re.search(r"'loss': (?:np\.float32\()?([0-9.e-]+)",
                           printed).group(1))
    self.assertLess(loss, 1.0)  # Trained: the labels' variance is 0.8.


if __name__ == "__main__":
  absltest.main()
