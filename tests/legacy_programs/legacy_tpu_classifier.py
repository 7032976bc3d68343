"""A BERT run_classifier-style TPUEstimator program, run unmodified.

Written against TF 2.x's `tf.compat.v1` names as BERT's TF2 forks are:
absl flags through `tf.compat.v1.flags`, a small Transformer encoder built
from `tf.compat.v1.get_variable` under `bert/...` scopes, `TPUEstimatorSpec`
with `scaffold_fn` (init_from_checkpoint), `eval_metrics=(metric_fn,
[tensors])`, `params["batch_size"]` in the input_fn, and
`tf.compat.v1.estimator.tpu.RunConfig(tpu_config=TPUConfig(
iterations_per_loop=...))` with `use_tpu=False`. tests/test_tpu.py runs it:

    python -m harness.run tests/legacy_programs/legacy_tpu_classifier.py \
        --output_dir=DIR --do_train --do_eval --do_predict --do_export \
        --result_json=OUT.json [--init_checkpoint=CKPT --learning_rate=0]

The task: sequences of 8 token ids; the label is 1 when token 3 occurs
more often than token 4. `result_json` gets the eval metrics, the
predictions' count and the export directory.
"""

import collections
import json
import os
import re

import numpy as np
import tensorflow as tf

flags = tf.compat.v1.flags
FLAGS = flags.FLAGS

flags.DEFINE_string("output_dir", None, "Where checkpoints are written.")
flags.DEFINE_string("init_checkpoint", None, "Checkpoint to start from.")
flags.DEFINE_string("result_json", None, "Where results are written.")
flags.DEFINE_bool("do_train", False, "Whether to train.")
flags.DEFINE_bool("do_eval", False, "Whether to evaluate.")
flags.DEFINE_bool("do_predict", False, "Whether to predict.")
flags.DEFINE_bool("do_export", False, "Whether to export a SavedModel.")
flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 16, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 3e-3, "Initial learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 200, "Total number of training steps.")
flags.DEFINE_integer("save_checkpoints_steps", 100,
                     "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 50,
                     "How many steps to make in each estimator call.")

SEQ_LENGTH = 8
VOCAB = 12
HIDDEN = 16
NUM_LABELS = 2


def make_examples(num, seed):
  rng = np.random.RandomState(seed)
  ids = rng.randint(0, VOCAB, size=(num, SEQ_LENGTH)).astype(np.int32)
  labels = ((ids == 3).sum(1) > (ids == 4).sum(1)).astype(np.int32)
  return ids, labels


def input_fn_builder(ids, labels, is_training, drop_remainder):
  """BERT's shape: a closure whose input_fn reads params["batch_size"]."""

  def input_fn(params):
    batch_size = params["batch_size"]
    d = tf.data.Dataset.from_tensor_slices({"input_ids": ids,
                                            "label_ids": labels})
    if is_training:
      d = d.repeat().shuffle(buffer_size=256, seed=1)
    return d.batch(batch_size, drop_remainder=drop_remainder)

  return input_fn


def dense(x, units, name):
  with tf.compat.v1.variable_scope(name):
    kernel = tf.compat.v1.get_variable(
        "kernel", [x.shape[-1], units],
        initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.2))
    bias = tf.compat.v1.get_variable(
        "bias", [units], initializer=tf.compat.v1.zeros_initializer())
  return tf.tensordot(x, kernel, 1) + bias


def encoder(input_ids):
  """Embeddings + one self-attention layer + pooler, BERT's scope names."""
  with tf.compat.v1.variable_scope("bert"):
    with tf.compat.v1.variable_scope("embeddings"):
      table = tf.compat.v1.get_variable(
          "word_embeddings", [VOCAB, HIDDEN],
          initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.2))
      x = tf.nn.embedding_lookup(table, input_ids)
    with tf.compat.v1.variable_scope("encoder/layer_0/attention/self"):
      q = dense(x, HIDDEN, "query")
      k = dense(x, HIDDEN, "key")
      v = dense(x, HIDDEN, "value")
      scores = tf.matmul(q, k, transpose_b=True) / np.sqrt(HIDDEN)
      x = x + tf.matmul(tf.nn.softmax(scores), v)
    with tf.compat.v1.variable_scope("pooler"):
      return tf.tanh(dense(tf.reduce_mean(x, axis=1), HIDDEN, "dense"))


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
  name_to_variable = collections.OrderedDict()
  for var in tvars:
    name = re.match("^(.*):\\d+$", var.name).group(1)
    name_to_variable[name] = var
  assignment_map = collections.OrderedDict()
  for name, _ in tf.train.list_variables(init_checkpoint):
    if name in name_to_variable:
      assignment_map[name] = name
  return assignment_map


def model_fn_builder(init_checkpoint, learning_rate, use_tpu):
  """Returns `model_fn` closure for TPUEstimator."""

  def model_fn(features, labels, mode, params):
    del labels, params
    input_ids = features["input_ids"]
    label_ids = features["label_ids"]
    is_training = mode == tf.estimator.ModeKeys.TRAIN
    pooled = encoder(input_ids)
    logits = dense(pooled, NUM_LABELS, "output")
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot = tf.one_hot(label_ids, depth=NUM_LABELS, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot * log_probs, axis=-1)
    total_loss = tf.reduce_mean(per_example_loss)
    probabilities = tf.nn.softmax(logits, axis=-1)

    tvars = tf.compat.v1.trainable_variables()
    scaffold_fn = None
    if init_checkpoint:
      assignment_map = get_assignment_map_from_checkpoint(
          tvars, init_checkpoint)

      def tpu_scaffold():
        tf.compat.v1.train.init_from_checkpoint(init_checkpoint,
                                                assignment_map)
        return tf.compat.v1.train.Scaffold()

      scaffold_fn = tpu_scaffold

    if is_training:
      optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
      if use_tpu:
        optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)
      train_op = optimizer.minimize(
          total_loss, global_step=tf.compat.v1.train.get_global_step())
      return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss, train_op=train_op,
          scaffold_fn=scaffold_fn)
    if mode == tf.estimator.ModeKeys.EVAL:

      def metric_fn(per_example_loss, label_ids, logits):
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
        accuracy = tf.compat.v1.metrics.accuracy(
            labels=label_ids, predictions=predictions)
        loss = tf.compat.v1.metrics.mean(values=per_example_loss)
        return {"eval_accuracy": accuracy, "eval_loss": loss}

      return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss,
          eval_metrics=(metric_fn, [per_example_loss, label_ids, logits]),
          scaffold_fn=scaffold_fn)
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
        mode=mode, predictions={"probabilities": probabilities},
        scaffold_fn=scaffold_fn)

  return model_fn


def serving_input_receiver_fn():
  input_ids = tf.compat.v1.placeholder(tf.int32, [None, SEQ_LENGTH],
                                       name="input_ids")
  features = {"input_ids": input_ids,
              "label_ids": tf.zeros_like(input_ids[:, 0])}
  return tf.estimator.export.ServingInputReceiver(features,
                                                  {"input_ids": input_ids})


def main(_):
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  run_config = tf.compat.v1.estimator.tpu.RunConfig(
      master=None,
      model_dir=FLAGS.output_dir,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      tf_random_seed=7,
      tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations_per_loop,
          num_shards=8,
          per_host_input_for_training=(
              tf.compat.v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2)))
  model_fn = model_fn_builder(FLAGS.init_checkpoint, FLAGS.learning_rate,
                              FLAGS.use_tpu)
  estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
      use_tpu=FLAGS.use_tpu,
      model_fn=model_fn,
      config=run_config,
      train_batch_size=FLAGS.train_batch_size,
      eval_batch_size=FLAGS.eval_batch_size,
      predict_batch_size=FLAGS.predict_batch_size)
  result = {}
  if FLAGS.do_train:
    ids, labels = make_examples(1024, seed=0)
    estimator.train(input_fn=input_fn_builder(ids, labels, True, True),
                    max_steps=FLAGS.num_train_steps)
  if FLAGS.do_eval:
    ids, labels = make_examples(256, seed=1)
    metrics = estimator.evaluate(
        input_fn=input_fn_builder(ids, labels, False, True), steps=None)
    result["eval"] = {k: float(v) for k, v in metrics.items()}
  if FLAGS.do_predict:
    ids, labels = make_examples(20, seed=2)
    probabilities = [p["probabilities"].tolist() for p in estimator.predict(
        input_fn=input_fn_builder(ids, labels, False, False))]
    result["predictions"] = probabilities
    result["predict_labels"] = labels.tolist()
  if FLAGS.do_export:
    export_dir = estimator.export_saved_model(
        os.path.join(FLAGS.output_dir, "export"), serving_input_receiver_fn)
    result["export_dir"] = export_dir.decode()
  if FLAGS.result_json:
    with tf.io.gfile.GFile(FLAGS.result_json, "w") as f:
      json.dump(result, f)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.compat.v1.app.run()
