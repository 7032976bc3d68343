"""A tf.estimator 2.15 program, unmodified: it names only tf.estimator.*.

Run by tests/test_compat.py as

    python -m harness.run tests/legacy_programs/legacy_regression.py \
        OUT_JSON MODEL_DIR

It trains, evaluates, predicts, exports and runs train_and_evaluate, then
writes what it saw (the per-step loss trajectory of `train`, the eval
metrics, predictions, export directories) to OUT_JSON.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

SEED = 42
TRAIN_STEPS = 30
MAX_STEPS = 60
LEARNING_RATE = 0.05

_LOSSES = []


def make_data(num_rows=256):
  rng = np.random.RandomState(0)
  x = rng.uniform(-1.0, 1.0, size=(num_rows, 4)).astype(np.float32)
  w = np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32)
  y = (x @ w + 0.1 * rng.normal(size=num_rows)).astype(np.float32)
  return x, y


def train_input_fn():
  x, y = make_data()
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(16).repeat()


def eval_input_fn():
  x, y = make_data(64)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(32)


def predict_input_fn():
  x, _ = make_data(8)
  return tf.data.Dataset.from_tensor_slices({"x": x}).batch(4)


def serving_input_receiver_fn():
  features = {"x": tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")}
  return tf.estimator.export.build_raw_serving_input_receiver_fn(features)()


def model_fn(features, labels, mode, params):
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
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(
        mode, predictions=predictions,
        export_outputs={"serving_default":
                        tf.estimator.export.PredictOutput(predictions)})
  loss = tf.compat.v1.losses.mean_squared_error(labels, output)
  metrics = {"rmse": tf.compat.v1.metrics.root_mean_squared_error(
      labels, output)}
  global_step = tf.compat.v1.train.get_global_step()
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["lr"])
  train_op = optimizer.minimize(loss, global_step=global_step)
  logging_hook = tf.estimator.LoggingTensorHook(
      {"loss": loss}, every_n_iter=1, formatter=_record)
  return tf.estimator.EstimatorSpec(
      mode, loss=loss, train_op=train_op, eval_metric_ops=metrics,
      predictions=predictions, training_hooks=[logging_hook])


def _record(values):
  # One call per step, in step order. (Fetching global_step here would race
  # with the train_op's increment in the same run.)
  _LOSSES.append(float(values["loss"]))
  return "loss = %.6f" % values["loss"]


def main(out_path, model_dir):
  config = tf.estimator.RunConfig(
      tf_random_seed=SEED, save_checkpoints_steps=20, save_summary_steps=10,
      log_step_count_steps=None)
  est = tf.estimator.Estimator(
      model_fn, model_dir=model_dir, config=config,
      params={"lr": LEARNING_RATE})
  est.train(train_input_fn, steps=TRAIN_STEPS)
  metrics = est.evaluate(eval_input_fn)
  predictions = [float(p["y"]) for p in est.predict(predict_input_fn)]
  export_dir = est.export_saved_model(
      os.path.join(model_dir, "export", "manual"), serving_input_receiver_fn)

  early_stop = tf.estimator.experimental.stop_if_no_decrease_hook(
      est, "loss", max_steps_without_decrease=1000, run_every_secs=None,
      run_every_steps=10)
  exporter = tf.estimator.LatestExporter(
      "latest", serving_input_receiver_fn, exports_to_keep=2)
  train_spec = tf.estimator.TrainSpec(
      train_input_fn, max_steps=MAX_STEPS, hooks=[early_stop])
  eval_spec = tf.estimator.EvalSpec(
      eval_input_fn, steps=None, exporters=[exporter], start_delay_secs=0,
      throttle_secs=0)
  final_metrics, _ = tf.estimator.train_and_evaluate(
      est, train_spec, eval_spec)

  latest_dir = os.path.join(model_dir, "export", "latest")
  with open(out_path, "w") as f:
    json.dump({
        "losses": _LOSSES[:TRAIN_STEPS],
        "later_losses": _LOSSES[TRAIN_STEPS:],
        "eval": {k: float(v) for k, v in metrics.items()},
        "predictions": predictions,
        "export_dir": export_dir.decode() if isinstance(export_dir, bytes)
                      else export_dir,
        "latest_exports": sorted(os.listdir(latest_dir)),
        "final_step": int(final_metrics["global_step"]),
        "estimator_class": type(est).__module__ + "." + type(est).__name__,
    }, f)


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2])
