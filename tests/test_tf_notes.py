"""harness.telemetry.tf_notes: the one INFO line about TensorFlow 2.20-2.22's
slower sparse-update kernels, said once, only for a graph that has them, only
on a release measured slow; and the trainer says it for a wide model."""

from unittest import mock

from absl import logging
from absl.testing import absltest
import numpy as np

import harness
from harness._tf import tf
from harness.telemetry import tf_notes


def _graph(optimizer):
  graph = tf.Graph()
  with graph.as_default():
    table = tf.compat.v1.get_variable("table", [100, 4], use_resource=True)
    loss = tf.reduce_sum(tf.nn.embedding_lookup(table, [1, 2, 2]))
    optimizer.minimize(loss)
  return graph


class NoteTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    tf_notes._noted.clear()  # pylint: disable=protected-access

  def test_adagrad_and_ftrl_rows_are_noted_once_on_a_slow_release(self):
    graph = _graph(tf.compat.v1.train.AdagradOptimizer(0.1))
    self.assertEqual(dict(tf_notes.sparse_update_ops(graph)),
                     {"ResourceSparseApplyAdagrad": 1})
    with mock.patch.object(logging, "info") as info:
      line = tf_notes.note_sparse_updates(graph, "local", version="2.21.0")
      again = tf_notes.note_sparse_updates(graph, "local", version="2.21.0")
    self.assertIn("train | local | this graph updates embedding or linear "
                  "rows (ResourceSparseApplyAdagrad x1); TensorFlow 2.21's",
                  line)
    self.assertIn("TensorFlow 2.19 or older", line)
    self.assertIsNone(again)
    info.assert_called_once_with(line)
    tf_notes._noted.clear()  # pylint: disable=protected-access
    ftrl = _graph(tf.compat.v1.train.FtrlOptimizer(0.1))
    self.assertIn("ResourceSparseApplyFtrl x1", tf_notes.note_sparse_updates(
        ftrl, "chief/0", version="2.22.0-rc0"))

  def test_no_note_on_a_release_not_measured_slow(self):
    graph = _graph(tf.compat.v1.train.AdagradOptimizer(0.1))
    for version in ("2.16.2", "2.19.1", "2.23.0", "3.0.0"):
      self.assertIsNone(tf_notes.note_sparse_updates(graph, "local",
                                                     version=version))

  def test_no_note_for_dense_updates_only(self):
    graph = tf.Graph()
    with graph.as_default():
      weights = tf.compat.v1.get_variable("w", [4, 2], use_resource=True)
      tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
          tf.reduce_sum(tf.matmul(tf.ones([3, 4]), weights)))
    self.assertEqual(dict(tf_notes.sparse_update_ops(graph)), {})
    self.assertIsNone(tf_notes.note_sparse_updates(graph, "local",
                                                   version="2.21.0"))


class TrainerTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    tf_notes._noted.clear()  # pylint: disable=protected-access

  def test_the_trainer_notes_a_wide_model(self):
    def input_fn():
      ids = np.arange(32, dtype=np.int64).reshape(8, 4) % 50
      return tf.data.Dataset.from_tensor_slices(
          ({"ids": ids}, np.zeros(8, np.int64))).repeat().batch(4)

    def model_fn(features, labels, mode):
      table = tf.compat.v1.get_variable("table", [50, 3], use_resource=True)
      logits = tf.reduce_mean(tf.nn.embedding_lookup(table, features["ids"]),
                              axis=1)
      loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
      train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
      return harness.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

    estimator = harness.Estimator(model_fn, model_dir=self.create_tempdir(
        ).full_path)
    with mock.patch.object(tf_notes.tf, "__version__", "2.21.0"), \
        mock.patch.object(tf_notes.logging, "info") as info:
      estimator.train(input_fn, max_steps=3)
    lines = [c.args[0] for c in info.call_args_list
             if "updates embedding or linear rows" in str(c.args[0])]
    self.assertLen(lines, 1)
    self.assertIn("ResourceSparseApplyAdagrad x1", lines[0])


if __name__ == "__main__":
  absltest.main()
