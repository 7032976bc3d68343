"""Canned estimators in whole programs: the premade-estimator guide through
`python -m harness.run` (and, when a TF 2.15 interpreter is given, the same
program on real tf.estimator 2.15), wide & deep under MirroredStrategy with
train_and_evaluate and a FinalExporter, and add_metrics on a canned model."""

import json
import os
import pathlib
import sys

import numpy as np
from absl.testing import absltest

import harness
from harness._tf import tf
from tests import _support
from tests import conftest

_PROGRAM = pathlib.Path(__file__).parent / "legacy_programs" / "premade_guide.py"
# A python with tensorflow 2.15.1 + tensorflow-estimator 2.15.0 installed, to
# run the same program on the real thing (optional; no network in tests).
_TF215_PYTHON = os.environ.get("HARNESS_TF215_PYTHON")


def _run(command, timeout=600, env=None):
  result = _support.run(command, timeout_secs=timeout, env=env)
  return result, result.description


def _run_guide(test, python, via_harness):
  work_dir = test.create_tempdir().full_path
  out = os.path.join(work_dir, "out.json")
  runner = ["-m", "harness.run"] if via_harness else []
  env = conftest.child_env()
  if not via_harness:  # The real TF 2.15: none of harness' settings.
    for name in ("PYTHONPATH", "TF_USE_LEGACY_KERAS"):
      env.pop(name, None)
  result, tail = _run([python, *runner, str(_PROGRAM), out, work_dir],
                      env=env)
  test.assertEqual(result.returncode, 0, tail)
  with open(out) as f:
    return json.load(f), result.stdout, tail


class PremadeGuideTest(absltest.TestCase):

  def test_guide_program_trains_exports_and_serves_through_harness_run(self):
    results, stdout, tail = _run_guide(self, sys.executable, True)
    self.assertEqual(results["tf_version"], tf.__version__)
    self.assertIn("LinearClassifier test set accuracy:", stdout)
    for name in ("dnn", "linear"):
      run = results[name]
      self.assertEqual(set(run["eval"]),
                       {"accuracy", "average_loss", "loss", "global_step"})
      self.assertEqual(run["eval"]["global_step"], 1000, tail)
      served = run["served"]
      self.assertEqual(served["signatures"],
                       ["classification", "predict", "serving_default"])
      self.assertEqual(served["predict_inputs"], ["examples"])
      self.assertEqual(sorted(served["predict"]), [
          "all_class_ids", "all_classes", "class_ids", "classes", "logits",
          "probabilities"])
      self.assertEqual(sorted(served["serving_default"]),
                       ["classes", "scores"])
      self.assertEqual(served["serving_default"]["classes"][0],
                       ["0", "1", "2"])
      # Serving parses tf.Examples; predict() fed the same rows from numpy.
      probabilities = [p["probabilities"] for p in run["predictions"]]
      np.testing.assert_allclose(served["serving_default"]["scores"],
                                 probabilities, rtol=1e-5)
      np.testing.assert_allclose(served["predict"]["probabilities"],
                                 probabilities, rtol=1e-5)
      self.assertEqual([p["class_ids"] for p in run["predictions"]],
                       served["predict"]["class_ids"])
    # Well separated clusters: the linear model learns them.
    self.assertGreater(results["linear"]["eval"]["accuracy"], 0.85, tail)
    self.assertGreater(results["dnn"]["eval"]["accuracy"], 1 / 3, tail)

  @absltest.skipUnless(_TF215_PYTHON, "set HARNESS_TF215_PYTHON to a python "
                       "with tensorflow 2.15.1 + tensorflow-estimator 2.15.0 "
                       "to compare with the real tf.estimator "
                       "(python -m bench.tf215.tf215_env makes one)")
  def test_guide_program_matches_tf_estimator_215(self):
    ours, _, _ = _run_guide(self, sys.executable, True)
    theirs, _, tail = _run_guide(self, _TF215_PYTHON, False)
    self.assertTrue(theirs["tf_version"].startswith("2.15"), tail)
    for name in ("dnn", "linear"):
      for key in ("accuracy", "average_loss"):
        np.testing.assert_allclose(ours[name]["eval"][key],
                                   theirs[name]["eval"][key], rtol=1e-4,
                                   err_msg=f"{name} {key}")
      self.assertEqual(ours[name]["served"]["signatures"],
                       theirs[name]["served"]["signatures"])
      self.assertEqual(sorted(ours[name]["served"]["predict"]),
                       sorted(theirs[name]["served"]["predict"]))


_WIDE_DEEP_MIRRORED = """
import json, os, sys
import numpy as np
import harness
from harness._tf import tf
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.RandomState(0)
x = rng.uniform(-1, 1, size=(512, 2)).astype(np.float32)
color = np.array(["red", "green", "blue"])[rng.randint(0, 3, 512)]
label = ((x[:, 0] + x[:, 1] > 0) | (color == "red")).astype(np.int64)
def input_fn(rows, repeat):
  def fn():
    ds = tf.data.Dataset.from_tensor_slices(
        ({"x": x[rows], "color": color[rows]}, label[rows]))
    return (ds.repeat() if repeat else ds).batch(32)
  return fn
num = tf.feature_column.numeric_column("x", shape=[2])
cat = tf.feature_column.categorical_column_with_vocabulary_list(
    "color", ["red", "green", "blue"])
est = harness.DNNLinearCombinedClassifier(
    linear_feature_columns=[cat, num],
    dnn_feature_columns=[num, tf.feature_column.embedding_column(cat, 2)],
    dnn_hidden_units=[8, 4], model_dir=sys.argv[1],
    config=harness.RunConfig(train_distribute=strategy, tf_random_seed=1,
                             save_checkpoints_steps=100))
spec = tf.feature_column.make_parse_example_spec([num, cat])
exporter = harness.FinalExporter(
    "final", harness.export.build_parsing_serving_input_receiver_fn(spec))
metrics, exports = harness.train_and_evaluate(
    est, harness.TrainSpec(input_fn(slice(0, 400), True), max_steps=200),
    harness.EvalSpec(input_fn(slice(400, None), False), steps=None,
                     exporters=[exporter], throttle_secs=0))
print("RESULT " + json.dumps({
    "replicas": strategy.num_replicas_in_sync,
    "metrics": {k: float(v) for k, v in metrics.items()},
    "exports": [e.decode() if isinstance(e, bytes) else e for e in exports],
}))
"""


class WideDeepMirroredTest(absltest.TestCase):

  def test_train_and_evaluate_with_final_exporter_on_two_cpu_replicas(self):
    model_dir = self.create_tempdir().full_path
    result, tail = _run([sys.executable, "-c", _WIDE_DEEP_MIRRORED,
                         model_dir])
    self.assertEqual(result.returncode, 0, tail)
    line = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
    self.assertLen(line, 1, tail)
    got = json.loads(line[0][len("RESULT "):])
    self.assertEqual(got["replicas"], 2, tail)
    self.assertEqual(got["metrics"]["global_step"], 200, tail)
    self.assertEqual(set(got["metrics"]), {
        "accuracy", "accuracy_baseline", "auc", "auc_precision_recall",
        "average_loss", "label/mean", "loss", "precision", "prediction/mean",
        "recall", "global_step"})
    self.assertGreater(got["metrics"]["accuracy"],
                       got["metrics"]["accuracy_baseline"], tail)
    self.assertLen(got["exports"], 1, tail)
    export_dir = got["exports"][0]
    self.assertEqual(os.path.dirname(export_dir),
                     os.path.join(model_dir, "export", "final"))
    loaded = tf.saved_model.load(export_dir)
    self.assertEqual(sorted(loaded.signatures.keys()), [
        "classification", "predict", "regression", "serving_default"])
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[.9, .9])),
        "color": tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[b"green"]))}))
    outputs = loaded.signatures["predict"](
        examples=tf.constant([example.SerializeToString()]))
    self.assertEqual(outputs["class_ids"].numpy().tolist(), [[1]])
    variables = dict(tf.train.list_variables(model_dir))
    self.assertIn("training/Ftrl/linear/linear_model/color/weights/linear",
                  variables)
    self.assertIn("training/Adagrad/dnn/logits/kernel/accumulator",
                  variables)


class AddMetricsTest(absltest.TestCase):

  def test_add_metrics_extends_a_canned_estimator(self):
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(-1, 1)
    y = (x > 0).astype(np.int64)

    def input_fn():
      return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(16)

    def metric_fn(labels, predictions):
      metric = tf.keras.metrics.BinaryAccuracy(name="my_accuracy")
      metric.update_state(y_true=labels, y_pred=predictions["logistic"])
      return {"my_accuracy": metric}

    est = harness.LinearClassifier(
        [tf.feature_column.numeric_column("x")],
        model_dir=self.create_tempdir().full_path)
    est.train(lambda: input_fn().repeat(), steps=30)
    est = harness.add_metrics(est, metric_fn)
    metrics = est.evaluate(input_fn)
    self.assertIn("auc", metrics)
    # Binary accuracy at 0.5 on the logistic is the head's own accuracy.
    self.assertAlmostEqual(metrics["my_accuracy"], metrics["accuracy"],
                           places=6)


if __name__ == "__main__":
  absltest.main()
