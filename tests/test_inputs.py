"""Tests of harness.inputs: numpy_input_fn and pandas_input_fn."""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from harness import errors
from harness import inputs
from harness._tf import tf

try:
  import pandas as pd  # pylint: disable=g-import-not-at-top
except ImportError:
  pd = None


def _read_all(input_fn, max_batches=100):
  """Calls input_fn in a fresh graph; returns the list of batches it yields."""
  batches = []
  with tf.Graph().as_default():
    tensors = input_fn()
    with tf.compat.v1.train.MonitoredSession() as session:
      while not session.should_stop() and len(batches) < max_batches:
        batches.append(session.run(tensors))
  return batches


class NumpyInputFnTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("embedded", 5),
      # Over 1 MiB: gathered by a numpy_function, not embedded in the graph.
      ("gathered", 300_000))
  def test_dict_x_array_y_keeps_last_partial_batch(self, num_rows):
    x = {"b": np.arange(num_rows, dtype=np.float32),
         "a": np.array([f"w{i}" for i in range(num_rows)])}
    y = np.arange(num_rows) * 10
    input_fn = inputs.numpy_input_fn(x, y, batch_size=2, shuffle=False)
    batches = _read_all(input_fn, max_batches=3)
    features, labels = batches[0]
    self.assertEqual(sorted(features), ["a", "b"])
    np.testing.assert_array_equal(features["b"], [0.0, 1.0])
    np.testing.assert_array_equal(features["a"], [b"w0", b"w1"])
    np.testing.assert_array_equal(labels, [0, 10])
    if num_rows == 5:
      self.assertLen(batches, 3)
      np.testing.assert_array_equal(batches[2][1], [40])

  def test_large_data_stays_out_of_the_graph(self):
    x = {"x": np.zeros([300_000, 2], np.float32)}
    input_fn = inputs.numpy_input_fn(x, batch_size=4, shuffle=False)
    with tf.Graph().as_default() as graph:
      features = input_fn()
      self.assertEqual(features["x"].shape.as_list(), [None, 2])
      self.assertLess(graph.as_graph_def().ByteSize(), 100_000)

  def test_array_x_without_y_returns_features_only(self):
    input_fn = inputs.numpy_input_fn(
        np.arange(6, dtype=np.int64).reshape(3, 2), batch_size=2,
        shuffle=False)
    with tf.Graph().as_default():
      features = input_fn()
      self.assertIsInstance(features, tf.Tensor)
      self.assertEqual(features.dtype, tf.int64)
    batches = _read_all(input_fn)
    np.testing.assert_array_equal(batches[0], [[0, 1], [2, 3]])
    np.testing.assert_array_equal(batches[1], [[4, 5]])

  def test_dict_y(self):
    input_fn = inputs.numpy_input_fn(
        {"x": np.arange(3)}, {"y1": np.arange(3) + 1, "y2": np.arange(3) + 2},
        batch_size=3, shuffle=False)
    (features, labels), = _read_all(input_fn)
    np.testing.assert_array_equal(features["x"], [0, 1, 2])
    np.testing.assert_array_equal(labels["y1"], [1, 2, 3])
    np.testing.assert_array_equal(labels["y2"], [2, 3, 4])

  def test_epochs_run_on_across_batches(self):
    input_fn = inputs.numpy_input_fn(
        {"x": np.arange(5)}, batch_size=3, num_epochs=2, shuffle=False)
    rows = [list(b["x"]) for b in _read_all(input_fn)]
    self.assertEqual(rows, [[0, 1, 2], [3, 4, 0], [1, 2, 3], [4]])

  def test_forever_gives_full_batches(self):
    input_fn = inputs.numpy_input_fn(
        {"x": np.arange(5)}, batch_size=3, num_epochs=None, shuffle=False)
    with tf.Graph().as_default():
      self.assertEqual(input_fn()["x"].shape.as_list(), [3])
    batches = _read_all(input_fn, max_batches=10)
    self.assertLen(batches, 10)
    self.assertEqual(list(batches[9]["x"]), [2, 3, 4])

  def test_shuffle_permutes_each_epoch(self):
    input_fn = inputs.numpy_input_fn(
        {"x": np.arange(50)}, batch_size=50, num_epochs=2, shuffle=True,
        queue_capacity=10)
    first, second = (sorted(b["x"]) for b in _read_all(input_fn))
    self.assertEqual(first, list(range(50)))
    self.assertEqual(second, list(range(50)))
    self.assertNotEqual(list(_read_all(input_fn)[0]["x"]), list(range(50)))

  def test_trains_an_estimator_until_input_ends(self):
    from harness import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
    from harness import spec  # pylint: disable=g-import-not-at-top

    def model_fn(features, labels, mode):
      weight = tf.compat.v1.get_variable("w", [], tf.float64)
      loss = tf.reduce_mean(tf.square(features["x"] * weight - labels))
      train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
      return spec.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = estimator_lib.Estimator(
        model_fn, model_dir=self.create_tempdir().full_path)
    est.train(inputs.numpy_input_fn(
        {"x": np.arange(5.0)}, np.arange(5.0), batch_size=2, shuffle=True))
    self.assertEqual(est.get_variable_value("global_step"), 3)

  @parameterized.named_parameters(
      ("shuffle_missing", dict(x={"x": np.arange(2)}), errors.InputFnError,
       "shuffle must be provided and explicitly set as boolean"),
      ("x_list", dict(x=[1, 2], shuffle=False), TypeError,
       "x must be a dict or array; got list"),
      ("x_empty", dict(x={}, shuffle=False), errors.InputFnError,
       "x cannot be an empty dict"),
      ("y_empty", dict(x={"x": np.arange(2)}, y={}, shuffle=False),
       errors.InputFnError, "y cannot be empty dict"),
      ("duplicate", dict(x={"k": np.arange(2)}, y={"k": np.arange(2)},
                         shuffle=False),
       errors.InputFnError, "1 duplicate keys are found in both x and y"),
      ("length", dict(x={"x": np.arange(2)}, y=np.arange(3), shuffle=False),
       errors.InputFnError,
       r"(?s)mismatched.*Shapes in x: \{'x': \(2,\)\}.*Shapes in y: \(3,\)"),
      ("batch_size", dict(x={"x": np.arange(2)}, batch_size=0,
                          shuffle=False),
       errors.InputFnError, "batch_size must be a positive int, got 0"),
      ("num_epochs", dict(x={"x": np.arange(2)}, num_epochs=0,
                          shuffle=False),
       errors.InputFnError, "num_epochs must be a positive int or None"),
  )
  def test_argument_errors(self, kwargs, error, regex):
    with self.assertRaisesRegex(error, regex):
      inputs.numpy_input_fn(**kwargs)


@absltest.skipIf(pd is None, "pandas is not installed: pip install pandas")
class PandasInputFnTest(absltest.TestCase):

  def _frame(self):
    return pd.DataFrame({"age": [10, 20, 30], "name": ["a", "b", "c"]},
                        index=[7, 8, 9])

  def test_series_y(self):
    x = self._frame()
    y = pd.Series([0.5, 1.5, 2.5], index=x.index)
    input_fn = inputs.pandas_input_fn(x, y, batch_size=2, shuffle=False)
    batches = _read_all(input_fn)
    features, labels = batches[0]
    self.assertEqual(sorted(features), ["age", "name"])
    np.testing.assert_array_equal(features["age"], [10, 20])
    np.testing.assert_array_equal(features["name"], [b"a", b"b"])
    np.testing.assert_array_equal(labels, [0.5, 1.5])
    np.testing.assert_array_equal(batches[1][1], [2.5])

  def test_frame_y_and_no_y(self):
    x = self._frame()
    y = pd.DataFrame({"t1": [1, 2, 3], "t2": [4, 5, 6]}, index=x.index)
    (_, labels), = _read_all(inputs.pandas_input_fn(
        x, y, batch_size=3, shuffle=False, queue_capacity=None))
    np.testing.assert_array_equal(labels["t1"], [1, 2, 3])
    np.testing.assert_array_equal(labels["t2"], [4, 5, 6])
    features, = _read_all(inputs.pandas_input_fn(x, batch_size=3,
                                                 shuffle=True))
    self.assertEqual(sorted(features["age"]), [10, 20, 30])

  def test_argument_errors(self):
    x = self._frame()
    y = pd.Series([1, 2, 3], index=x.index)
    with self.assertRaisesRegex(errors.InputFnError, "shuffle must be"):
      inputs.pandas_input_fn(x, y)
    with self.assertRaisesRegex(TypeError, "target_column must be a string"):
      inputs.pandas_input_fn(x, y, shuffle=False, target_column=1)
    with self.assertRaisesRegex(errors.InputFnError,
                                "Cannot use name age for target column"):
      inputs.pandas_input_fn(x, y, shuffle=False, target_column="age")
    with self.assertRaisesRegex(errors.InputFnError,
                                "Index for x and y are mismatched"):
      inputs.pandas_input_fn(x, pd.Series([1, 2, 3]), shuffle=False)


@absltest.skipIf(pd is not None, "pandas is installed (this checks the "
                 "error without it): run it in a venv without pandas, e.g. "
                 "the README's install alone")
class PandasMissingTest(absltest.TestCase):

  def test_clear_error(self):
    with self.assertRaisesRegex(errors.NotSupportedError,
                                "without pandas installed.*pip install"):
      inputs.pandas_input_fn(None, shuffle=False)


if __name__ == "__main__":
  absltest.main()
