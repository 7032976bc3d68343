"""The v2 heads: losses, predictions and eval metrics against numpy, keys,
export signatures, train ops (2.15's semantics)."""

import numpy as np
from absl.testing import absltest
from absl.testing import parameterized

import harness
from harness import errors
from harness._tf import tf
from harness.canned import head as head_lib
from harness.canned.head import base_head

_SUM = tf.keras.losses.Reduction.SUM
_MEAN = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE


def _sigmoid(x):
  return 1. / (1. + np.exp(-x))


def _softmax(x):
  e = np.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def _sigmoid_xent(labels, logits):
  return np.maximum(logits, 0) - logits * labels + np.log1p(
      np.exp(-np.abs(logits)))


class _GraphTest(parameterized.TestCase):
  """Builds ops in a fresh graph; `run` initialises everything it needs."""

  def setUp(self):
    super().setUp()
    self._graph = tf.Graph()
    self._ctx = self._graph.as_default()
    self._ctx.__enter__()

  def tearDown(self):
    self._ctx.__exit__(None, None, None)
    super().tearDown()

  def assertAllClose(self, got, want, rtol=1e-6, msg=""):  # pylint: disable=invalid-name
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-7, err_msg=msg)

  def assertAllEqual(self, got, want):  # pylint: disable=invalid-name
    np.testing.assert_array_equal(got, want)

  def run_ops(self, fetches, metrics=None):
    with tf.compat.v1.Session(graph=self._graph) as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.local_variables_initializer(),
                   tf.compat.v1.tables_initializer()])
      if metrics:
        session.run(tf.compat.v1.variables_initializer(
            [v for m in metrics.values() for v in m.variables]))
        session.run([u for m in metrics.values() for u in m.updates])
        fetches = (fetches, {k: m.result() for k, m in metrics.items()})
      return session.run(fetches)


class BinaryClassHeadTest(_GraphTest):

  def test_loss_metrics_and_predictions_match_numpy(self):
    logits = np.array([[2.], [-1.], [0.5], [-3.]], np.float32)
    labels = np.array([[1], [1], [0], [0]], np.int64)
    weights = np.array([1., 2., 3., 1.], np.float32)
    head = head_lib.BinaryClassHead(weight_column="w")
    features = {"w": tf.constant(weights)}
    loss = head.loss(tf.constant(labels), tf.constant(logits), features)
    metrics = head.update_metrics(head.metrics(), features,
                                  tf.constant(logits), tf.constant(labels))
    preds = head.predictions(tf.constant(logits))
    got_loss, got_metrics = self.run_ops(loss, metrics)
    got_preds = self.run_ops(preds)

    xent = _sigmoid_xent(labels, logits)[:, 0]
    self.assertAllClose(got_loss, np.sum(xent * weights) / 4, rtol=1e-6)
    classes = (logits[:, 0] > 0).astype(np.int64)
    w_sum = weights.sum()
    expected = {
        "average_loss": np.sum(xent * weights) / w_sum,
        "accuracy": np.sum((classes == labels[:, 0]) * weights) / w_sum,
        "label/mean": np.sum(labels[:, 0] * weights) / w_sum,
        "prediction/mean": np.sum(_sigmoid(logits[:, 0]) * weights) / w_sum,
        "precision": 1. / 4.,  # Predicted positive: rows 0 (w 1), 2 (w 3).
        "recall": 1. / 3.,  # Positives weigh 1 + 2; row 0 found.
    }
    label_mean = expected["label/mean"]
    expected["accuracy_baseline"] = max(label_mean, 1 - label_mean)
    # Weighted ROC AUC: (pos, neg) pairs weighted by w_pos * w_neg, counted
    # when pos scores higher. pos = {0: w1 s2, 1: w2 s-1}; neg = {2: w3 s.5,
    # 3: w1 s-3}: (0,2) 3, (0,3) 1, (1,2) 0, (1,3) 2 -> 6 of 12.
    expected["auc"] = 0.5
    self.assertEqual(set(got_metrics), set(expected) | {
        "auc_precision_recall"})
    for key, value in expected.items():
      tol = 2e-2 if key == "auc" else 1e-6  # AUC: 200 thresholds.
      self.assertAllClose(got_metrics[key], value, rtol=tol, msg=key)
    self.assertEqual(set(got_preds), {
        "logits", "logistic", "probabilities", "class_ids", "classes",
        "all_class_ids", "all_classes"})
    self.assertAllClose(got_preds["logistic"], _sigmoid(logits))
    self.assertAllClose(got_preds["probabilities"][:, 1],
                        _sigmoid(logits[:, 0]))
    self.assertAllEqual(got_preds["class_ids"][:, 0], classes)
    self.assertAllEqual(got_preds["classes"][:, 0],
                        [str(c).encode() for c in classes])
    self.assertAllEqual(got_preds["all_classes"][0], [b"0", b"1"])

  def test_label_vocabulary_and_thresholds(self):
    head = head_lib.BinaryClassHead(label_vocabulary=["no", "yes"],
                                    thresholds=[0.3, 0.7])
    logits = tf.constant([[1.], [-1.], [0.]])
    labels = tf.constant([["yes"], ["no"], ["yes"]])
    metrics = head.update_metrics(head.metrics(), {}, logits, labels)
    preds = head.predictions(logits)
    _, got = self.run_ops(tf.no_op(), metrics)
    self.assertIn("accuracy/positive_threshold_0.3", got)
    self.assertIn("precision/positive_threshold_0.7", got)
    self.assertIn("recall/positive_threshold_0.7", got)
    # logistic = .73, .27, .5: at 0.3 -> 1, 0, 1: all right.
    self.assertAllClose(got["accuracy/positive_threshold_0.3"], 1.)
    self.assertAllClose(got["accuracy/positive_threshold_0.7"], 2. / 3.)
    got_preds = self.run_ops(preds)
    self.assertAllEqual(got_preds["classes"][:, 0], [b"yes", b"no", b"no"])
    self.assertAllEqual(got_preds["all_classes"][0], [b"no", b"yes"])

  def test_bad_arguments_are_refused(self):
    with self.assertRaisesRegex(ValueError, r"thresholds not in \(0, 1\)"):
      head_lib.BinaryClassHead(thresholds=[1.5])
    with self.assertRaisesRegex(ValueError, "Invalid loss_reduction: none"):
      head_lib.BinaryClassHead(loss_reduction="none")
    with self.assertRaisesRegex(ValueError, "should be a list or a tuple"):
      head_lib.BinaryClassHead(label_vocabulary="ab")
    head = head_lib.BinaryClassHead()
    with self.assertRaisesRegex(ValueError, "no label_vocabulary"):
      head.loss(tf.constant([["a"]]), tf.constant([[1.]]))
    with self.assertRaisesRegex(ValueError, "You must provide a labels"):
      head.loss(None, tf.constant([[1.]]))


class MultiClassHeadTest(_GraphTest):

  @parameterized.parameters(_MEAN, _SUM)
  def test_loss_and_metrics_match_numpy(self, reduction):
    logits = np.array([[1., 2., 0.], [0., 0., 3.], [2., -1., 1.]],
                      np.float32)
    labels = np.array([1, 0, 0], np.int64)  # Rank 1: reshaped to [3, 1].
    weights = np.array([[1.], [2.], [0.5]], np.float32)
    head = head_lib.MultiClassHead(3, weight_column="w",
                                   loss_reduction=reduction)
    features = {"w": tf.constant(weights)}
    loss = head.loss(tf.constant(labels), tf.constant(logits), features)
    metrics = head.update_metrics(head.metrics(), features,
                                  tf.constant(logits), tf.constant(labels))
    got_loss, got = self.run_ops(loss, metrics)
    xent = -np.log(_softmax(logits)[np.arange(3), labels])
    weighted = np.sum(xent * weights[:, 0])
    self.assertAllClose(got_loss, weighted / (3 if reduction == _MEAN else 1),
                        rtol=1e-6)
    self.assertEqual(set(got), {"accuracy", "average_loss"})
    self.assertAllClose(got["average_loss"], weighted / weights.sum(),
                        rtol=1e-6)
    right = np.argmax(logits, -1) == labels
    self.assertAllClose(got["accuracy"],
                        np.sum(right * weights[:, 0]) / weights.sum())

  def test_vocabulary_predictions_and_regularization(self):
    head = head_lib.MultiClassHead(3, label_vocabulary=["a", "b", "c"],
                                   name="k")
    logits = tf.constant([[0., 5., 1.], [3., 0., 0.]])
    labels = tf.constant([["b"], ["c"]])
    reg = [tf.constant(0.25)]
    loss = head.loss(labels, logits, {}, regularization_losses=reg)
    metrics = head.update_metrics(head.metrics(reg), {}, logits, labels,
                                  regularization_losses=reg)
    preds = head.predictions(logits)
    (got_loss, got_preds), got = self.run_ops((loss, preds), metrics)
    self.assertEqual(set(got), {"accuracy/k", "average_loss/k",
                                "regularization_loss/k"})
    self.assertAllClose(got["accuracy/k"], 0.5)
    self.assertAllClose(got["regularization_loss/k"], 0.25)
    xent = -np.log(_softmax(np.array([[0., 5., 1.], [3., 0., 0.]]))[
        [0, 1], [1, 2]])
    self.assertAllClose(got_loss, xent.mean() + 0.25, rtol=1e-6)
    self.assertAllEqual(got_preds["classes"][:, 0], [b"b", b"a"])
    self.assertAllEqual(got_preds["class_ids"][:, 0], [1, 0])
    self.assertAllEqual(got_preds["all_class_ids"][1], [0, 1, 2])
    self.assertAllEqual(got_preds["all_classes"][1], [b"a", b"b", b"c"])

  def test_bad_labels_are_refused(self):
    with self.assertRaisesRegex(ValueError, "n_classes must be > 2"):
      head_lib.MultiClassHead(2)
    head = head_lib.MultiClassHead(3)
    with self.assertRaisesRegex(ValueError, "Labels dtype should be integer"):
      head.loss(tf.constant([[1.]]), tf.constant([[1., 2., 3.]]))
    with self.assertRaisesRegex(ValueError, "Mismatched label shape"):
      head.loss(tf.constant([[1, 2]]), tf.constant([[1., 2., 3.]]))
    labels = tf.compat.v1.placeholder_with_default([[3]], [None, 1])
    out_of_range = head.loss(labels, tf.constant([[1., 2., 3.]]))
    with self.assertRaisesRegex(tf.errors.InvalidArgumentError,
                                "Labels must be <= n_classes - 1"):
      self.run_ops(out_of_range)


class RegressionHeadsTest(_GraphTest):

  def test_regression_loss_metrics_two_dimensions(self):
    logits = np.array([[1., 2.], [3., 4.], [0., -1.]], np.float32)
    labels = np.array([[1.5, 2.], [2., 4.], [0., 1.]], np.float32)
    weights = np.array([[1., 2.], [1., 1.], [3., 0.]], np.float32)
    head = head_lib.RegressionHead(label_dimension=2, weight_column=(
        tf.feature_column.numeric_column("w", shape=(2,))))
    features = {"w": tf.constant(weights)}
    loss = head.loss(tf.constant(labels), tf.constant(logits), features)
    metrics = head.update_metrics(head.metrics(), features,
                                  tf.constant(logits), tf.constant(labels))
    got_loss, got = self.run_ops(loss, metrics)
    sq = (logits - labels) ** 2
    self.assertAllClose(got_loss, np.sum(sq * weights) / 6, rtol=1e-6)
    self.assertAllClose(got["average_loss"],
                        np.sum(sq * weights) / weights.sum(), rtol=1e-6)
    self.assertAllClose(got["label/mean"],
                        np.sum(labels * weights) / weights.sum(), rtol=1e-6)
    self.assertAllClose(got["prediction/mean"],
                        np.sum(logits * weights) / weights.sum(), rtol=1e-6)
    self.assertAllEqual(sorted(self.run_ops(head.predictions(
        tf.constant(logits)))), ["predictions"])

  def test_poisson_and_logistic_heads(self):
    logits = np.array([[0.5], [-1.], [2.]], np.float32)
    counts = np.array([[1.], [0.], [4.]], np.float32)
    poisson = head_lib.PoissonRegressionHead()
    loss = poisson.loss(tf.constant(counts), tf.constant(logits), {})
    preds = poisson.predictions(tf.constant(logits))
    got_loss, got_preds = self.run_ops((loss, preds))
    stirling = np.where(counts > 1, counts * np.log(np.maximum(counts, 1)) -
                        counts + 0.5 * np.log(2 * np.pi * np.maximum(
                            counts, 1)), 0.)
    expected = np.exp(logits) - counts * logits + stirling
    self.assertAllClose(got_loss, expected.mean(), rtol=1e-5)
    self.assertAllClose(got_preds["predictions"], np.exp(logits))
    self.assertAllClose(got_preds["logits"], logits)

    probs = np.array([[1.], [0.], [0.25]], np.float32)
    logistic = head_lib.LogisticRegressionHead()
    loss = logistic.loss(tf.constant(probs), tf.constant(logits), {})
    preds = logistic.predictions(tf.constant(logits))
    got_loss, got_preds = self.run_ops((loss, preds))
    self.assertAllClose(got_loss, _sigmoid_xent(probs, logits).mean(),
                        rtol=1e-6)
    self.assertAllClose(got_preds["predictions"], _sigmoid(logits))
    bad = logistic.loss(
        tf.compat.v1.placeholder_with_default([[2.]], [None, 1]),
        tf.constant([[0.]]), {})
    with self.assertRaisesRegex(tf.errors.InvalidArgumentError,
                                r"Labels must be in range \[0, 1\]"):
      self.run_ops(bad)


class MultiLabelHeadTest(_GraphTest):

  def test_dense_and_sparse_labels_loss_and_class_metrics(self):
    logits = np.array([[-1., 1., 2.], [1.5, -1., 0.]], np.float32)
    dense = np.array([[0, 1, 1], [1, 0, 0]], np.int64)
    head = head_lib.MultiLabelHead(3, thresholds=[0.5],
                                   classes_for_class_based_metrics=[0, 2])
    sparse = tf.sparse.SparseTensor(indices=[[0, 0], [0, 1], [1, 0]],
                                    values=np.array([1, 2, 0], np.int64),
                                    dense_shape=[2, 2])
    loss_dense = head.loss(tf.constant(dense), tf.constant(logits), {})
    loss_sparse = head.loss(sparse, tf.constant(logits), {})
    metrics = head.update_metrics(head.metrics(), {}, tf.constant(logits),
                                  tf.constant(dense))
    (got_dense, got_sparse), got = self.run_ops((loss_dense, loss_sparse),
                                                metrics)
    expected = _sigmoid_xent(dense, logits).mean()
    self.assertAllClose(got_dense, expected, rtol=1e-6)
    self.assertAllClose(got_sparse, expected, rtol=1e-6)
    self.assertEqual(set(got), {
        "average_loss", "auc", "auc_precision_recall",
        "accuracy/positive_threshold_0.5", "precision/positive_threshold_0.5",
        "recall/positive_threshold_0.5", "probability_mean/class0",
        "probability_mean/class2", "auc/class0", "auc/class2",
        "auc_precision_recall/class0", "auc_precision_recall/class2"})
    self.assertAllClose(got["accuracy/positive_threshold_0.5"], 1.)
    self.assertAllClose(got["probability_mean/class2"],
                        _sigmoid(logits[:, 2]).mean(), rtol=1e-6)
    self.assertAllEqual(sorted(self.run_ops(head.predictions(
        tf.constant(logits)))), ["classes", "logits", "probabilities"])


class MultiHeadTest(_GraphTest):

  def test_weighted_loss_keys_and_export_outputs(self):
    kind = head_lib.MultiClassHead(3, name="kind")
    price = head_lib.RegressionHead(name="price")
    head = head_lib.MultiHead([kind, price], head_weights=[1., 0.5])
    self.assertEqual(head.name, "kind_price")
    self.assertEqual(head.logits_dimension, 4)
    logits = tf.constant([[1., 0., 0., 2.], [0., 1., 0., 3.]])
    labels = {"kind": tf.constant([[0], [2]]),
              "price": tf.constant([[1.], [1.]])}
    loss = head.loss(labels, logits, {})
    metrics = head.update_metrics(head.metrics(), {}, logits, labels)
    got_loss, got = self.run_ops(loss, metrics)
    xent = -np.log(_softmax(np.array([[1., 0., 0.], [0., 1., 0.]]))[
        [0, 1], [0, 2]]).mean()
    mse = ((2. - 1.) ** 2 + (3. - 1.) ** 2) / 2
    self.assertAllClose(got_loss, xent + 0.5 * mse, rtol=1e-6)
    self.assertEqual(set(got), {
        "loss/kind", "loss/price", "accuracy/kind", "average_loss/kind",
        "average_loss/price", "label/mean/price", "prediction/mean/price"})
    self.assertAllClose(got["loss/price"], mse)
    spec = head.create_estimator_spec({}, "infer", logits)
    self.assertIn(("kind", "probabilities"), spec.predictions)
    self.assertIn(("price", "predictions"), spec.predictions)
    self.assertEqual(set(spec.export_outputs), {
        "serving_default", "kind", "kind/classification", "kind/predict",
        "price", "price/regression", "price/predict", "predict"})
    self.assertIs(spec.export_outputs["serving_default"],
                  spec.export_outputs["kind"])
    with self.assertRaisesRegex(ValueError, "must have name specified"):
      head_lib.MultiHead([head_lib.RegressionHead()])


class EstimatorSpecTest(_GraphTest):

  def _model(self):
    x = tf.constant([[1., 2.], [3., 4.]])
    logits = tf.compat.v1.layers.dense(x, 3, name="dnn/logits")
    return logits, tf.constant([[0], [2]])

  def test_train_op_names_slots_like_2_15_and_steps_global_step(self):
    logits, labels = self._model()
    step = tf.compat.v1.train.get_or_create_global_step()
    optimizer = tf.keras.optimizers.legacy.Adagrad(0.05)
    optimizer.iterations = step
    spec = head_lib.MultiClassHead(3).create_estimator_spec(
        features={}, mode="train", logits=logits, labels=labels,
        optimizer=optimizer,
        trainable_variables=tf.compat.v1.trainable_variables())
    names = {v.op.name for v in tf.compat.v1.global_variables()}
    self.assertEqual(names, {
        "dnn/logits/kernel", "dnn/logits/bias", "global_step",
        "training/Adagrad/learning_rate", "training/Adagrad/decay",
        "training/Adagrad/dnn/logits/kernel/accumulator",
        "training/Adagrad/dnn/logits/bias/accumulator"})
    self.assertEqual(spec.mode, "train")
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      first = session.run(spec.loss)
      for _ in range(3):
        session.run(spec.train_op)
      self.assertEqual(session.run(step), 3)
      self.assertLess(session.run(spec.loss), first)

  def test_train_op_fn_eval_and_predict_specs(self):
    logits, labels = self._model()
    head = head_lib.MultiClassHead(3)
    seen = []

    def train_op_fn(loss):
      seen.append(loss)
      return tf.no_op(name="my_train_op")

    train = head.create_estimator_spec(
        features={}, mode="train", logits=logits, labels=labels,
        train_op_fn=train_op_fn)
    self.assertEqual(train.train_op.name, "training/my_train_op")
    self.assertIs(seen[0], train.loss)
    evaluate = head.create_estimator_spec(
        features={}, mode="eval", logits=logits, labels=labels)
    self.assertEqual(set(evaluate.eval_metric_ops),
                     {"accuracy", "average_loss"})
    predict = head.create_estimator_spec(features={}, mode="infer",
                                         logits=logits)
    self.assertEqual(set(predict.export_outputs),
                     {"serving_default", "classification", "predict"})

  def test_optimizer_errors_name_the_fix(self):
    logits, labels = self._model()
    head = head_lib.MultiClassHead(3)
    variables = tf.compat.v1.trainable_variables()
    with self.assertRaisesRegex(ValueError, "cannot both be set"):
      head.create_estimator_spec(
          features={}, mode="train", logits=logits, labels=labels,
          optimizer=tf.keras.optimizers.legacy.SGD(),
          train_op_fn=lambda loss: tf.no_op(), trainable_variables=variables)
    with self.assertRaisesRegex(ValueError, "cannot both be None"):
      head.create_estimator_spec(features={}, mode="train", logits=logits,
                                 labels=labels)
    with self.assertRaisesRegex(errors.ConfigError,
                                "tf.keras.optimizers.legacy.SGD"):
      head.create_estimator_spec(
          features={}, mode="train", logits=logits, labels=labels,
          optimizer=tf.keras.optimizers.SGD(), trainable_variables=variables)
    with self.assertRaisesRegex(ValueError, "trainable_variables cannot be"):
      head.create_estimator_spec(
          features={}, mode="train", logits=logits, labels=labels,
          optimizer=tf.keras.optimizers.legacy.SGD())

  def test_head_interface_is_abstract(self):
    with self.assertRaises(TypeError):
      base_head.Head()  # pylint: disable=abstract-class-instantiated


class MultiHeadEstimatorTest(absltest.TestCase):
  """A custom model_fn with a MultiHead through harness.Estimator."""

  def test_train_evaluate_predict_export(self):
    x = np.random.RandomState(0).randn(64, 3).astype(np.float32)
    labels = {"kind": (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0),
              "price": x[:, 2:3]}

    def input_fn():
      return tf.data.Dataset.from_tensor_slices(({"x": x}, labels)).batch(16)

    def model_fn(features, labels, mode):
      head = head_lib.MultiHead([head_lib.MultiClassHead(3, name="kind"),
                                 head_lib.RegressionHead(name="price")])
      logits = tf.compat.v1.layers.dense(features["x"], head.logits_dimension)
      optimizer = tf.keras.optimizers.legacy.Adagrad(0.1)
      optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
      return head.create_estimator_spec(
          features=features, mode=mode, logits=logits, labels=labels,
          optimizer=optimizer,
          trainable_variables=tf.compat.v1.trainable_variables())

    est = harness.Estimator(model_fn,
                            model_dir=self.create_tempdir().full_path)
    est.train(lambda: input_fn().repeat(), steps=20)
    self.assertEqual(est.get_variable_value("global_step"), 20)
    metrics = est.evaluate(input_fn)
    self.assertEqual(set(metrics), {
        "accuracy/kind", "average_loss/kind", "average_loss/price",
        "label/mean/price", "prediction/mean/price", "loss/kind",
        "loss/price", "loss", "global_step"})
    np.testing.assert_allclose(metrics["label/mean/price"], x[:, 2].mean(),
                               rtol=1e-5)
    prediction = next(iter(est.predict(input_fn)))
    self.assertIn(("kind", "class_ids"), prediction)
    self.assertIn(("price", "predictions"), prediction)
    spec = {"x": tf.io.FixedLenFeature([3], tf.float32)}
    path = est.export_saved_model(
        self.create_tempdir().full_path,
        harness.export.build_parsing_serving_input_receiver_fn(spec))
    self.assertEqual(sorted(tf.saved_model.load(path).signatures.keys()), [
        "kind", "kind/classification", "kind/predict", "predict", "price",
        "price/predict", "price/regression", "serving_default"])


if __name__ == "__main__":
  absltest.main()
