"""A tf.estimator 2.15 program whose loss becomes NaN.

    python -m harness.run tests/legacy_programs/legacy_nan.py OUT_JSON MODEL_DIR

tf.estimator stopped such a run with `tf.estimator.NanLossDuringTrainingError`
(TensorFlow's `tf.compat.v1.train.NanLossDuringTrainingError`); this program
records what it caught in OUT_JSON, then re-raises it (exit status 1).
"""

import json
import sys

import tensorflow as tf


def input_fn():
  features = {"x": tf.constant([[1.0], [2.0]])}
  return tf.data.Dataset.from_tensors((features, tf.constant([1.0, 2.0])))


def model_fn(features, labels, mode):
  weight = tf.compat.v1.get_variable("w", [], initializer=tf.ones_initializer())
  prediction = features["x"][:, 0] * weight
  # log(w - 2) is NaN for w = 1: the first step's loss is NaN.
  loss = tf.reduce_mean(tf.math.log(weight - 2.0) * (prediction - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(out_path, model_dir):
  est = tf.estimator.Estimator(model_fn, model_dir=model_dir)
  try:
    est.train(lambda: input_fn().repeat(), steps=5)
  except tf.estimator.NanLossDuringTrainingError as e:
    with open(out_path, "w") as f:
      json.dump({
          "caught": type(e).__module__ + "." + type(e).__name__,
          "is_tf_class": isinstance(
              e, tf.compat.v1.train.NanLossDuringTrainingError),
          "message": str(e),
      }, f)
    raise


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2])
