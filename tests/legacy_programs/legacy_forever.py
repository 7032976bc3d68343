"""A plain tf.estimator 2.15 program stopped by Ctrl-C, for
tests/test_fidelity215_user.py (issue 47, item 5)::

    python -m harness.run tests/legacy_programs/legacy_forever.py MODEL_DIR train
    python -m harness.run tests/legacy_programs/legacy_forever.py MODEL_DIR interrupt

`train` trains until interrupted; `interrupt` raises KeyboardInterrupt (a
Ctrl-C outside any training loop) once the Estimator exists.
"""

import sys

import tensorflow as tf


def input_fn():
  return tf.data.Dataset.from_tensors(({"x": [1.0]}, [1.0])).repeat().batch(4)


def model_fn(features, labels, mode):
  output = tf.compat.v1.layers.dense(features["x"], 1)
  loss = tf.compat.v1.losses.mean_squared_error(labels, output)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir, what):
  estimator = tf.estimator.Estimator(model_fn, model_dir=model_dir)
  if what == "interrupt":
    raise KeyboardInterrupt
  estimator.train(input_fn, max_steps=10**9)


if __name__ == "__main__":
  main(*sys.argv[1:3])
