"""Tests of how a distributed worker reads its input_fn's batches.

A worker that computes on one CPU device reads through a plain iterator on
that device (`input_pipeline._one_cpu_worker`), with the same InputContext
`strategy.make_input_fn_iterator` would give the input_fn: 2 one-core
collective workers lost 19 % of their examples/s to TensorFlow's
MultiDeviceIterator (bench/RESULTS.md). Several devices keep TensorFlow's
iterator. The graphs are built for a cluster (`strategy.configure`) without
starting any server.
"""

from absl.testing import absltest
from absl.testing import parameterized

import harness
from harness import _tf_private
from harness._tf import tf
from harness.core import input_pipeline
from harness.spec import ModeKeys

_CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2",
                                                "127.0.0.1:3"]}
_V1 = tf.compat.v1.distribute.experimental


def _fields(context):
  return (context.num_input_pipelines, context.input_pipeline_id,
          context.num_replicas_in_sync)


def _recording_input_fn(seen):
  def input_fn(input_context=None):
    seen.append(input_context)
    return tf.data.Dataset.range(12).batch(2)
  return input_fn


def _configured(strategy_class, task_type, task_id, ps=False, devices=1):
  strategy = strategy_class()
  cluster = dict(_CLUSTER, **({"ps": ["127.0.0.1:4"]} if ps else {}))
  if devices == 1:
    strategy.configure(cluster_spec=cluster, task_type=task_type,
                       task_id=task_id)
  else:
    with _tf_private.override_collective_local_devices(strategy, devices,
                                                       "CPU"):
      strategy.configure(cluster_spec=cluster, task_type=task_type,
                         task_id=task_id)
  return strategy


class OneCpuWorkerTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("collective_chief", _V1.MultiWorkerMirroredStrategy, "chief", 0,
       False),
      ("collective_worker_1", _V1.MultiWorkerMirroredStrategy, "worker", 1,
       False),
      ("ps_chief", _V1.ParameterServerStrategy, "chief", 0, True),
      ("ps_worker_1", _V1.ParameterServerStrategy, "worker", 1, True))
  def test_plain_iterator_with_tensorflows_input_context(
      self, strategy_class, task_type, task_id, ps):
    with tf.Graph().as_default():
      strategy = _configured(strategy_class, task_type, task_id, ps=ps)
      seen, expected = [], []
      with strategy.scope():
        iterator, hooks = input_pipeline.distributed_iterator(
            strategy, _recording_input_fn(seen), ModeKeys.TRAIN, {},
            harness.RunConfig())
        strategy.make_input_fn_iterator(_recording_input_fn(expected))
      self.assertIsInstance(iterator, tf.compat.v1.data.Iterator)
      self.assertLen(seen, 1)
      self.assertEqual(_fields(seen[0]), _fields(expected[0]))
      self.assertEqual(seen[0].input_pipeline_id,
                       task_id + (1 if task_type == "worker" else 0))
      self.assertLen(hooks, 1)
      batch = iterator.get_next()
      self.assertIn(f"/job:{task_type}/", batch.device)
      self.assertIn(f"/task:{task_id}/", batch.device)
      # Its hook runs the plain iterator's initializer at session start.
      hooks[0].begin()
      self.assertIs(hooks[0]._initializer, iterator.initializer)

  def test_two_devices_keep_tensorflows_iterator(self):
    with tf.Graph().as_default():
      strategy = _configured(_V1.MultiWorkerMirroredStrategy, "worker", 0,
                             devices=2)
      self.assertLen(strategy.extended.worker_devices, 2)
      seen = []
      with strategy.scope():
        iterator, _ = input_pipeline.distributed_iterator(
            strategy, _recording_input_fn(seen), ModeKeys.TRAIN, {},
            harness.RunConfig())
      self.assertNotIsInstance(iterator, tf.compat.v1.data.Iterator)
      self.assertEqual(_fields(seen[0]), (3, 1, 6))

  def test_a_gpu_keeps_tensorflows_iterator(self):

    class Extended:
      worker_devices = ("/job:worker/replica:0/task:0/device:GPU:0",)

    class Strategy:
      extended = Extended()

    self.assertEqual(input_pipeline._one_cpu_worker(Strategy()),
                     (None, None))

  def test_local_mirrored_keeps_tensorflows_iterator(self):
    # No cluster context is read for a local MirroredStrategy: TensorFlow's
    # own iterator feeds it, as before.
    with tf.Graph().as_default():
      strategy = tf.compat.v1.distribute.MirroredStrategy(["/cpu:0"])
      self.assertEqual(input_pipeline._one_cpu_worker(strategy)[1], None)


if __name__ == "__main__":
  absltest.main()
