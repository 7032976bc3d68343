"""A v1 collective strategy configured for one task, with harness's defaults.

    from harness.distribute import collective_config

    collective_config.configure(strategy, config, jobs, "worker", 1,
                                count=1, device_type="CPU")

`strategies.configure_checked` calls `configure` for a collective task; it
fills the session `config` in place. TensorFlow's `configure()` turns on
grappler's ScopedAllocator rewrite for `CollectiveReduce`, which packs all
of a step's gradients into one all-reduce, launched once the last gradient
exists. On CPU devices harness turns it off again unless the user's
`session_config` set `graph_options.rewrite_options.scoped_allocator_
optimization` themselves (ON packs, OFF does not, on any device): each
gradient's all-reduce then starts as soon as that gradient is computed,
while the layers below it are still in backprop. Measured on the shared
2-core machine, 2 workers, one core each, the bench CNN (bench/RESULTS.md,
"Where the time goes in a collective step"): unpacked / packed examples/s,
median of interleaved rounds, 1.05x with the bare loop (`python -m
bench.perf.scaling_worker --runner=bare --scoped_allocator=off`; 7 rounds,
0.99-1.07) and 1.08x with harness (3 rounds, 0.95-1.08); the MLP within
noise (3 rounds). On GPUs (NCCL) the packed all-reduce stays: one launch
per step matters more there.
"""

from absl import logging

from harness import _tf_private
from harness import cluster as cluster_lib
from harness._tf import tf

__all__ = ["configure", "keep_packing"]


def keep_packing(user_config, device_type):
  """Whether a collective task keeps TensorFlow's one packed all-reduce.

  Args:
    user_config: the user's `ConfigProto`, or None (harness's default).
    device_type: "CPU" or "GPU", the task's devices.

  Returns:
    The user's `scoped_allocator_optimization` where they set it (ON:
    True, OFF: False); otherwise True on GPUs, False on CPUs.
  """
  if user_config is not None:
    rewrite = user_config.graph_options.rewrite_options
    if rewrite.scoped_allocator_optimization != rewrite.DEFAULT:
      return rewrite.scoped_allocator_optimization == rewrite.ON
  return device_type != "CPU"


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
    user_config: the user's `ConfigProto` (None: harness's default), read
      for the packing choice (`keep_packing`).
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
  packed = keep_packing(user_config, device_type)
  if not packed:
    rewrite = config.graph_options.rewrite_options
    rewrite.scoped_allocator_optimization = rewrite.OFF
  if jobs:
    logging.info("strategy | %s/%d | collective over %d workers | %d "
                 "replicas in sync | gradients %s", task_type, task_id,
                 cluster_lib.num_trainers(jobs),
                 strategy.num_replicas_in_sync,
                 "packed into one all-reduce" if packed else
                 "all-reduced one by one as each is ready")
