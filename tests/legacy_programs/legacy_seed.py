"""Initial weights at a fixed seed, printed as one JSON line.

    python -m harness.run tests/legacy_programs/legacy_seed.py   # harness
    python tests/legacy_programs/legacy_seed.py                  # TF 2.15

Three models, each at seed 1, their first initial weights:
`bare_graph`: `tf.compat.v1.get_variable` (TensorFlow's own glorot
initializer) in a graph under `tf.compat.v1.set_random_seed(1)`;
`dnn_kernel`: a canned `DNNClassifier` at `RunConfig(tf_random_seed=1)`;
`layers_dense_kernel`: a model_fn's `tf.compat.v1.layers.dense` at
`RunConfig(tf_random_seed=1)` (a Keras initializer, no seed of its own).
tests/fixtures/seeds215/record.py keeps two runs under tf.estimator 2.15;
tests/test_fidelity215_user.py::SeedTest compares harness's with them.
"""

import json
import tempfile

import tensorflow as tf


def _input_fn():
  return tf.data.Dataset.from_tensors(
      ({"x": [1.0, 2.0]}, [1])).repeat().batch(2)


def _model_fn(features, labels, mode):
  del labels
  output = tf.compat.v1.layers.dense(features["x"], 3, name="dense")
  loss = tf.reduce_mean(output)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.0).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _first(values, n=3):
  return [round(float(v), 6) for v in values.ravel()[:n]]


def bare_graph():
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(1)
    w = tf.compat.v1.get_variable("w", [4])
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      return _first(session.run(w), 4)


def trained_zero_steps(estimator, name):
  """`name`'s value after one step at learning rate 0: its initial value."""
  estimator.train(_input_fn, steps=1)
  return _first(estimator.get_variable_value(name))


def main():
  config = tf.estimator.RunConfig(tf_random_seed=1)
  dnn = tf.estimator.DNNClassifier(
      [3], [tf.feature_column.numeric_column("x", shape=[2])],
      model_dir=tempfile.mkdtemp(), config=config,
      optimizer=tf.keras.optimizers.legacy.SGD(0.0))
  dense = tf.estimator.Estimator(_model_fn, model_dir=tempfile.mkdtemp(),
                                 config=config)
  print(json.dumps({
      "tf_version": tf.__version__,
      "bare_graph": bare_graph(),
      "dnn_kernel": trained_zero_steps(dnn, "dnn/hiddenlayer_0/kernel"),
      "layers_dense_kernel": trained_zero_steps(dense, "dense/kernel"),
  }), flush=True)


if __name__ == "__main__":
  main()
