"""A v1 collective strategy configured for one task, with harness's defaults.

    from harness.distribute import collective_config

    collective_config.configure(strategy, config, jobs, "worker", 1,
                                count=1, device_type="CPU")

`strategies.configure_checked` calls `configure` for a collective task; it
fills the session `config` in place. In graph mode the strategy itself
concatenates each pack of gradients (`CommunicationOptions.bytes_per_pack`;
0, the default, is one pack) into one all-reduce a step: ConcatV2,
CollectiveReduceV2, SplitV (`python -m bench.perf.step_accounting` traced
it). TensorFlow's `configure()` also turns on grappler's ScopedAllocator
rewrite; harness keeps that setting, or the user's where their
`session_config` set `graph_options.rewrite_options.scoped_allocator_
optimization` (ON or OFF). With the strategy packing already, the rewrite
decides nothing about packing: harness once turned it off on CPU to
all-reduce each gradient as it was ready, and the traces showed the same
one packed all-reduce either way (bench/RESULTS.md, "Counted").
"""

from absl import logging

from harness import _tf_private
from harness import cluster as cluster_lib
from harness._tf import tf

__all__ = ["configure", "user_scoped_allocator"]


def user_scoped_allocator(user_config):
  """The user's `scoped_allocator_optimization` (ON / OFF), or None.

  Args:
    user_config: the user's `ConfigProto`, or None (harness's default).
  """
  if user_config is None:
    return None
  rewrite = user_config.graph_options.rewrite_options
  if rewrite.scoped_allocator_optimization == rewrite.DEFAULT:
    return None
  return rewrite.scoped_allocator_optimization


def configure(strategy, config, jobs, task_type, task_id, *, count,
              device_type, user_config=None):
  """Configures a v1 collective strategy (in a throwaway graph: no server).

  The local devices are always set explicitly: `configure()` alone resets a
  collective strategy to one CPU device per worker.

  Args:
    strategy: a v1 `MultiWorkerMirroredStrategy`.
    config: the task's `ConfigProto`, filled in place.
    jobs: {job: [address, ...]}, the training jobs ({}: local).
    task_type, task_id: this task.
    count, device_type: devices per worker and their type.
    user_config: the user's `ConfigProto` (None: harness's default): its
      ScopedAllocator choice, where it made one, is kept.
  """
  with tf.Graph().as_default():
    if not jobs:
      if (count, device_type) != (
          _tf_private.collective_num_devices_per_worker(strategy)):
        _tf_private.reinitialize_collective_local(
            strategy, [f"/device:{device_type}:{i}" for i in range(count)])
      strategy.configure(config)
    else:
      with _tf_private.override_collective_local_devices(
          strategy, count, device_type):
        strategy.configure(config, jobs, task_type, task_id)
  chosen = user_scoped_allocator(user_config)
  if chosen is not None:  # configure() turned it ON: the user's choice wins.
    config.graph_options.rewrite_options.scoped_allocator_optimization = (
        chosen)
  if jobs:
    logging.info("strategy | %s/%d | collective over %d workers | %d "
                 "replicas in sync", task_type, task_id,
                 cluster_lib.num_trainers(jobs),
                 strategy.num_replicas_in_sync)
