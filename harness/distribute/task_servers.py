"""A task's server: its config (for a training task's in-process server and
for `python -m harness.server`), the one the user's strategy already
started, or one started for a cluster task (`serve_task`).
"""

import copy
import os

from absl import logging

from harness import _tf_private
from harness import cluster as cluster_lib
from harness import errors
from harness import plan as plan_lib
from harness._tf import tf
from harness.cluster import listen
from harness.distribute.task_devices import check_devices
from harness.distribute.task_devices import training_cluster

__all__ = ["server_config_for", "in_process_server_target", "serve_task"]


def server_config_for(session_config, *, cluster, task_type,
                      num_devices_per_worker=1, device_type="CPU",
                      num_cpu_devices=None, num_gpus=None):
  """The `ConfigProto` for a task's `tf.distribute.Server`.

  The strategy-updated `session_config` (device filters, rewrite options,
  group leader, ...) with the task's device counts, and the collective group
  leader (chief 0, else worker 0) set if missing, so that collective-strategy
  clients do not hang in their variable initialisers. The device count is
  what makes N CPU devices exist: `tf.distribute.Server` ignores logical
  devices. A training task's in-process server gives `num_devices_per_worker`
  and `device_type`; a standalone server (`python -m harness.server`) gives
  its independent `--num_cpu_devices` and GPU counts as `num_cpu_devices`
  and `num_gpus`.

  Args:
    session_config: what `configure_for_task` returned, or None (e.g. for a
      ps task or a standalone server).
    cluster: {job: [address, ...]} (or a ClusterInfo / tf.train.ClusterSpec);
      an evaluator job is left out.
    task_type: this task's job; "ps" tasks get no GPU, and one CPU device
      unless `num_cpu_devices` says otherwise.
    num_devices_per_worker: replicas per task, >= 1.
    device_type: "CPU" or "GPU".
    num_cpu_devices: CPU devices the task offers, >= 1, whatever its job;
      None: `num_devices_per_worker` for "CPU" (1 for "GPU" and for ps).
    num_gpus: GPUs the task may use, >= 0 (0: none is visible; ps tasks get
      none); None: `num_devices_per_worker` for "GPU", else 0.

  Returns:
    A new `tf.compat.v1.ConfigProto`.

  Raises:
    ConfigError: bad device numbers.
  """
  check_devices(num_devices_per_worker, device_type, allow_none=False)
  _check_count("num_cpu_devices", num_cpu_devices, minimum=1)
  _check_count("num_gpus", num_gpus, minimum=0)
  count = num_devices_per_worker
  is_ps = task_type == cluster_lib.PS
  if num_cpu_devices is None:
    num_cpu_devices = count if device_type == "CPU" and not is_ps else 1
  if num_gpus is None:
    num_gpus = count if device_type == "GPU" else 0
  return _server_config(session_config, training_cluster(cluster), task_type,
                        num_cpu_devices, num_gpus)


def _server_config(session_config, jobs, task_type, num_cpu_devices,
                   num_gpus):
  """`server_config_for` with its numbers decided (and valid)."""
  is_ps = task_type == cluster_lib.PS
  config = copy.deepcopy(session_config or tf.compat.v1.ConfigProto())
  config.device_count.clear()
  config.device_count["CPU"] = num_cpu_devices
  config.device_count["GPU"] = 0 if is_ps else num_gpus
  if not config.experimental.collective_group_leader:
    for job in (cluster_lib.CHIEF, cluster_lib.WORKER):
      if jobs.get(job):
        config.experimental.collective_group_leader = (
            f"/job:{job}/replica:0/task:0")
        break
  return config


def _check_count(name, value, *, minimum):
  """Raises ConfigError unless `value` is None or an integer >= `minimum`."""
  if value is not None and (isinstance(value, bool) or not isinstance(
      value, int) or value < minimum):
    raise errors.ConfigError(
        f"`{name}` must be an integer >= {minimum}, got {value!r}.")


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
  return _running_target(strategy, training_cluster(cluster), task_type,
                         task_id, num_devices_per_worker, device_type)


def _running_target(strategy, jobs, task_type, task_id,
                    num_devices_per_worker, device_type):
  """`in_process_server_target` for the training `jobs`."""
  if strategy is None or not _tf_private.started_in_process_server(strategy):
    return None
  address = jobs[task_type][task_id]
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


def serve_task(config, strategy, *, jobs, session_config, num_cpu_devices,
               server_class):
  """This task's server: the user's strategy's own, or one started here.

  Args:
    config: the task's RunConfig (task, protocol, bind_address).
    strategy: the user's strategy (before `to_graph_strategy`), or None.
    jobs: {job: [address, ...]}, the training jobs.
    session_config: what `strategies.configure_checked` returned, or None
      (a ps task).
    num_cpu_devices: the CPU devices the task's sessions use, >= 1.
    server_class: the class to start (`tf.distribute.Server`'s own).

  Returns:
    (the session target, the server started here or None).

  Raises:
    ClusterConfigError: the server cannot start (port taken, bad address).
  """
  address = jobs[config.task_type][config.task_id]
  target = _running_target(strategy, jobs, config.task_type, config.task_id,
                           None, "CPU")
  server = None
  if not target:
    server = _start_server(config, address, _server_config(
        session_config, jobs, config.task_type,
        1 if config.plan.role == plan_lib.Role.PS else num_cpu_devices, 0),
                           jobs, server_class)
    target = server.target
  _log_listening(config, address, "listening on" if server else (
      f"using the strategy's server {target}, listening on"))
  return target, server


def _start_server(config, address, server_config, jobs, server_class):
  """Starts a `server_class` server for the task (`serve_task`)."""
  try:
    # Created unstarted, then started, through the class's defining module
    # (as tf.estimator did with `server_lib.Server`).
    server = server_class(
        tf.train.ClusterSpec(jobs), job_name=config.task_type,
        task_index=config.task_id, config=server_config,
        protocol=config.protocol, start=False)
    server.start()
  except (tf.errors.OpError, ValueError) as e:
    raise errors.ClusterConfigError(
        f"Cannot start the server of {config.task_label} on {address!r}: {e}. "
        "Fix: free the port, or give this task another address in "
        "TF_CONFIG.") from e
  return server


def _log_listening(config, address, what):
  line, warning = listen.describe(address, environ=os.environ,
                                  bind_address=config.bind_address)
  logging.info("server | %s | %s %s", config.task_label, what, line)
  if warning:
    logging.warning("server | %s | %s", config.task_label, warning)
