"""A plain tf.estimator 2.15 program whose log lines are compared with 2.15's.

Run by tests/test_logs215.py as

    python -m harness.run tests/legacy_programs/legacy_logs.py MODEL_DIR

and, once, under real tf.estimator 2.15 (tensorflow 2.15) to record the
lines it printed (tests/fixtures/logs215/). It trains 250 steps with the
default RunConfig (a loss line and a global_step/sec line every 100 steps),
evaluates, and trains on to step 300.
"""

import sys

import numpy as np
import tensorflow as tf


def input_fn():
  rng = np.random.RandomState(0)
  x = rng.uniform(-1.0, 1.0, size=(256, 4)).astype(np.float32)
  y = (x @ np.array([0.5, -1.0, 2.0, 0.25], np.float32)).astype(np.float32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(16).repeat()


def eval_input_fn():
  return input_fn().take(4)


def model_fn(features, labels, mode):
  output = tf.compat.v1.layers.dense(features["x"], 1)[:, 0]
  loss = tf.compat.v1.losses.mean_squared_error(labels, output)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(
      mode, loss=loss, train_op=train_op, predictions={"y": output})


def main(model_dir):
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  est = tf.estimator.Estimator(model_fn, model_dir=model_dir)
  est.train(input_fn, steps=250)
  est.evaluate(eval_input_fn)
  est.train(input_fn, max_steps=300)


if __name__ == "__main__":
  main(sys.argv[1])
