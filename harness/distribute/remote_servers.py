"""A remote cluster's servers, checked before a standalone client trains.

`check_servers` (every address accepts TCP connections, each training task
answers a TensorFlow request, knows the whole cluster and has the CPU
devices the strategy needs), and which tasks train (`trainer_tasks`,
`chief_task`). `harness.distribute.remote` calls them first.
"""

import concurrent.futures
import socket
import threading
import time

from harness import cluster as cluster_lib
from harness import errors
from harness import run_config as run_config_lib
from harness._tf import tf

__all__ = [
    "trainer_tasks",
    "chief_task",
    "check_reachable",
    "check_servers",
]

# The start-up checks wait for the servers RunConfig's default
# `remote_connect_timeout_secs` unless told (train_remote passes the
# config's).
_DEFAULT_WAIT_SECS = run_config_lib.DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS
_RETRY_SECS = 0.5


def trainer_tasks(cluster):
  """The training tasks of `cluster`, chief first: [("worker", 0), ...]."""
  return [(job, index) for job in cluster_lib.TRAINER_JOBS
          for index in range(len(cluster.get(job, ())))]


def chief_task(cluster):
  """The task that writes checkpoints, as ("chief", 0): the cluster's chief
  (`harness.cluster.chief_task`: master, else chief, else worker 0).

  Raises:
    ClusterConfigError: the cluster has no training task.
  """
  chief = cluster_lib.chief_task(cluster)
  if chief is None:
    raise errors.ClusterConfigError(
        f"The remote cluster {cluster} has no chief, master or worker job: "
        "nothing would train. Fix: add worker=host:port to it.")
  return chief


def _connect_error(address, timeout_secs):
  """None if a TCP connection to `address` opens in time, else why not."""
  host, _, port = address.rpartition(":")
  deadline = time.monotonic() + timeout_secs
  while True:
    left = deadline - time.monotonic()
    try:
      with socket.create_connection((host.strip("[]"), int(port)),
                                    timeout=max(0.1, min(left, 5.0))):
        return None
    except OSError as e:
      if time.monotonic() + _RETRY_SECS >= deadline:
        return e.strerror or type(e).__name__
    time.sleep(_RETRY_SECS)


def check_reachable(cluster, *, timeout_secs=_DEFAULT_WAIT_SECS):
  """Raises unless every address of `cluster` accepts TCP connections.

  All addresses are tried at once, each retried until `timeout_secs` (a
  server that is still starting comes up in time), so the call returns or
  raises within about `timeout_secs`.

  Args:
    cluster: {job: [address, ...]}.
    timeout_secs: seconds to wait for every server, > 0.

  Raises:
    RemoteClusterError: naming every address that did not answer.
  """
  addresses = [(job, index, address) for job, tasks in cluster.items()
               for index, address in enumerate(tasks)]
  with concurrent.futures.ThreadPoolExecutor(len(addresses)) as pool:
    found = list(pool.map(
        lambda a: _connect_error(a[2], timeout_secs), addresses))
  failed = [f"{job}/{index} at {address} ({why})" for (job, index, address),
            why in zip(addresses, found) if why is not None]
  if failed:
    raise errors.RemoteClusterError(
        f"Cannot reach {len(failed)} of the {len(addresses)} servers of the "
        f"remote cluster within {timeout_secs:g} s: {'; '.join(failed)}. "
        "Fix: start `python -m harness.server` for each of them with the same "
        "cluster (and check the host:port in --remote_cluster / "
        "DistributeConfig(remote_cluster=...)), or raise "
        "--remote_connect_timeout_secs.")


def _server_devices(address, timeout_secs):
  """The device names a server's cluster offers, within `timeout_secs`."""
  result = {}

  def list_devices():
    try:
      config = tf.compat.v1.ConfigProto(
          operation_timeout_in_ms=int(timeout_secs * 1000))
      with tf.Graph().as_default(), tf.compat.v1.Session(
          f"grpc://{address}", config=config) as session:
        result["devices"] = [d.name for d in session.list_devices()]
    except Exception as e:  # pylint: disable=broad-except
      result["error"] = e

  thread = threading.Thread(target=list_devices, daemon=True,
                            name=f"list-devices-{address}")
  thread.start()
  thread.join(timeout_secs)
  if thread.is_alive():
    return None, f"no answer to a TensorFlow request in {timeout_secs:g} s"
  if "error" in result:
    return None, f"{type(result['error']).__name__}: {result['error']}"
  return result["devices"], None


def check_servers(cluster, *, num_cpu_devices=1,
                  timeout_secs=_DEFAULT_WAIT_SECS):
  """Checks that the cluster's servers answer and fit the training.

  Every address must accept TCP connections (`check_reachable`); then each
  training task must answer a TensorFlow request, know every task of
  `cluster` (its servers were started with the same cluster) and offer
  `num_cpu_devices` CPU devices (the collective strategy's replicas).

  Args:
    cluster: {job: [address, ...]}.
    num_cpu_devices: CPU devices each training task needs.
    timeout_secs: bound of each of the two checks, seconds.

  Raises:
    RemoteClusterError: a server is unreachable or does not answer.
    ClusterConfigError: a server runs another cluster, or has too few CPU
      devices.
  """
  check_reachable(cluster, timeout_secs=timeout_secs)
  for job, index in trainer_tasks(cluster):
    address = cluster[job][index]
    devices, why = _server_devices(address, timeout_secs)
    if devices is None:
      raise errors.RemoteClusterError(
          f"The server of {job}/{index} at {address} accepts connections but "
          f"is not a working TensorFlow server: {why}. Fix: start it with "
          "`python -m harness.server` and this cluster.")
    specs = [tf.DeviceSpec.from_string(name) for name in devices]
    for other_job, addresses in cluster.items():
      for other_index in range(len(addresses)):
        if not any(s.job == other_job and s.task == other_index
                   for s in specs):
          raise errors.ClusterConfigError(
              f"The server at {address} ({job}/{index}) does not know task "
              f"{other_job}/{other_index} of the remote cluster {cluster}: it "
              "was started with another cluster. Fix: start every server "
              "with exactly the cluster given to the client.")
    cpus = sum(1 for s in specs if s.job == job and s.task == index and
               s.device_type == "CPU")
    if cpus < num_cpu_devices:
      raise errors.ClusterConfigError(
          f"The server of {job}/{index} at {address} has {cpus} CPU "
          f"device(s), but the strategy runs {num_cpu_devices} replicas on "
          "each worker. Fix: restart it with `python -m harness.server "
          f"--num_cpu_devices={num_cpu_devices}`, or lower the devices per "
          "worker of the strategy.")
