"""A CMLE-era Keras job: model_to_estimator + train_and_evaluate, one a task.

    TF_CONFIG=... python -m tests.programs.keras_cluster_job --model_dir=D \\
        [--max_steps=N]

Written as such programs were, in tf.estimator's names (`harness.compat`):
a compiled tf_keras model, its Estimator from
`tf.keras.estimator.model_to_estimator`, a `RunConfig` reading TF_CONFIG,
no distribution strategy (a ps in the cluster places the variables). The
task that evaluates (master or evaluator) writes
<model_dir>/result-<task>.json: its eval metrics and exports. The input's
last feature is always 0, so row 3 of the hidden kernel never trains: it
stays what the run started from; the chief (or master) writes that row of
its Keras model to <model_dir>/keras-row3.json.
"""

import argparse
import json
import os

import numpy as np

import harness.compat  # pylint: disable=unused-import
from harness._tf import tf

_WEIGHTS = np.array([[1.], [-2.], [0.5], [3.]], np.float32)


def keras_model():
  inputs = tf.keras.Input((4,), name="x")
  hidden = tf.keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
  outputs = tf.keras.layers.Dense(1, name="y")(hidden)
  model = tf.keras.Model(inputs, outputs)
  model.compile(optimizer=tf.keras.optimizers.legacy.SGD(0.01), loss="mse",
                metrics=["mae"])
  return model


def input_fn():
  rng = np.random.RandomState(0)
  x = rng.randn(256, 4).astype(np.float32)
  x[:, 3] = 0.0
  ds = tf.data.Dataset.from_tensor_slices(({"x": x}, x @ _WEIGHTS))
  return ds.repeat().batch(16)


def serving_input_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
  return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--max_steps", type=int, default=40)
  args = parser.parse_args()
  config = tf.estimator.RunConfig(model_dir=args.model_dir,
                                  save_checkpoints_steps=20, tf_random_seed=7)
  model = keras_model()
  if config.is_chief:
    with open(os.path.join(args.model_dir, "keras-row3.json"), "w") as f:
      json.dump(model.get_layer("hidden").get_weights()[0][3].tolist(), f)
  estimator = tf.keras.estimator.model_to_estimator(keras_model=model,
                                                    config=config)
  metrics, exports = tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(input_fn, max_steps=args.max_steps),
      tf.estimator.EvalSpec(
          input_fn, steps=4, start_delay_secs=0, throttle_secs=1,
          exporters=[tf.estimator.FinalExporter("final", serving_input_fn)]))
  if metrics is None:
    return
  task = f"{config.task_type}-{config.task_id}"
  result = {"task": task,
            "metrics": {k: float(v) for k, v in metrics.items()},
            "exports": [os.fsdecode(e) for e in exports if e]}
  with open(os.path.join(args.model_dir, f"result-{task}.json"), "w") as f:
    json.dump(result, f)


if __name__ == "__main__":
  main()
