"""A Keras `model.fit` program under MultiWorkerMirroredStrategy (README).

    python -m harness.launch --workers=2 -- \\
        python tests/programs/keras_fit.py /tmp/keras_fit [tf.keras|keras]

Each task reads its TF_CONFIG (set by harness.launch, or by the k8s pod),
trains the same linear model in sync with the other workers and writes
<out_dir>/<type>-<index>.json: the Keras it used, the replicas in sync, the
loss of each epoch and the final weights. With `keras` the program imports
Keras 3 itself; with `tf.keras` it gets what TensorFlow routes to, which is
tf_keras (Keras 2) under harness.launch, whose environment carries
TF_USE_LEGACY_KERAS=1.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf


def main(out_dir, which="tf.keras"):
  if which == "keras":
    import keras  # pylint: disable=g-import-not-at-top
  else:
    keras = tf.keras
  strategy = tf.distribute.MultiWorkerMirroredStrategy()
  task = json.loads(os.environ["TF_CONFIG"])["task"]
  rng = np.random.RandomState(0)
  x = rng.rand(256, 4).astype(np.float32)
  y = x.sum(axis=1, keepdims=True)
  dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(32)
  with strategy.scope():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
  history = model.fit(dataset, epochs=4, steps_per_epoch=8, verbose=0)
  result = {
      "keras": type(model).__module__.split(".")[0],
      "replicas": strategy.num_replicas_in_sync,
      "losses": [float(v) for v in history.history["loss"]],
      "weights": [w.tolist() for w in model.get_weights()],
      "tf_use_legacy_keras": os.environ.get("TF_USE_LEGACY_KERAS"),
  }
  os.makedirs(out_dir, exist_ok=True)
  path = os.path.join(out_dir, f"{task['type']}-{task['index']}.json")
  with open(path, "w") as f:
    json.dump(result, f)
  print(f"{task['type']}/{task['index']}: {result['keras']} "
        f"{result['replicas']} replicas, loss {result['losses'][-1]:.4f}")


if __name__ == "__main__":
  main(*sys.argv[1:])
