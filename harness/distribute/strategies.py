"""Distribution strategies for graph-mode training, one task at a time.

What each training process of a cluster does with the user's strategy,
without TensorFlow's private distribute coordinator::

    user_strategy = run_config.train_distribute
    target = strategies.in_process_server_target(   # before mapping!
        user_strategy, cluster=cluster, task_type="worker", task_id=1,
        num_devices_per_worker=2)
    strategy = strategies.to_graph_strategy(user_strategy)   # a v1 class
    session_config = strategies.configure_for_task(
        strategy, cluster=cluster, task_type="worker", task_id=1,
        session_config=run_config.session_config, num_devices_per_worker=2)
    if target is None:
      server = tf.distribute.Server(
          tf.train.ClusterSpec(strategies.training_cluster(cluster)),
          job_name="worker", task_index=1, start=True,
          config=strategies.server_config_for(
              session_config, cluster=cluster, task_type="worker",
              num_devices_per_worker=2))
      target = server.target
    with tf.Graph().as_default(), strategy.scope():
      ...  # make_input_fn_iterator, extended.call_for_each_replica, reduce
      MonitoredSession(session_creator=ChiefSessionCreator(
          master=target, config=session_config, scaffold=...))

Collective workers all initialise (their initialisers broadcast from the
first worker); parameter-server trainers other than the chief wait for it.
The `--strategy` flag builds a strategy with `make_strategy`. An evaluator
process calls `install_evaluator_guard(os.environ)` before user code runs.
"""

import copy

from absl import logging

from harness import _tf_private
from harness import errors
from harness import run_config
from harness._tf import tf
from harness.cluster import tf_config as cluster_lib
from harness.cluster import tf_config_rules
# Re-exported: `strategies.strategy_kind` is the one classifier
# (`harness.core.strategy_classifier`), called here on strategy objects that
# no RunConfig holds (the user's, or to_graph_strategy's).
from harness.core.strategy_classifier import strategy_kind

__all__ = [
    "KINDS",
    "strategy_kind",
    "to_graph_strategy",
    "make_strategy",
    "training_cluster",
    "configure_for_task",
    "server_config_for",
    "cpu_devices_per_worker",
    "in_process_server_target",
    "install_evaluator_guard",
]

KINDS = ("mirrored", "collective", "parameter_server", "central_storage",
         "one_device", "default")
_DEVICE_TYPES = ("CPU", "GPU")
_LOCAL_KINDS = ("mirrored", "central_storage", "one_device")
_PS_CPU_DEVICES = (
    "num_devices_per_worker={count} CPU devices with parameter servers: the "
    "v1 ParameterServerStrategy replicates over GPUs only. Fix: use 1 CPU "
    "device per worker, device_type='GPU', or the collective strategy.")


def _is_v1(strategy):
  return isinstance(strategy, tf.compat.v1.distribute.Strategy)


def _local_resolver(num_gpus):
  """A resolver with no cluster, so constructors read no TF_CONFIG."""
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec({}), num_accelerators={"GPU": num_gpus},
      rpc_layer="grpc")


def _num_visible_gpus():
  # Lists physical devices only: does not initialise the runtime.
  return len(tf.config.list_physical_devices("GPU"))


def _v1_collective(strategy):
  options = _tf_private.collective_communication_options(strategy)
  v1 = tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy(
      communication=options.implementation,
      cluster_resolver=_local_resolver(_num_visible_gpus()))
  _tf_private.set_collective_communication_options(v1, options)
  return v1


def _v1_mirrored(strategy):
  return tf.compat.v1.distribute.MirroredStrategy(
      devices=list(strategy.extended.worker_devices),
      cross_device_ops=_tf_private.mirrored_cross_device_ops(strategy))


def _v1_one_device(strategy):
  return tf.compat.v1.distribute.OneDeviceStrategy(
      strategy.extended.worker_devices[0])


def _v1_central_storage(strategy):
  return tf.compat.v1.distribute.experimental.CentralStorageStrategy(
      compute_devices=list(strategy.extended.worker_devices),
      parameter_device=strategy.extended.parameter_devices[0])


_TO_V1 = {
    "collective": _v1_collective,
    "mirrored": _v1_mirrored,
    "one_device": _v1_one_device,
    "central_storage": _v1_central_storage,
}


def to_graph_strategy(strategy):
  """The tf.compat.v1 strategy that trains like `strategy` in graph mode.

  v1 strategies are returned as they are. A TF2 strategy with a v1
  equivalent is rebuilt as that class with the same devices (and, for
  `MultiWorkerMirroredStrategy`, the same communication options; its
  cluster comes later from `configure_for_task`). The new object is built
  inside a throwaway graph, so building it starts no server and configures
  no collective ops in the eager context.

  Args:
    strategy: the user's strategy, or None.

  Returns:
    A `tf.compat.v1.distribute.Strategy`, or None for None and for the
    default strategy (both mean: no strategy).

  Raises:
    ConfigError: for TF2 `ParameterServerStrategy` (it trains through a
      `ClusterCoordinator`, not in graph mode) or a non-strategy.
    NotSupportedError: for TPU and unknown TF2 strategy classes.
  """
  kind = strategy_kind(strategy)
  if kind in (None, "default"):
    return None
  if _is_v1(strategy):
    return strategy
  name = type(strategy).__name__
  if kind == "parameter_server":
    raise errors.ConfigError(
        f"train_distribute is a TF2 {name} (tf.distribute.experimental."
        "ParameterServerStrategy), which runs "
        "functions through a tf.distribute.experimental.coordinator."
        "ClusterCoordinator and cannot train a graph-mode (Estimator) "
        "model_fn. Fix: use "
        "tf.compat.v1.distribute.experimental.ParameterServerStrategy(), "
        "which reads the same "
        "TF_CONFIG.")
  if kind not in _TO_V1:
    raise errors.NotSupportedError(
        f"train_distribute is a TF2 {name} (kind {str(kind)!r}), which harness "
        "cannot run in graph mode: it maps only MirroredStrategy, "
        "MultiWorkerMirroredStrategy, OneDeviceStrategy and "
        "CentralStorageStrategy to their tf.compat.v1 classes. Fix: pass a "
        "tf.compat.v1.distribute strategy.")
  with tf.Graph().as_default():
    v1 = _TO_V1[kind](strategy)
  logging.info("strategy | TF2 %s trains as %s", name, type(v1).__name__)
  return v1


def training_cluster(cluster):
  """The jobs of `cluster` that take part in training (no evaluator).

  Args:
    cluster: {job: [address, ...]}, a `ClusterInfo`, a ClusterSpec, or None.

  Returns:
    {job: [address, ...]}, {} for None.
  """
  if not cluster:
    return {}
  if hasattr(cluster, "as_dict"):
    cluster = cluster.as_dict()
  elif isinstance(cluster, cluster_lib.ClusterInfo):
    cluster = cluster.cluster
  return {str(job): list(addresses) for job, addresses in cluster.items()
          if job != cluster_lib.EVALUATOR and addresses}


def _check_devices(num_devices_per_worker, device_type, allow_none):
  if device_type not in _DEVICE_TYPES:
    raise errors.ConfigError(
        f"`device_type` must be one of {_DEVICE_TYPES}, got "
        f"{device_type!r}.")
  if num_devices_per_worker is None and allow_none:
    return
  if isinstance(num_devices_per_worker, bool) or not isinstance(
      num_devices_per_worker, int) or num_devices_per_worker < 1:
    raise errors.ConfigError(
        "`num_devices_per_worker` must be an integer >= 1, got "
        f"{num_devices_per_worker!r}.")


def _num_trainers(jobs):
  return sum(len(jobs.get(job, ())) for job in cluster_lib.TRAINER_JOBS)


def _check_cluster_fits(kind, jobs):
  """Raises unless a strategy of `kind` can train on the cluster `jobs`."""
  if not jobs:
    return
  tf_config_rules.check_strategy_jobs(kind, jobs,
                                      source="The strategy's")
  if kind in _LOCAL_KINDS and _num_trainers(jobs) > 1:
    raise errors.NotSupportedError(
        f"The strategy is {kind}, a single-machine strategy, but the cluster "
        f"has {_num_trainers(jobs)} training tasks ({sorted(jobs)}); harness "
        "does not replicate one graph across machines. Fix: use the "
        "collective strategy (tf.compat.v1.distribute.experimental."
        "MultiWorkerMirroredStrategy) or parameter_server.")


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
    kind: one of `KINDS`.
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
  if kind not in KINDS:
    raise errors.ConfigError(
        f"Unknown strategy kind {kind!r}: valid kinds are {list(KINDS)}.")
  _check_devices(num_devices_per_worker, device_type, allow_none=False)
  _check_cluster_fits(kind, training_cluster(cluster))
  count = num_devices_per_worker
  devices = [f"/device:{device_type}:{i}" for i in range(count)]
  num_gpus = count if device_type == "GPU" else 0
  if kind == "default":
    return None
  if kind == "one_device" and count != 1:
    raise errors.ConfigError(
        f"The one_device strategy uses one device, but "
        f"num_devices_per_worker is {count}. Fix: use mirrored for {count} "
        "devices, or num_devices_per_worker=1.")
  if kind == "parameter_server" and device_type == "CPU" and count > 1:
    raise errors.NotSupportedError(_PS_CPU_DEVICES.format(count=count))
  v1 = tf.compat.v1.distribute
  with tf.Graph().as_default():
    if kind == "mirrored":
      return v1.MirroredStrategy(devices=devices)
    if kind == "one_device":
      return v1.OneDeviceStrategy(devices[0])
    if kind == "central_storage":
      return v1.experimental.CentralStorageStrategy(
          compute_devices=devices, parameter_device="/device:CPU:0")
    if kind == "parameter_server":
      return v1.experimental.ParameterServerStrategy(
          cluster_resolver=_local_resolver(num_gpus))
    strategy = v1.experimental.MultiWorkerMirroredStrategy(
        cluster_resolver=_local_resolver(num_gpus))
    if (count, device_type) != _tf_private.collective_num_devices_per_worker(
        strategy):
      _tf_private.reinitialize_collective_local(strategy, devices)
    return strategy


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
                       device_type="CPU"):
  """Configures `strategy` for one training task; returns its session config.

  A collective or parameter-server strategy becomes a multi-worker one for
  `task_type`/`task_id` of `cluster` (through v1 `configure()`, run inside a
  throwaway graph so that no server or health-check thread starts). The
  returned config has what the strategy needs: for collective, the group
  leader (chief 0, else worker 0) and a device filter to this task; for
  parameter servers, filters to this task and "/job:ps". Use it for BOTH the
  session and (through `server_config_for`) the in-process server.

  Single-machine kinds (mirrored, central storage, one device, none) with a
  one-trainer cluster or no cluster are left as they are: train them with a
  local session (target ""), which needs no server.

  Args:
    strategy: a tf.compat.v1 strategy (see `to_graph_strategy`) or None.
    cluster: {job: [address, ...]} (an "evaluator" job is ignored), or None
      / {} for local training.
    task_type: this task's job, "chief" or "worker" (or "master").
    task_id: this task's index in its job.
    session_config: the user's `ConfigProto` (not modified), or None for
      `run_config.get_default_session_config()`.
    num_devices_per_worker: replicas per task; None keeps what the strategy
      was built with (e.g. by `make_strategy`; a collective strategy built
      by the user has all visible GPUs, else one CPU). With N > 1 and
      device_type "CPU", N CPU devices stand in for N GPUs.
    device_type: "CPU" or "GPU" (ignored when num_devices_per_worker is
      None).

  Returns:
    A new `tf.compat.v1.ConfigProto` (with `device_count` CPU=N for N > 1
    CPU devices).

  Raises:
    ConfigError: a TF2 strategy, bad device numbers, or a task that is not a
      training task of the cluster (ClusterConfigError).
    NotSupportedError: a single-machine strategy on several trainers, or N
      > 1 CPU devices with parameter servers.
  """
  _check_devices(num_devices_per_worker, device_type, allow_none=True)
  kind = strategy_kind(strategy)
  if kind not in (None, "default") and not _is_v1(strategy):
    raise errors.ConfigError(
        f"configure_for_task needs a tf.compat.v1 strategy, got the TF2 "
        f"{type(strategy).__name__}. Fix: pass to_graph_strategy(strategy).")
  jobs = training_cluster(cluster)
  _check_cluster_fits(kind, jobs)
  config = copy.deepcopy(session_config or
                         run_config.get_default_session_config())
  count = num_devices_per_worker
  if jobs:
    _check_task(jobs, task_type, task_id)
  if kind == "collective":
    if count is None:  # Keep the strategy's own devices (make_strategy's).
      count, device_type = _tf_private.collective_num_devices_per_worker(
          strategy)
    _configure_collective(strategy, config, jobs, task_type, task_id, count,
                          device_type)
  elif kind == "parameter_server" and jobs:
    if count is not None and device_type == "CPU" and count > 1:
      raise errors.NotSupportedError(_PS_CPU_DEVICES.format(count=count))
    if count is not None and device_type == "GPU":
      _tf_private.set_ps_gpus_per_worker(strategy, count)
    with tf.Graph().as_default():
      strategy.configure(config, jobs, task_type, task_id)
  elif kind not in (None, "default"):
    strategy.configure(config)
  elif jobs and cluster_lib.PS in jobs:  # No strategy: replica_device_setter.
    del config.device_filters[:]
    config.device_filters.extend(
        ["/job:ps", f"/job:{task_type}/task:{task_id}"])
  num_cpus = cpu_devices_per_worker(strategy)
  if device_type == "CPU" and count is not None:
    num_cpus = max(num_cpus, count)
  if num_cpus > 1:
    config.device_count["CPU"] = num_cpus
  return config


def _configure_collective(strategy, config, jobs, task_type, task_id, count,
                          device_type):
  """Configures a v1 collective strategy (in a throwaway graph: no server).

  The local devices are always set explicitly: `configure()` alone resets a
  collective strategy to one CPU device per worker.
  """
  with tf.Graph().as_default():
    if not jobs:
      if (count, device_type) != (
          _tf_private.collective_num_devices_per_worker(strategy)):
        _tf_private.reinitialize_collective_local(
            strategy, [f"/device:{device_type}:{i}" for i in range(count)])
      strategy.configure(config)
      return
    with _tf_private.override_collective_local_devices(
        strategy, count, device_type):
      strategy.configure(config, jobs, task_type, task_id)
  logging.info("strategy | %s/%d | collective over %d workers | %d "
               "replicas in sync", task_type, task_id, _num_trainers(jobs),
               strategy.num_replicas_in_sync)


def cpu_devices_per_worker(strategy):
  """How many CPU devices each task needs for `strategy` (at least 1).

  Use it for the server's and session's `device_count` when the strategy
  replicates over several CPU devices (the CPU stand-in for GPUs).

  Args:
    strategy: a v1 strategy (configured or not), or None.

  Returns:
    The number of CPU replicas on one worker, or 1.
  """
  if strategy_kind(strategy) in (None, "default"):
    return 1
  devices = strategy.extended.worker_devices
  num_cpus = sum(1 for device in devices
                 if tf.DeviceSpec.from_string(device).device_type == "CPU")
  return max(1, num_cpus)


def server_config_for(session_config, *, cluster, task_type,
                      num_devices_per_worker=1, device_type="CPU"):
  """The `ConfigProto` for this task's in-process `tf.distribute.Server`.

  The strategy-updated `session_config` (device filters, rewrite options,
  group leader, ...) with the task's device counts, and the collective group
  leader set if missing, as `harness.server.server_config` does for a
  standalone server. The device count is what makes N CPU devices exist:
  `tf.distribute.Server` ignores logical devices.

  Args:
    session_config: what `configure_for_task` returned, or None (e.g. for a
      ps task).
    cluster: {job: [address, ...]}; an evaluator job is left out.
    task_type: this task's job; "ps" tasks get one CPU device and no GPU.
    num_devices_per_worker: replicas per task, >= 1.
    device_type: "CPU" or "GPU".

  Returns:
    A new `tf.compat.v1.ConfigProto`.

  Raises:
    ConfigError: bad device numbers.
  """
  _check_devices(num_devices_per_worker, device_type, allow_none=False)
  count = num_devices_per_worker
  is_ps = task_type == cluster_lib.PS
  config = copy.deepcopy(session_config or tf.compat.v1.ConfigProto())
  config.device_count.clear()
  config.device_count["CPU"] = (
      count if device_type == "CPU" and not is_ps else 1)
  config.device_count["GPU"] = (
      count if device_type == "GPU" and not is_ps else 0)
  jobs = training_cluster(cluster)
  if not config.experimental.collective_group_leader:
    # What harness.server (an edge module, not imported here) also sets.
    for job in (cluster_lib.CHIEF, cluster_lib.WORKER):
      if jobs.get(job):
        config.experimental.collective_group_leader = (
            f"/job:{job}/replica:0/task:0")
        break
  return config


def _num_local_cpus(task_type, task_id):
  """CPU devices of this task in the eager context (which lists peers' too)."""
  count = 0
  for device in tf.config.list_logical_devices("CPU"):
    spec = tf.DeviceSpec.from_string(device.name)
    if spec.job in (None, "localhost") or (
        spec.job == task_type and spec.task == task_id):
      count += 1
  return count


def in_process_server_target(strategy, *, cluster, task_type, task_id,
                             num_devices_per_worker=None, device_type="CPU"):
  """The session target of a server the user's strategy already started.

  A collective strategy (v1 or TF2) constructed in eager mode while
  TF_CONFIG names a cluster starts this task's gRPC server itself, on the
  task's port, with the eager context's devices; a second
  `tf.distribute.Server` there then fails ("Could not start gRPC server").
  Sessions can use the running one instead. Call this with the user's
  original object, before `to_graph_strategy`.

  Args:
    strategy: the user's strategy, or None.
    cluster: {job: [address, ...]}.
    task_type: this task's job.
    task_id: this task's index.
    num_devices_per_worker: the CPU devices per worker training will use;
      checked against the running server (a mismatch hangs collectives).
    device_type: "CPU" or "GPU".

  Returns:
    "grpc://host:port" of this task when such a server runs, else None
    (start one with `server_config_for`).

  Raises:
    ConfigError: the running server has fewer CPU devices than asked for.
  """
  if strategy is None or not _tf_private.started_in_process_server(strategy):
    return None
  address = training_cluster(cluster)[task_type][task_id]
  available = _num_local_cpus(task_type, task_id)
  if device_type == "CPU" and (num_devices_per_worker or 1) > available:
    raise errors.ConfigError(
        f"num_devices_per_worker={num_devices_per_worker} CPU devices, but "
        f"the {type(strategy).__name__} built while TF_CONFIG was set "
        f"already started this task's server on {address} with {available} "
        "CPU device(s), and a process can serve a port once. Fix: call "
        "tf.config.set_logical_device_configuration(cpu, [tf.config."
        f"LogicalDeviceConfiguration()] * {num_devices_per_worker}) before "
        "building the strategy, or build it before TF_CONFIG is set, or "
        "use one device per worker.")
  logging.info("strategy | %s/%d | the strategy already serves %s; not "
               "starting another server", task_type, task_id, address)
  return f"grpc://{address}"


def install_evaluator_guard(environ):
  """Lets an evaluator process construct multi-worker strategies safely.

  A legacy script builds its strategy at top level in every task. In an
  evaluator (TF_CONFIG task type "evaluator") a collective strategy then
  fails with `KeyError: 'evaluator'`, or, if the cluster lists the
  evaluator, starts a server and health checks on its port. With the guard,
  strategies built while TF_CONFIG's task is an evaluator see no cluster
  and initialise for local training (the evaluator needs no strategy). The
  guard is process-wide, idempotent, and inert for other task types.

  Args:
    environ: a mapping such as `os.environ`, read for TF_CONFIG. (The guard
      itself checks `os.environ`, which is what TensorFlow reads.)

  Returns:
    True if TF_CONFIG's task is an evaluator and the guard is installed.

  Raises:
    ClusterConfigError: TF_CONFIG is malformed.
  """
  info = cluster_lib.from_environ(environ)
  if info is None or info.task_type != cluster_lib.EVALUATOR:
    return False
  _tf_private.localize_tf_config_resolver({cluster_lib.EVALUATOR})
  logging.info("strategy | evaluator | strategies built here train locally")
  return True
