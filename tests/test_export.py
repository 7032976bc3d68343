"""SavedModel export: outputs, receivers and the writer, on a tiny real model.

Each SavedModel is written from a real checkpoint of a Dense(1) model and read
back: in process with the v1 loader (fast), and in a TF2 eager subprocess with
`tf.saved_model.load` (slow), checking the served numbers.
"""

import base64
import json
import os
import subprocess
import sys
import textwrap

from absl.testing import absltest
import numpy as np
import pytest

from harness import errors
from harness import export
from harness._tf import tf
from harness.export import outputs as outputs_lib
from harness.export import writer
from harness.spec import EstimatorSpec
from harness.spec import ModeKeys

FEATURE_SPEC = {"x": tf.io.FixedLenFeature([2], tf.float32)}


def train_checkpoint(model_dir, steps=3):
  """Trains Dense(1) a few steps; returns (checkpoint path, kernel, bias)."""
  with tf.Graph().as_default():
    global_step = tf.compat.v1.train.get_or_create_global_step()
    x = tf.constant([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
    y = tf.constant([[1.0], [2.0], [0.0]])
    pred = tf.compat.v1.layers.dense(x, 1, name="dense")
    loss = tf.reduce_mean(tf.square(pred - y))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=global_step)
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      for _ in range(steps):
        sess.run(train_op)
      path = saver.save(sess, os.path.join(model_dir, "model.ckpt"),
                        global_step=global_step)
      with tf.compat.v1.variable_scope("dense", reuse=True):
        kernel, bias = sess.run([tf.compat.v1.get_variable("kernel"),
                                 tf.compat.v1.get_variable("bias")])
  return path, kernel, bias


def expected_y(x, kernel, bias):
  return np.asarray(x, np.float32) @ kernel + bias


def model_fn(features, labels, mode, export_kind="predict"):
  """Dense(1) on features["x"]; export_kind picks the PREDICT outputs."""
  y = tf.compat.v1.layers.dense(features["x"], 1, name="dense")
  predictions = {"y": y}
  if mode == ModeKeys.PREDICT:
    if export_kind == "regress":
      outputs = {"serving_default": export.RegressionOutput(y),
                 "predict": export.PredictOutput(predictions)}
    elif export_kind == "classify":
      scores = tf.concat([tf.sigmoid(-y), tf.sigmoid(y)], axis=1)
      classes = tf.tile(tf.constant([["neg", "pos"]]), [tf.shape(y)[0], 1])
      outputs = {"serving_default": export.ClassificationOutput(
          scores=scores, classes=classes)}
    else:
      outputs = None
    return EstimatorSpec(mode, predictions=predictions,
                         export_outputs=outputs)
  loss = tf.reduce_mean(tf.square(y - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  metrics = {"mse": tf.compat.v1.metrics.mean_squared_error(labels, y)}
  return EstimatorSpec(mode, predictions=predictions, loss=loss,
                       train_op=train_op, eval_metric_ops=metrics)


def build_spec_fn(export_kind="predict"):
  return lambda features, labels, mode: model_fn(
      features, labels, mode, export_kind)


def raw_receiver_fn():
  with tf.Graph().as_default():
    example = {"x": tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")}
  return export.build_raw_serving_input_receiver_fn(example)


def parsing_receiver_fn():
  return export.build_parsing_serving_input_receiver_fn(FEATURE_SPEC)


def serialized_examples(rows):
  return [tf.train.Example(features=tf.train.Features(feature={
      "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}
  )).SerializeToString() for row in rows]


def write_vocab(directory):
  path = os.path.join(directory, "vocab.txt")
  with open(path, "w") as f:
    f.write("apple\nbanana\ncherry\n")
  return path


def vocab_spec_fn(vocab_path):
  """Dense(1) plus a vocabulary lookup table read from an asset file."""

  def spec_fn(features, labels, mode):
    del labels
    table = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        vocab_path, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
        tf.lookup.TextFileIndex.LINE_NUMBER), -1)
    y = tf.compat.v1.layers.dense(features["x"], 1, name="dense")
    return EstimatorSpec(mode, predictions={
        "y": y, "word_id": table.lookup(features["word"])})

  return spec_fn


def vocab_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
  word = tf.compat.v1.placeholder(tf.string, [None], name="word")
  return export.ServingInputReceiver({"x": x, "word": word},
                                     {"x": x, "word": word})


def run_signature_v1(export_dir, feeds, signature="serving_default",
                     tags=("serve",)):
  """Loads with the v1 loader in a fresh graph and runs one signature."""
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    meta_graph = tf.compat.v1.saved_model.load(sess, list(tags), export_dir)
    sig = meta_graph.signature_def[signature]
    feed_dict = {sig.inputs[k].name: v for k, v in feeds.items()}
    fetches = {k: v.name for k, v in sig.outputs.items()}
    return sess.run(fetches, feed_dict), meta_graph


class ExportOutputsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.enter_context(tf.Graph().as_default())
    self.floats = tf.compat.v1.placeholder(tf.float32, [None, 1])
    self.strings = tf.compat.v1.placeholder(tf.string, [None])

  def test_predict_output_wraps_single_tensor_and_checks_values(self):
    self.assertEqual(list(export.PredictOutput(self.floats).outputs),
                     ["output"])
    with self.assertRaisesRegex(ValueError,
                                "Prediction output value must be a Tensor"):
      export.PredictOutput({"y": [1.0]})
    with self.assertRaisesRegex(ValueError, "output key must be a string"):
      export.PredictOutput({3: self.floats})

  def test_classification_output_validation(self):
    with self.assertRaisesRegex(ValueError, "classes must be a string"):
      export.ClassificationOutput(classes=tf.constant([1]))
    with self.assertRaisesRegex(ValueError, "scores must be a float32"):
      export.ClassificationOutput(scores=tf.constant([1]))
    with self.assertRaisesRegex(ValueError, "At least one of `scores`"):
      export.ClassificationOutput()
    output = export.ClassificationOutput(scores=self.floats)
    with self.assertRaisesRegex(ValueError, "single tensor input of type"):
      output.as_signature_def({"x": self.floats})
    with self.assertRaisesRegex(ValueError, "single tensor input of type"):
      output.as_signature_def({"a": self.strings, "b": self.strings})
    sig = output.as_signature_def({"examples": self.strings})
    self.assertEqual(sig.method_name, "tensorflow/serving/classify")

  def test_regression_output_needs_float(self):
    with self.assertRaisesRegex(ValueError,
                                "Regression output value must be a float32"):
      export.RegressionOutput(tf.constant([1]))

  def test_get_export_outputs_defaults(self):
    default = outputs_lib.get_export_outputs(None, {"y": self.floats})
    self.assertEqual(list(default), ["serving_default"])
    self.assertIsInstance(default["serving_default"], export.PredictOutput)
    single = export.RegressionOutput(self.floats)
    self.assertEqual(outputs_lib.get_export_outputs({"reg": single}, None),
                     {"reg": single, "serving_default": single})

  def test_get_export_outputs_errors(self):
    out = export.PredictOutput(self.floats)
    with self.assertRaisesRegex(ValueError, "none of them are specified as "
                                "the default.*'a', 'b'"):
      outputs_lib.get_export_outputs({"a": out, "b": out}, None)
    with self.assertRaisesRegex(TypeError, "must be ExportOutput objects"):
      outputs_lib.get_export_outputs({"serving_default": self.floats}, None)
    with self.assertRaisesRegex(TypeError, "must be dict"):
      outputs_lib.get_export_outputs([out], None)

  def test_estimator_spec_uses_default_export_outputs(self):
    spec = EstimatorSpec(ModeKeys.PREDICT, predictions={"y": self.floats})
    self.assertEqual(list(spec.export_outputs), ["serving_default"])

  def test_export_outputs_for_mode(self):
    loss = tf.reduce_mean(self.floats)
    metric = tf.compat.v1.metrics.mean(self.floats)
    train = outputs_lib.export_outputs_for_mode(
        ModeKeys.TRAIN, loss=loss, predictions={"y": self.floats},
        metrics={"m": metric})
    self.assertIsInstance(train["train"], export.TrainOutput)
    self.assertEqual(
        sorted(train["train"].as_signature_def({"x": self.floats}).outputs),
        ["loss", "metrics/m/update_op", "metrics/m/value", "predictions/y"])
    evals = outputs_lib.export_outputs_for_mode(ModeKeys.EVAL, loss=loss)
    self.assertIsInstance(evals["eval"], export.EvalOutput)
    with self.assertRaisesRegex(ValueError, "'serve'.*ModeKeys.PREDICT"):
      outputs_lib.export_outputs_for_mode("serve")

  def test_build_all_signature_defs_drops_unservable_with_log(self):
    other = tf.compat.v1.placeholder(tf.float32, [None, 1], name="unfed")
    export_outputs = {
        "serving_default": export.PredictOutput({"y": self.floats * 2}),
        "classify": export.ClassificationOutput(scores=self.floats),
        "needs_unfed": export.PredictOutput({"z": self.floats + other}),
    }
    with self.assertLogs("absl", level="INFO") as logs:
      sigs = outputs_lib.build_all_signature_defs(
          self.floats, export_outputs,
          receiver_tensors_alternatives={"raw": {"r": self.floats}})
    self.assertEqual(sorted(sigs), ["raw:serving_default", "serving_default"])
    self.assertEqual(list(sigs["serving_default"].inputs), ["input"])
    log = "\n".join(logs.output)
    self.assertIn("EXCLUDED", log)
    self.assertIn("'classify'", log)
    self.assertIn("'raw:needs_unfed'", log)
    self.assertIn("unfed", log)

  def test_build_all_signature_defs_needs_dict(self):
    with self.assertRaisesRegex(ValueError, "must be a dict"):
      outputs_lib.build_all_signature_defs(self.floats, None)


class ReceiversTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.enter_context(tf.Graph().as_default())
    self.x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    self.s = tf.compat.v1.placeholder(tf.string, [None], name="s")

  def test_serving_receiver_wraps_single_tensors(self):
    receiver = export.ServingInputReceiver(self.x, self.s)
    self.assertEqual(receiver.features, {"feature": self.x})
    self.assertEqual(receiver.receiver_tensors, {"input": self.s})
    self.assertIsNone(receiver.receiver_tensors_alternatives)
    receiver = export.ServingInputReceiver(
        {1: self.x}, {"s": self.s}, receiver_tensors_alternatives={"a": self.x})
    self.assertEqual(receiver.receiver_tensors_alternatives,
                     {"a": {"input": self.x}})

  def test_serving_receiver_validation(self):
    with self.assertRaisesRegex(ValueError, "features must be defined"):
      export.ServingInputReceiver(None, self.s)
    with self.assertRaisesRegex(
        ValueError, "feature x must be a Tensor, SparseTensor, or RaggedTensor"):
      export.ServingInputReceiver({"x": [1.0]}, self.s)
    with self.assertRaisesRegex(ValueError,
                                "receiver_tensor keys must be strings: 1"):
      export.ServingInputReceiver(self.x, {1: self.s})
    with self.assertRaisesRegex(ValueError, "feature keys must be strings or "
                                "ints"):
      export.ServingInputReceiver({1.5: self.x}, self.s)
    with self.assertRaisesRegex(ValueError, "alternatives must be a dict"):
      export.ServingInputReceiver(self.x, self.s, [self.x])
    with self.assertRaises(errors.InputFnError):
      export.ServingInputReceiver(self.x, None)

  def test_tensor_serving_receiver_keeps_raw_tensor(self):
    receiver = export.TensorServingInputReceiver(self.x, self.s)
    self.assertIs(receiver.features, self.x)
    self.assertEqual(receiver.receiver_tensors, {"input": self.s})
    with self.assertRaisesRegex(ValueError, "feature must be a Tensor"):
      export.TensorServingInputReceiver({"x": self.x}, self.s)

  def test_supervised_receiver_keeps_features_and_labels(self):
    receiver = export.SupervisedInputReceiver(self.x, self.x, self.x)
    self.assertIs(receiver.features, self.x)
    self.assertIs(receiver.labels, self.x)
    self.assertEqual(receiver.receiver_tensors, {"input": self.x})
    with self.assertRaisesRegex(ValueError, "labels must be defined"):
      export.SupervisedInputReceiver(self.x, None, self.x)

  def test_raw_receiver_fns(self):
    receiver = export.build_raw_serving_input_receiver_fn(
        {"x": self.x}, default_batch_size=4)()
    self.assertEqual(receiver.features["x"].shape.as_list(), [4, 2])
    self.assertIs(receiver.features["x"], receiver.receiver_tensors["x"])
    with self.assertRaisesRegex(ValueError, "overlapping keys: {'x'}"):
      export.build_raw_supervised_input_receiver_fn(
          {"x": self.x}, {"x": self.x})
    receiver = export.build_raw_supervised_input_receiver_fn(
        {"x": self.x}, self.s)()
    self.assertEqual(sorted(receiver.receiver_tensors), ["label", "x"])
    self.assertEqual(receiver.labels.dtype, tf.string)

  def test_parsing_receiver_fn(self):
    receiver = export.build_parsing_serving_input_receiver_fn(FEATURE_SPEC)()
    self.assertEqual(list(receiver.receiver_tensors), ["examples"])
    examples = receiver.receiver_tensors["examples"]
    self.assertEqual(examples.dtype, tf.string)
    with tf.compat.v1.Session() as sess:
      x = sess.run(receiver.features["x"], {
          examples: serialized_examples([[1.0, 2.0], [3.0, 4.0]])})
    np.testing.assert_allclose(x, [[1.0, 2.0], [3.0, 4.0]])


class WriterTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    self.ckpt, self.kernel, self.bias = train_checkpoint(self.model_dir)
    self.base = os.path.join(self.model_dir, "export")

  def _export(self, receiver_fn_map, spec_fn=None, **kwargs):
    return writer.export_all_saved_models(
        self.base, receiver_fn_map, spec_fn or build_spec_fn(), self.ckpt,
        **kwargs)

  def test_predict_export_serves_checkpoint_values(self):
    export_dir = self._export({ModeKeys.PREDICT: raw_receiver_fn()})
    self.assertIsInstance(export_dir, bytes)
    export_dir = export_dir.decode()
    self.assertEqual(os.path.dirname(export_dir), self.base)
    self.assertTrue(os.path.basename(export_dir).isdigit())
    self.assertEqual(os.listdir(self.base), [os.path.basename(export_dir)])
    x = [[1.0, 2.0], [-1.0, 0.5]]
    result, meta_graph = run_signature_v1(export_dir, {"x": x})
    np.testing.assert_allclose(result["y"], expected_y(x, self.kernel,
                                                       self.bias), rtol=1e-6)
    self.assertEqual(meta_graph.meta_info_def.tags, ["serve"])

  def test_text_export_escapes_quotes(self):
    # A variable name of 32 bytes (34 with ":0") puts a '"' (byte 34) into
    # its serialized VariableDef in the "variables" collection; protobuf
    # 5.29's upb str() wrote it unescaped: a pbtxt no loader could read.
    def spec_fn(features, labels, mode):
      del labels
      weights = tf.compat.v1.get_variable(
          "quote_in_a_varname_32_bytes_long", [2, 1], use_resource=True)
      y = tf.matmul(features["x"], weights)
      return EstimatorSpec(mode, predictions={"y": y})
    with tf.Graph().as_default():
      tf.compat.v1.train.get_or_create_global_step()
      tf.compat.v1.get_variable("quote_in_a_varname_32_bytes_long", [2, 1],
                                use_resource=True)
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        ckpt = tf.compat.v1.train.Saver().save(
            sess, os.path.join(self.model_dir, "quoted", "model.ckpt"))
    export_dir = writer.export_all_saved_models(
        self.base, {ModeKeys.PREDICT: raw_receiver_fn()}, spec_fn, ckpt,
        as_text=True)
    text = open(os.path.join(export_dir, b"saved_model.pbtxt"),
                encoding="latin-1").read()
    self.assertIn('\\"quote_in_a_varname_32_bytes_long', text)
    self.assertFalse(os.path.exists(os.path.join(export_dir,
                                                 b"saved_model.pb")))
    result, _ = run_signature_v1(export_dir, {"x": [[1.0, 2.0]]})
    self.assertEqual(result["y"].shape, (1, 1))

  def test_parsing_receiver_with_regression_signature(self):
    export_dir = self._export({ModeKeys.PREDICT: parsing_receiver_fn()},
                              build_spec_fn("regress"), as_text=True)
    self.assertTrue(os.path.exists(
        os.path.join(export_dir, b"saved_model.pbtxt")))
    rows = [[0.5, 1.5], [2.0, -3.0]]
    result, meta_graph = run_signature_v1(
        export_dir, {"inputs": serialized_examples(rows)})
    self.assertEqual(sorted(meta_graph.signature_def),
                     ["predict", "serving_default"])
    self.assertEqual(meta_graph.signature_def["serving_default"].method_name,
                     "tensorflow/serving/regress")
    np.testing.assert_allclose(result["outputs"],
                               expected_y(rows, self.kernel, self.bias),
                               rtol=1e-6)

  def test_all_modes_share_variables_with_their_tags(self):
    supervised = export.build_raw_supervised_input_receiver_fn(
        {"x": tf.zeros([1, 2])}, tf.zeros([1, 1]))
    export_dir = self._export({ModeKeys.PREDICT: raw_receiver_fn(),
                               ModeKeys.TRAIN: supervised,
                               ModeKeys.EVAL: supervised})
    x, label = [[1.0, 1.0]], [[0.0]]
    result, _ = run_signature_v1(export_dir, {"x": x, "label": label},
                                 signature="eval", tags=["eval"])
    y = expected_y(x, self.kernel, self.bias)
    np.testing.assert_allclose(result["loss"], np.mean(np.square(y)),
                               rtol=1e-6)
    self.assertIn("metrics/mse/value", result)
    _, meta_graph = run_signature_v1(export_dir, {"x": x, "label": label},
                                     signature="train", tags=["train"])
    self.assertLen(meta_graph.collection_def["saved_model_train_op"]
                   .node_list.value, 1)

  def test_assets_and_assets_extra(self):
    vocab = write_vocab(self.create_tempdir().full_path)
    export_dir = self._export({ModeKeys.PREDICT: vocab_receiver_fn},
                              vocab_spec_fn(vocab),
                              assets_extra={"sub/copy.txt": vocab}).decode()
    with open(os.path.join(export_dir, "assets.extra", "sub", "copy.txt")) as f:
      self.assertIn("banana", f.read())
    self.assertTrue(os.path.exists(
        os.path.join(export_dir, "assets", "vocab.txt")))
    os.remove(vocab)  # The SavedModel must use its own copy.
    result, _ = run_signature_v1(
        export_dir, {"x": [[0.0, 0.0]], "word": ["cherry"]})
    self.assertEqual(list(result["word_id"]), [2])

  def test_failed_export_leaves_nothing(self):
    def failing_spec_fn(features, labels, mode):
      build_spec_fn()(features, labels, mode)
      raise RuntimeError("model_fn broke")

    with self.assertRaisesRegex(RuntimeError, "model_fn broke"):
      self._export({ModeKeys.PREDICT: raw_receiver_fn()}, failing_spec_fn)
    self.assertEqual(os.listdir(self.base) if os.path.isdir(self.base)
                     else [], [])

  def test_missing_checkpoint(self):
    missing = os.path.join(self.model_dir, "model.ckpt-999")
    with self.assertRaisesRegex(errors.CheckpointError, "model.ckpt-999"):
      writer.export_all_saved_models(
          self.base, {ModeKeys.PREDICT: raw_receiver_fn()}, build_spec_fn(),
          missing)
    self.assertFalse(os.path.exists(self.base))

  def test_checkpoint_lacks_variables(self):
    def bigger_spec_fn(features, labels, mode):
      tf.compat.v1.get_variable("not_in_checkpoint", [1])
      return build_spec_fn()(features, labels, mode)

    with self.assertRaisesRegex(errors.CheckpointError,
                                "not_in_checkpoint|Could not load all"):
      self._export({ModeKeys.PREDICT: raw_receiver_fn()}, bigger_spec_fn)
    self.assertEqual(os.listdir(self.base), [])

  def test_checkpoint_directory_means_latest(self):
    export_dir = writer.export_all_saved_models(
        self.base, {ModeKeys.PREDICT: raw_receiver_fn()}, build_spec_fn(),
        self.model_dir)
    self.assertLen(writer.list_exports(self.base), 1)
    self.assertEqual(writer.list_exports(self.base)[0], export_dir.decode())

  def test_bad_modes_and_receivers(self):
    with self.assertRaisesRegex(errors.ConfigError, "No valid modes"):
      self._export({})
    with self.assertRaisesRegex(errors.ConfigError, "unknown: \\['serve'\\]"):
      self._export({"serve": raw_receiver_fn()})
    with self.assertRaisesRegex(errors.InputFnError, "must return a "
                                "ServingInputReceiver"):
      self._export({ModeKeys.PREDICT: lambda: {"x": 1}})

  def test_timestamped_dir_waits_when_taken(self):
    base = self.create_tempdir().full_path
    os.mkdir(os.path.join(base, "1000"))
    times, sleeps = iter([1000.2, 1000.9, 1001.5]), []
    path = writer.get_timestamped_export_dir(
        base, clock=lambda: next(times), sleep=sleeps.append)
    self.assertEqual(path, os.path.join(base, "1001").encode())
    self.assertEqual(sleeps, [1, 1])
    with self.assertRaisesRegex(RuntimeError, "after 10 attempts"):
      writer.get_timestamped_export_dir(base, clock=lambda: 1000,
                                        sleep=lambda _: None)

  def test_list_exports_only_complete_timestamped(self):
    base = self.create_tempdir().full_path
    for name in ("300", "20", ".temp-400-1", "notes", "500"):
      os.mkdir(os.path.join(base, name))
    for name in ("300", "20", ".temp-400-1"):
      open(os.path.join(base, name, "saved_model.pb"), "w").close()
    self.assertEqual(writer.list_exports(base),
                     [os.path.join(base, "20"), os.path.join(base, "300")])
    self.assertEqual(writer.list_exports(os.path.join(base, "none")), [])


_EAGER_LOAD_SCRIPT = textwrap.dedent("""
    import base64, json, sys
    import tensorflow as tf
    assert tf.executing_eagerly()

    def tensor(value):
      if isinstance(value, dict):  # {"b64": [...]}: serialized protos.
        return tf.constant([base64.b64decode(v) for v in value["b64"]])
      return tf.constant(value)

    results = {}
    for name, (path, feeds) in json.loads(sys.argv[1]).items():
      fn = tf.saved_model.load(path).signatures["serving_default"]
      out = fn(**{k: tensor(v) for k, v in feeds.items()})
      results[name] = {k: v.numpy().tolist() for k, v in out.items()}
    print("RESULTS" + json.dumps(results, default=lambda b: b.decode()))
""")


class EagerLoadTest(absltest.TestCase):

  @pytest.mark.slow
  def test_exports_serve_in_tf2_eager_subprocess(self):
    model_dir = self.create_tempdir().full_path
    ckpt, kernel, bias = train_checkpoint(model_dir)
    vocab = write_vocab(self.create_tempdir().full_path)

    def write(kind, receiver_fn, spec_fn):
      return writer.export_all_saved_models(
          os.path.join(model_dir, "export", kind),
          {ModeKeys.PREDICT: receiver_fn}, spec_fn, ckpt).decode()

    rows = [[1.0, 2.0], [3.0, -1.0]]
    examples = {"b64": [base64.b64encode(e).decode()
                        for e in serialized_examples(rows)]}
    jobs = {
        "predict": (write("p", raw_receiver_fn(), build_spec_fn()),
                    {"x": rows}),
        "classify": (write("c", parsing_receiver_fn(),
                           build_spec_fn("classify")), {"inputs": examples}),
        "vocab": (write("v", vocab_receiver_fn, vocab_spec_fn(vocab)),
                  {"x": rows, "word": ["cherry", "kiwi"]}),
    }
    os.remove(vocab)  # The SavedModel must use its own copy.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable, "-c", _EAGER_LOAD_SCRIPT, json.dumps(jobs)]
    proc = subprocess.run(command, capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    self.assertEqual(proc.returncode, 0,
                     f"{command[:3]} failed:\n{proc.stderr[-3000:]}")
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULTS")]
    results = json.loads(line[0][len("RESULTS"):])
    want = expected_y(rows, kernel, bias)
    np.testing.assert_allclose(results["predict"]["y"], want, rtol=1e-5)
    np.testing.assert_allclose(results["vocab"]["y"], want, rtol=1e-5)
    self.assertEqual(results["vocab"]["word_id"], [2, -1])
    scores = np.asarray(results["classify"]["scores"])
    np.testing.assert_allclose(scores[:, 1], 1 / (1 + np.exp(-want[:, 0])),
                               rtol=1e-5)
    self.assertEqual(results["classify"]["classes"], [["neg", "pos"]] * 2)


if __name__ == "__main__":
  absltest.main()
