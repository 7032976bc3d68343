"""TF Ranking programs on harness: train, evaluate, export, serve.

    python tests/programs/tfr_ranking.py /tmp/tfr_model

Needs `pip install --no-deps tensorflow-ranking==0.5.5 tensorflow-serving-api`;
`import harness.compat` comes before TF Ranking, whose modules import
`tensorflow.estimator` (gone since TF 2.16). Synthetic lists of 5 documents
with one feature `x`; a document is relevant when x > 0.5. Two models:
`tfr.estimator.make_dnn_ranking_estimator`, then the groupwise path
(`tfr.model.make_groupwise_ranking_fn` with a `tfr.head` ranking head under
`tf.estimator.Estimator`, in <model_dir>/groupwise).
"""

import sys
import tempfile

import harness.compat  # pylint: disable=unused-import  # Before tfr.
import numpy as np
import tensorflow as tf
import tensorflow_ranking as tfr
from tensorflow_serving.apis import input_pb2

LIST_SIZE = 5
_GROUP_SIZE = 2
_FEATURE_SPEC = {"x": tf.io.FixedLenFeature([1], tf.float32, [0.0])}


def input_fn():
  x = np.random.default_rng(0).normal(size=(64, LIST_SIZE, 1))
  labels = (x[..., 0] > 0.5).astype(np.float32)
  data = tf.data.Dataset.from_tensor_slices(({"x": x.astype(np.float32)},
                                             labels))
  return data.repeat().batch(8)


def _one_list(values):
  """A serialized ExampleListWithContext with one document per value."""
  elwc = input_pb2.ExampleListWithContext()
  for value in values:
    elwc.examples.add().features.feature["x"].float_list.value.append(value)
  return elwc.SerializeToString()


def _group_score_fn(context_features, group_features, mode, params, config):
  """Scores a group of _GROUP_SIZE documents from their `x` values."""
  del context_features, mode, params, config
  x = tf.reshape(group_features["x"], [-1, _GROUP_SIZE])
  hidden = tf.compat.v1.layers.dense(x, 8, activation=tf.nn.relu)
  return tf.compat.v1.layers.dense(hidden, _GROUP_SIZE)


def _train_op_fn(loss):
  return tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())


def groupwise(model_dir, receiver):
  """The groupwise path: train, evaluate, export and score one list."""
  head = tfr.head.create_ranking_head(
      loss_fn=tfr.losses.make_loss_fn("softmax_loss"),
      eval_metric_fns={"metric/ndcg": tfr.metrics.make_ranking_metric_fn(
          tfr.metrics.RankingMetricKey.NDCG)},
      train_op_fn=_train_op_fn)
  estimator = tf.estimator.Estimator(
      tfr.model.make_groupwise_ranking_fn(
          group_score_fn=_group_score_fn, group_size=_GROUP_SIZE,
          ranking_head=head,
          transform_fn=tfr.feature.make_identity_transform_fn([])),
      model_dir=model_dir)
  estimator.train(input_fn, max_steps=200)
  metrics = estimator.evaluate(input_fn, steps=4)
  print("groupwise_eval",
        {k: round(float(v), 4) for k, v in sorted(metrics.items())})
  export_dir = estimator.export_saved_model(model_dir + "/export", receiver)
  served = tf.saved_model.load(export_dir).signatures["predict"]
  scores = served(tf.constant([_one_list([-1.0, 2.0, 0.0])]))["output"]
  print("groupwise_scores", [round(float(s), 4) for s in scores.numpy()[0]])


def main(model_dir):
  estimator = tfr.estimator.make_dnn_ranking_estimator(
      example_feature_columns={
          "x": tf.feature_column.numeric_column("x", shape=(1,))},
      context_feature_columns={}, hidden_units=[8], loss="softmax_loss",
      model_dir=model_dir, listwise_inference=True)
  tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(input_fn, max_steps=200),
      tf.estimator.EvalSpec(input_fn, steps=4, throttle_secs=0))
  metrics = estimator.evaluate(input_fn, steps=4, name="final")
  print("eval", {k: round(float(v), 4) for k, v in sorted(metrics.items())})
  receiver = tfr.data.build_ranking_serving_input_receiver_fn(
      tfr.data.ELWC, context_feature_spec={},
      example_feature_spec=_FEATURE_SPEC)
  export_dir = estimator.export_saved_model(model_dir + "/export", receiver)
  served = tf.saved_model.load(export_dir).signatures["predict"]
  scores = served(tf.constant([_one_list([-1.0, 2.0, 0.0])]))["output"]
  print("scores", [round(float(s), 4) for s in scores.numpy()[0]])
  groupwise(model_dir + "/groupwise", receiver)


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
