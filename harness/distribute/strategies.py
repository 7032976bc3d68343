"""Distribution strategies for graph-mode training, one task at a time.

What each training process of a cluster does with the user's strategy,
without TensorFlow's private distribute coordinator::

    user_strategy = run_config.train_distribute
    target = task_servers.in_process_server_target(   # before mapping!
        user_strategy, cluster=cluster, task_type="worker", task_id=1,
        num_devices_per_worker=2)
    strategy = graph_strategy.to_graph_strategy(user_strategy)   # v1 class
    session_config = strategies.configure_for_task(
        strategy, cluster=cluster, task_type="worker", task_id=1,
        session_config=run_config.session_config, num_devices_per_worker=2)
    if target is None:
      server = tf.distribute.Server(
          tf.train.ClusterSpec(task_devices.training_cluster(cluster)),
          job_name="worker", task_index=1, start=True,
          config=task_servers.server_config_for(
              session_config, cluster=cluster, task_type="worker",
              num_devices_per_worker=2))
      target = server.target
    with tf.Graph().as_default(), strategy.scope():
      ...  # make_input_fn_iterator, extended.call_for_each_replica, reduce
      MonitoredSession(session_creator=ChiefSessionCreator(
          master=target, config=session_config, scaffold=...))

Collective workers all initialise (their initialisers broadcast from the
first worker); parameter-server trainers other than the chief wait for it.
The `--strategy` flag builds a strategy with `make_strategy`. A RunConfig's
task (`roles.prepare_task`), whose cluster `cluster.validate` checked before
training, is configured by `configure_checked`, which checks nothing again.
`task_devices` holds a task's devices and jobs; an evaluator process calls
`evaluator_guard.install(os.environ)` before user code runs.
"""

import copy

from harness import _tf_private
from harness import cluster as cluster_lib
from harness import errors
from harness import run_config
from harness._tf import tf
from harness.cluster import tf_config_checks
from harness.cluster import strategy_kind as strategy_kind_lib
from harness.cluster.strategy_kind import StrategyKind
from harness.core.strategy_classifier import strategy_kind
from harness.distribute import collective_config
from harness.distribute import task_devices
from harness.distribute.graph_strategy import is_v1
from harness.distribute.graph_strategy import local_resolver

__all__ = ["make_strategy", "configure_for_task", "configure_checked"]

_PS_CPU_DEVICES = (
    "num_devices_per_worker={count} CPU devices with parameter servers: the "
    "v1 ParameterServerStrategy replicates over GPUs only. Fix: use 1 CPU "
    "device per worker, device_type='GPU', or the collective strategy.")


def _check_cluster_fits(kind, jobs):
  """Raises unless a strategy of `kind` can train on the cluster `jobs`."""
  if not jobs:
    return
  tf_config_checks.check_strategy_jobs(kind, jobs, source="The strategy's")
  tf_config_checks.check_one_machine_strategy(kind, jobs)


def make_strategy(kind, *, num_devices_per_worker=1, device_type="CPU",
                  cluster=None):
  """Builds the strategy a `--strategy` flag names, unconfigured.

  Strategies are built inside a throwaway graph and with no cluster, so
  nothing reads TF_CONFIG, starts a server or touches the eager context;
  `configure_for_task` makes a collective or parameter-server strategy
  multi-worker afterwards. For N > 1 CPU devices the session must have N CPU
  devices: use the config `configure_for_task` returns (it sets
  `device_count`, which works whenever the session is created, unlike
  `tf.config.set_logical_device_configuration`, which fails once the
  runtime is initialised).

  Args:
    kind: one of `strategy_kind.BUILDABLE_KINDS`.
    num_devices_per_worker: replicas on each machine, >= 1.
    device_type: "CPU" (N logical CPU devices stand in for GPUs) or "GPU".
    cluster: optional {job: [address, ...]} the strategy will train on; if
      given, checked to fit the kind (e.g. parameter_server needs "ps").

  Returns:
    A `tf.compat.v1.distribute.Strategy`, or None for "default".

  Raises:
    ConfigError: unknown kind, bad device numbers, or a cluster that does
      not fit the kind.
    NotSupportedError: a single-machine kind for a multi-machine cluster.
  """
  if kind not in strategy_kind_lib.BUILDABLE_KINDS:
    raise errors.ConfigError(
        f"Unknown strategy kind {kind!r}: valid kinds are "
        f"{', '.join(strategy_kind_lib.BUILDABLE_KINDS)}.")
  kind = StrategyKind(kind)
  task_devices.check_devices(num_devices_per_worker, device_type, allow_none=False)
  count = num_devices_per_worker
  if kind.single_device and not kind.no_op and count != 1:
    raise errors.ConfigError(
        f"The one_device strategy uses one device, but "
        f"num_devices_per_worker is {count}. Fix: use mirrored for {count} "
        "devices, or num_devices_per_worker=1.")
  if kind.needs_ps and device_type == "CPU" and count > 1:
    raise errors.NotSupportedError(_PS_CPU_DEVICES.format(count=count))
  devices = [f"/device:{device_type}:{i}" for i in range(count)]
  gpus = count if device_type == "GPU" else 0
  with tf.Graph().as_default():
    strategy = None if kind.no_op else _BUILDERS[kind](devices, gpus)
    if kind.lockstep and (count, device_type) != (
        _tf_private.collective_num_devices_per_worker(strategy)):
      _tf_private.reinitialize_collective_local(strategy, devices)
  # The cluster it will train on (`harness.main` passes none: its plan
  # checked the flags' cluster).
  _check_cluster_fits(kind, task_devices.training_cluster(cluster))
  return strategy


_V1 = tf.compat.v1.distribute
# Each kind `make_strategy` builds but the no-op default -> its v1 strategy
# on (devices, their number if GPUs, else 0).
_BUILDERS = {
    StrategyKind.MIRRORED: lambda devices, _: _V1.MirroredStrategy(devices),
    StrategyKind.ONE_DEVICE: lambda devices, _: _V1.OneDeviceStrategy(
        devices[0]),
    StrategyKind.CENTRAL_STORAGE: lambda devices, _: (
        _V1.experimental.CentralStorageStrategy(
            compute_devices=devices, parameter_device="/device:CPU:0")),
    StrategyKind.PARAMETER_SERVER: lambda _, gpus: (
        _V1.experimental.ParameterServerStrategy(
            cluster_resolver=local_resolver(gpus))),
    StrategyKind.COLLECTIVE: lambda _, gpus: (
        _V1.experimental.MultiWorkerMirroredStrategy(
            cluster_resolver=local_resolver(gpus))),
}


def _check_task(jobs, task_type, task_id):
  if task_type in (cluster_lib.EVALUATOR, cluster_lib.PS):
    raise errors.ClusterConfigError(
        f"Task {task_type}/{task_id} trains no model: an evaluator needs no "
        "strategy and a parameter server only runs a server. Fix: call "
        "configure_for_task for chief and worker tasks only; a ps task uses "
        "server_config_for(None, ...).")
  count = len(jobs.get(task_type, ()))
  if isinstance(task_id, bool) or not isinstance(task_id, int) or not (
      0 <= task_id < count):
    raise errors.ClusterConfigError(
        f"Task {task_type}/{task_id!r} is not in the cluster {sorted(jobs)}"
        f": cluster[{task_type!r}] has {count} addresses"
        + (f" (valid index 0..{count - 1})." if count else "."))


def configure_for_task(strategy, *, cluster, task_type, task_id,
                       session_config=None, num_devices_per_worker=None,
                       device_type="CPU", kind=None):
  """Configures `strategy` for one training task; returns its session config.

  A collective or parameter-server strategy becomes a multi-worker one for
  `task_type`/`task_id` of `cluster` (v1 `configure()` in a throwaway graph:
  no server or health-check thread starts). The config holds what it needs
  (collective: the group leader, a device filter to this task and, on CPU,
  `collective_config`'s unpacked gradients; ps: filters to this task and
  "/job:ps"); use it for the session AND the
  in-process server (`server_config_for`). Single-machine kinds are left as
  they are: train them with a local session (target "").

  Args:
    strategy: a tf.compat.v1 strategy (see `to_graph_strategy`) or None.
    cluster: {job: [address, ...]} (an "evaluator" job is ignored), or None
      / {} for local training.
    task_type: this task's job, "chief" or "worker" (or "master").
    task_id: this task's index in its job.
    session_config: the user's `ConfigProto` (not modified), or None for
      `run_config.get_default_session_config()`.
    num_devices_per_worker: replicas per task; None keeps the strategy's
      own (a user's collective strategy: all visible GPUs, else one CPU).
      N > 1 "CPU" devices stand in for N GPUs.
    device_type: "CPU" or "GPU" (with num_devices_per_worker).
    kind: `strategy`'s `StrategyKind` if known (RunConfig.strategy_kind);
      None classifies `strategy` here.

  Returns:
    A new `tf.compat.v1.ConfigProto` (with `device_count` CPU=N for N > 1
    CPU devices).

  Raises:
    ConfigError: a TF2 strategy, bad device numbers, or a task that is not a
      training task of the cluster (ClusterConfigError).
    NotSupportedError: a single-machine strategy on several trainers, or N
      > 1 CPU devices with parameter servers.
  """
  task_devices.check_devices(num_devices_per_worker, device_type, allow_none=True)
  kind = None if strategy is None else kind or strategy_kind(strategy)
  if kind is not None and not kind.no_op and not is_v1(strategy):
    raise errors.ConfigError(
        f"configure_for_task needs a tf.compat.v1 strategy, got the TF2 "
        f"{type(strategy).__name__}. Fix: pass to_graph_strategy(strategy).")
  jobs = task_devices.training_cluster(cluster)
  _check_cluster_fits(kind, jobs)
  if jobs:
    _check_task(jobs, task_type, task_id)
  config, _ = configure_checked(
      strategy, kind=kind, jobs=jobs, task_type=task_type, task_id=task_id,
      session_config=session_config,
      num_devices_per_worker=num_devices_per_worker, device_type=device_type)
  return config


def configure_checked(strategy, *, kind, jobs, task_type, task_id,
                      session_config=None, num_devices_per_worker=None,
                      device_type="CPU"):
  """`configure_for_task` for a task whose facts were checked before.

  For a RunConfig's task (`cluster.validate` ran before training: the task
  is in the cluster and the strategy's jobs fit it; `roles.prepare_task`
  applies the one-machine rule) and for a remote client's tasks. Nothing
  is checked or classified again.

  Args: `strategy` a tf.compat.v1 strategy of `kind` (a `StrategyKind`), or
    both None; `jobs` {job: [address, ...]}, the training jobs ({}: local);
    the rest as for `configure_for_task`, already valid.

  Returns:
    (a new `tf.compat.v1.ConfigProto`, the CPU devices this task needs:
    its `device_count` for N > 1, else 1).

  Raises:
    NotSupportedError: N > 1 CPU devices with parameter servers.
  """
  config = copy.deepcopy(session_config or
                         run_config.get_default_session_config())
  count, device_type = _configure_kind(
      strategy, kind, config, jobs, task_type, task_id,
      num_devices_per_worker, device_type, user_config=session_config)
  num_cpus = task_devices.cpu_devices(strategy, kind)
  if device_type == "CPU" and count is not None:
    num_cpus = max(num_cpus, count)
  if num_cpus > 1:
    config.device_count["CPU"] = num_cpus
  return config, num_cpus


def _configure_kind(strategy, kind, config, jobs, task_type, task_id, count,
                    device_type, user_config):
  """`configure_for_task`'s step for each kind; fills `config` in place
  (`user_config`: the user's, for collective_config's choices).

  Returns:
    (devices per worker or None, their type): a collective strategy keeps
    its own when `count` is None.
  """
  if kind is None or kind.no_op:
    if jobs and cluster_lib.PS in jobs:  # No strategy: replica_device_setter.
      del config.device_filters[:]
      config.device_filters.extend(
          ["/job:ps", f"/job:{task_type}/task:{task_id}"])
  elif kind.lockstep:
    if count is None:  # Keep the strategy's own devices (make_strategy's).
      count, device_type = _tf_private.collective_num_devices_per_worker(
          strategy)
    collective_config.configure(strategy, config, jobs, task_type, task_id,
                                count=count, device_type=device_type,
                                user_config=user_config)
  elif kind.needs_ps and jobs:
    if count is not None and device_type == "CPU" and count > 1:
      raise errors.NotSupportedError(_PS_CPU_DEVICES.format(count=count))
    if count is not None and device_type == "GPU":
      _tf_private.set_ps_gpus_per_worker(strategy, count)
    with tf.Graph().as_default():
      strategy.configure(config, jobs, task_type, task_id)
  else:
    strategy.configure(config)
  return count, device_type
