"""A training task's devices and jobs: what a strategy replicates over.

    from harness.distribute import task_devices

    task_devices.check_devices(2, "CPU", allow_none=False)
    task_devices.training_cluster(info)          # the jobs without evaluator
    task_devices.cpu_devices_per_worker(strategy)   # device_count for "CPU"

`strategies` builds and configures a strategy over these; `task_servers`
sizes a task's server with them.
"""

from harness import cluster as cluster_lib
from harness import errors
from harness._tf import tf
from harness.core.strategy_classifier import strategy_kind

__all__ = ["DEVICE_TYPES", "training_cluster", "check_devices",
           "cpu_devices_per_worker", "cpu_devices"]

DEVICE_TYPES = ("CPU", "GPU")


def training_cluster(cluster):
  """The jobs of `cluster` that take part in training (no evaluator).

  Args:
    cluster: {job: [address, ...]}, a `ClusterInfo`, a ClusterSpec, or None.

  Returns:
    {job: [address, ...]}, {} for None.
  """
  if isinstance(cluster, tf.train.ClusterSpec):
    cluster = cluster.as_dict()
  elif isinstance(cluster, cluster_lib.ClusterInfo):
    cluster = cluster.cluster
  return {str(job): list(addresses) for job, addresses in (
      cluster or {}).items() if job != cluster_lib.EVALUATOR and addresses}


def check_devices(num_devices_per_worker, device_type, allow_none):
  """Raises ConfigError unless `device_type` is "CPU" or "GPU" and the count
  is an integer >= 1 (or None where `allow_none`)."""
  if device_type not in DEVICE_TYPES:
    raise errors.ConfigError(
        f"`device_type` must be one of {DEVICE_TYPES}, got "
        f"{device_type!r}.")
  if num_devices_per_worker is None and allow_none:
    return
  if isinstance(num_devices_per_worker, bool) or not isinstance(
      num_devices_per_worker, int) or num_devices_per_worker < 1:
    raise errors.ConfigError(
        "`num_devices_per_worker` must be an integer >= 1, got "
        f"{num_devices_per_worker!r}.")


def cpu_devices_per_worker(strategy, *, kind=None):
  """How many CPU devices each task needs for `strategy` (at least 1).

  Use it for the server's and session's `device_count` when the strategy
  replicates over several CPU devices (the CPU stand-in for GPUs).

  Args:
    strategy: a v1 strategy (configured or not), or None.
    kind: `strategy`'s `StrategyKind` when the caller has it (a RunConfig's
      `strategy_kind`); None classifies `strategy` here. Ignored when
      `strategy` is None.

  Returns:
    The number of CPU replicas on one worker, or 1.
  """
  if strategy is None:
    return 1
  return cpu_devices(strategy, kind or strategy_kind(strategy))


def cpu_devices(strategy, kind):
  """`cpu_devices_per_worker` for a known `kind` (None: no strategy)."""
  if kind is None or kind.no_op:
    return 1
  devices = strategy.extended.worker_devices
  num_cpus = sum(1 for device in devices
                 if tf.DeviceSpec.from_string(device).device_type == "CPU")
  return max(1, num_cpus)
