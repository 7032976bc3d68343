"""steps_per_loop > 1 with every TRAIN EstimatorSpec that K = 1 accepts.

model_fn runs inside the loop body; predictions, eval_metric_ops,
export_outputs and a Scaffold in its TRAIN spec, feature columns, tf_keras
BatchNormalization, global-step reads and summaries must train exactly as
with one step per session.run (harness/core/loop_spec.py).
"""

import glob
import os

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import pytest

from harness._tf import tf
import harness
from tests import _support
from tests import conftest

_VOCAB = ["a", "b", "c", "d"]


def _input_fn():
  rng = np.random.RandomState(0)
  x = rng.rand(320, 4).astype(np.float32)
  colour = np.array(_VOCAB)[rng.randint(0, 4, 320)]
  y = (x[:, 0] + (colour == "a") > 0.8).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices(
      ({"x": x, "colour": colour}, y)).repeat().batch(16)


class _InitFnCalls:
  count = 0


def _model_fn(features, labels, mode, params):
  """Feature columns, BatchNorm, a global-step read, a full TRAIN spec."""
  colour = tf.feature_column.categorical_column_with_vocabulary_list(
      "colour", _VOCAB)
  columns = [tf.feature_column.numeric_column("x", shape=[4]),
             tf.feature_column.embedding_column(colour, 3),
             tf.feature_column.indicator_column(colour)]
  inputs = tf.compat.v1.feature_column.input_layer(features, columns)
  batch_norm = tf.keras.layers.BatchNormalization(name="bn")
  training = mode == harness.ModeKeys.TRAIN
  net = batch_norm(inputs, training=training)
  net = tf.compat.v1.layers.dense(net, 8, activation=tf.nn.relu,
                                  name="hidden")
  logits = tf.compat.v1.layers.dense(net, 2, name="logits")
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  global_step = tf.compat.v1.train.get_global_step()
  learning_rate = tf.compat.v1.train.exponential_decay(
      0.2, global_step, decay_steps=20, decay_rate=0.9)
  tf.compat.v1.summary.scalar("learning_rate", learning_rate)
  classes = tf.argmax(logits, 1)
  predictions = {"classes": classes}
  if mode != harness.ModeKeys.TRAIN:
    return harness.EstimatorSpec(
        mode, loss=loss, predictions=predictions, eval_metric_ops={
            "accuracy": tf.compat.v1.metrics.accuracy(labels, classes)})
  updates = batch_norm.get_updates_for(inputs) + batch_norm.get_updates_for(
      None) + tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
  with tf.control_dependencies(updates or [tf.no_op()]):
    train_op = tf.compat.v1.train.GradientDescentOptimizer(
        learning_rate).minimize(loss, global_step=global_step)

  def init_fn(scaffold, session):
    del scaffold, session
    _InitFnCalls.count += 1

  # Made before the scaffold's local_init_op, which must initialise them.
  eval_metric_ops = {"accuracy": tf.compat.v1.metrics.accuracy(
      labels, classes)}
  scaffold = None
  if params.get("scaffold") == "saver":
    scaffold = tf.compat.v1.train.Scaffold(
        saver=tf.compat.v1.train.Saver(max_to_keep=2), init_fn=init_fn)
  elif params.get("scaffold") == "local_init_op":
    scaffold = tf.compat.v1.train.Scaffold(local_init_op=tf.group(
        tf.compat.v1.tables_initializer(),
        tf.compat.v1.local_variables_initializer()))
  return harness.EstimatorSpec(
      mode, loss=loss, train_op=train_op, predictions=predictions,
      eval_metric_ops=eval_metric_ops,
      export_outputs={"serving_default": harness.export.PredictOutput(
          predictions)},
      scaffold=scaffold)


def _estimator(model_dir, steps_per_loop, **params):
  config = harness.RunConfig(
      model_dir=model_dir, tf_random_seed=5, steps_per_loop=steps_per_loop,
      save_checkpoints_steps=20, save_summary_steps=10)
  return harness.Estimator(_model_fn, config=config, params=params)


_variables = _support.variable_values


class LoopSpecTest(parameterized.TestCase):

  def test_full_spec_trains_like_one_step_per_run(self):
    # Same initial variables for K = 1 and K = 7 (initialisers' op seeds
    # depend on the graph's shape, which the loop changes): one checkpoint.
    start = self.create_tempdir().full_path
    _estimator(start, 1).train(_input_fn, max_steps=1)
    results = []
    for steps_per_loop in (1, 7):
      model_dir = self.create_tempdir().full_path
      _support.copy_model_dir_files(start, model_dir)
      est = _estimator(model_dir, steps_per_loop, scaffold="saver")
      calls = _InitFnCalls.count
      est.train(_input_fn, max_steps=40)
      self.assertEqual(_InitFnCalls.count, calls)  # Restored: no init_fn.
      self.assertEqual(_support.checkpoint_steps(model_dir)[-2:], [21, 40])
      results.append(_variables(est))
    one, looped = results
    self.assertEqual(sorted(one), sorted(looped))
    self.assertIn("bn/moving_mean", one)
    # BatchNorm's moving statistics moved, and moved the same way.
    self.assertFalse(np.allclose(one["bn/moving_mean"], 0.0))
    for name in one:
      np.testing.assert_allclose(looped[name], one[name], rtol=1e-5,
                                 atol=1e-6, err_msg=name)

  def test_scaffold_init_fn_and_saver_from_model_fn(self):
    model_dir = self.create_tempdir().full_path
    est = _estimator(model_dir, 10, scaffold="saver")
    calls = _InitFnCalls.count
    est.train(_input_fn, max_steps=100)
    self.assertEqual(_InitFnCalls.count, calls + 1)
    # model_fn's Saver(max_to_keep=2) saved the checkpoints.
    self.assertEqual(_support.checkpoint_steps(model_dir), [80, 100])
    metrics = est.evaluate(_input_fn, steps=10)
    self.assertGreater(metrics["accuracy"], 0.7)

  def test_scaffold_op_from_model_fn_falls_back_to_one_step(self):
    est = _estimator(self.create_tempdir().full_path, 10,
                     scaffold="local_init_op")
    with self.assertLogs(level="WARNING") as logs:
      est.train(_input_fn, max_steps=15)
    self.assertEqual(est.get_variable_value("global_step"), 15)
    lines = [l for l in logs.output if "steps_per_loop=10 -> 1" in l]
    self.assertLen(lines, 1, logs.output)
    self.assertIn("Scaffold(local_init_op=...)", lines[0])


_BUILT_IN = {
    "linear": ["--input_fn=constant"],
    "mnist_cnn": ["--input_fn=mnist_idx", f"--data_dir={conftest.MNIST_DIR}"],
    "mnist_mlp": ["--input_fn=mnist_idx", f"--data_dir={conftest.MNIST_DIR}"],
    "mnist_dropout": ["--input_fn=mnist_idx",
                      f"--data_dir={conftest.MNIST_DIR}"],
}


def _final_accuracy(model_dir):
  values = {}
  for path in glob.glob(os.path.join(model_dir, "eval", "events.out.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == "accuracy":
          values[event.step] = value.simple_value
  return values[max(values)] if values else None


@pytest.mark.slow  # Two trainings per model_fn.
class BuiltInModelFnTest(parameterized.TestCase):
  """The binary's job, run by `harness.main.main` in this process: the same
  flags and job as `python -m harness.main`, without a TensorFlow import
  per run (test_step_loop runs the flag through the binary's entry)."""

  @parameterized.parameters(*sorted(_BUILT_IN))
  def test_steps_per_loop_10_trains_like_1(self, name):
    from harness import main as main_lib  # pylint: disable=g-import-not-at-top
    if "mnist" in name and not conftest.MNIST_DIR.is_dir():
      self.skipTest(f"MNIST IDX files not found in {conftest.MNIST_DIR} "
                    "(the repository ships them: git checkout -- "
                    "input_fns/data/mnist)")
    accuracy = {}
    for steps_per_loop in (1, 10):
      model_dir = self.create_tempdir().full_path
      argv = ["harness.main", f"--model_fn={name}", *_BUILT_IN[name],
              "--max_steps=200", "--tf_random_seed=1",
              f"--steps_per_loop={steps_per_loop}", f"--model_dir={model_dir}"]
      self.assertEqual(main_lib.main(argv, environ={}), 0, argv)
      accuracy[steps_per_loop] = _final_accuracy(model_dir)
      self.assertIsNotNone(accuracy[steps_per_loop], argv)
    floor = 0.99 if name == "linear" else 0.85
    self.assertGreaterEqual(accuracy[10], floor, accuracy)
    self.assertAlmostEqual(accuracy[10], accuracy[1], delta=0.03,
                           msg=accuracy)


if __name__ == "__main__":
  absltest.main()
