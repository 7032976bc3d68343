"""An AdaNet program on harness: an adanet.Estimator over two candidate
subnetworks a generator builds each iteration, trained, evaluated, exported.

    python tests/programs/adanet_ensemble.py /tmp/adanet_model

Needs AdaNet 0.9.0 (README: its install line); `import harness.compat`
comes first. As AdaNet's docs show: a `subnetwork.Generator` whose
`generate_candidates` returns `subnetwork.Builder`s (here a linear one and
a one-hidden-layer DNN), `adanet.Estimator(head=tf.estimator.BinaryClassHead(),
max_iteration_steps=...)`, two iterations, an `adanet.Evaluator` choosing
the best ensemble. The v2 head puts Keras metrics in `eval_metric_ops`,
which AdaNet reads from the EstimatorSpec as `(value, update_op)` pairs.
Synthetic data: class 1 when x0 + x1 > 0.
"""

import sys
import tempfile

import harness.compat  # pylint: disable=unused-import  # Before AdaNet.
import adanet
import numpy as np
import tensorflow as tf

ITERATION_STEPS = 100
_COLUMNS = [tf.feature_column.numeric_column("x", shape=(4,))]


def _data(rows, seed):
  x = np.random.default_rng(seed).normal(size=(rows, 4)).astype(np.float32)
  return {"x": x}, (x[:, :1] + x[:, 1:2] > 0).astype(np.float32)


def train_input_fn():
  data = tf.data.Dataset.from_tensor_slices(_data(1024, 0))
  return data.shuffle(1024, seed=1).repeat().batch(32)


def eval_input_fn():
  return tf.data.Dataset.from_tensor_slices(_data(256, 1)).batch(32)


class _Builder(adanet.subnetwork.Builder):
  """A DNN of `hidden_layers` layers of 16 units (0: linear)."""

  def __init__(self, hidden_layers):
    self._hidden_layers = hidden_layers

  @property
  def name(self):
    return f"dnn_{self._hidden_layers}"

  def build_subnetwork(self, features, logits_dimension, training,
                       iteration_step, summary, previous_ensemble=None):
    net = tf.compat.v1.feature_column.input_layer(features, _COLUMNS)
    for _ in range(self._hidden_layers):
      net = tf.compat.v1.layers.dense(net, 16, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(net, logits_dimension)
    return adanet.Subnetwork(last_layer=net, logits=logits,
                             complexity=tf.constant(float(self._hidden_layers)),
                             persisted_tensors={})

  def build_subnetwork_train_op(self, subnetwork, loss, var_list, labels,
                                iteration_step, summary, previous_ensemble):
    return tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, var_list=var_list)


class _Generator(adanet.subnetwork.Generator):
  """Two candidates each iteration: linear and one hidden layer."""

  def generate_candidates(self, previous_ensemble, iteration_number,
                          previous_ensemble_reports, all_reports):
    return [_Builder(0), _Builder(1)]


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
  return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


def main(model_dir):
  estimator = adanet.Estimator(
      head=tf.estimator.BinaryClassHead(),
      subnetwork_generator=_Generator(),
      max_iteration_steps=ITERATION_STEPS,
      evaluator=adanet.Evaluator(input_fn=eval_input_fn, steps=4),
      config=tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=5,
                                    save_checkpoints_steps=50))
  estimator.train(train_input_fn, max_steps=2 * ITERATION_STEPS)
  metrics = estimator.evaluate(eval_input_fn)
  print("eval", {k: round(float(v), 4) for k, v in sorted(metrics.items())
                 if np.ndim(v) == 0 and not isinstance(v, bytes)})
  export_dir = estimator.export_saved_model(model_dir + "/export",
                                            serving_input_receiver_fn)
  served = tf.saved_model.load(export_dir).signatures["predict"]
  logistic = served(x=tf.constant([[2., 2., 0., 0.], [-2., -2., 0., 0.]],
                                  tf.float32))["logistic"]
  print("positive", [round(float(p[0]), 4) for p in logistic.numpy()])


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
