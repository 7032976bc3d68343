"""Starting one task's standard server, and keeping it until it is stopped.

    from harness.server import serve

    server = serve.start_server({"worker": ["h1:2222"], "ps": ["h3:2222"]},
                                "ps", 0)
    received = cli.catch_stop_signals()  # harness.server.cli
    serve.serve_until_stopped(server, "ps", 0, received)  # Never returns.

`start_server` is the library part (parameter servers, in-process workers);
`serve_until_stopped` is what `python -m harness.server` does once it
listens: wait for SIGTERM or SIGINT (exit 0), and re-execute itself in place
(same pid, flags and port) once its client's claim lapses
(`harness.distribute.server_claim`), which releases whatever that client
left (sessions, steps blocked in an all-reduce, their threads and memory)
without aborting collectives.
"""

import os
import signal
import sys
import time

from absl import logging

from harness import cluster as cluster_lib
from harness import errors
from harness._tf import tf
from harness.cluster.jobs import EVALUATOR
from harness.distribute import server_claim
from harness.distribute import task_servers

__all__ = [
    "start_server",
    "serve_until_stopped",
    "restart_count",
]

_STOP_POLL_SECS = 0.1
_WATCH_SECS = 1.0  # How often the server checks its client's claim.
_RESTARTS_ENV = "HARNESS_SERVER_RESTARTS"


def _cluster_dict(cluster):
  """{job: [address, ...]} from a mapping, a ClusterInfo or a ClusterSpec."""
  if hasattr(cluster, "as_dict"):  # tf.train.ClusterSpec
    cluster = cluster.as_dict()
  elif hasattr(cluster, "cluster") and hasattr(cluster, "task_type"):
    cluster = cluster.cluster  # harness.cluster.tf_config.ClusterInfo
  try:
    return {str(job): list(addresses) for job, addresses in cluster.items()}
  except (AttributeError, TypeError) as e:
    raise errors.ClusterConfigError(
        f"`cluster` must map job names to address lists, e.g. "
        f'{{"worker": ["host:2222"]}}, got {cluster!r}.') from e


def _check_task(jobs, job_name, task_index):
  """Raises ClusterConfigError unless the task can run a standard server.

  Not `harness.distribute.strategies`' check: that one also refuses ps
  tasks and tells how to configure a strategy; this one names the unknown
  job and the evaluator's own program.
  """
  if job_name == EVALUATOR:
    raise errors.ClusterConfigError(
        f"Task {job_name}/{task_index!r} is an evaluator: it is not part of "
        "the training cluster and runs no standard server. Run the "
        "evaluator's training program instead (e.g. `python -m harness.main` "
        "with this TF_CONFIG).")
  if job_name not in jobs:
    raise errors.ClusterConfigError(
        f"Job {job_name!r} is not in the cluster: its jobs are "
        f"{sorted(jobs)}. Use one of those job names.")
  count = len(jobs[job_name])
  if isinstance(task_index, bool) or not isinstance(task_index, int) or not (
      0 <= task_index < count):
    raise errors.ClusterConfigError(
        f"Task {job_name}/{task_index!r} is not in the cluster: "
        f'cluster["{job_name}"] has {count} addresses (valid index '
        f"0..{count - 1}).")


def start_server(cluster, job_name, task_index, *, num_cpu_devices=1,
                 num_gpus=0, protocol="grpc"):
  """Starts a standard server for task `job_name`/`task_index` of `cluster`.

  Its config is `task_servers.server_config_for`'s: the device counts (the
  CPU devices through `device_count`, since `tf.distribute.Server` ignores
  logical devices) and the collective group leader, as TensorFlow's
  `run_standard_tensorflow_server` set it.

  Args:
    cluster: {job: [address, ...]} (or a ClusterInfo / tf.train.ClusterSpec).
    job_name: the task's job, e.g. "worker" or "ps".
    task_index: the task's index in its job.
    num_cpu_devices: CPU devices the task offers, >= 1.
    num_gpus: GPUs the task may use, >= 0 (ignored for "ps").
    protocol: the RPC layer, "grpc" unless TF_CONFIG says otherwise.

  Returns:
    The started `tf.distribute.Server`; it serves until the process exits.

  Raises:
    ClusterConfigError: if the task is not in the cluster, or its address
      cannot be listened on.
    ConfigError: if a device count is out of range.
  """
  # Like TensorFlow's standard server, leave an evaluator listed in the
  # cluster out of it: it takes no part in training.
  jobs = {job: addresses for job, addresses in _cluster_dict(cluster).items()
          if job != EVALUATOR}
  _check_task(jobs, job_name, task_index)
  config = task_servers.server_config_for(
      None, cluster=jobs, task_type=job_name,
      num_cpu_devices=num_cpu_devices, num_gpus=num_gpus)
  address = jobs[job_name][task_index]
  try:
    return tf.distribute.Server(
        tf.train.ClusterSpec(jobs), job_name=job_name, task_index=task_index,
        protocol=protocol or "grpc", config=config, start=True)
  except (tf.errors.OpError, ValueError) as e:
    raise errors.ClusterConfigError(
        f"Cannot start the {protocol} server of {job_name}/{task_index} on "
        f"{address!r}: {e}. TensorFlow listens on this port on all "
        "interfaces: check that no other process uses the port, or give the "
        "task a free one.") from e


def restart_count(environ):
  """How many times this server restarted in place (0: its first start)."""
  return int(environ.get(_RESTARTS_ENV, "0"))


def _wait_for_stop_signal(received, lost_client=None):
  """Blocks until SIGTERM or SIGINT, or until a claiming client is lost.

  The server's own `join()` blocks in C++ where Python signal handlers never
  run; a short sleep loop lets the handler end the wait within 0.1 s.

  Args:
    received: the list `cli.catch_stop_signals` returned.
    lost_client: optional callable, polled every `_WATCH_SECS`, returning
      the lost client's description or None.

  Returns:
    (signal number, None) or (None, lost client description).
  """
  next_watch = time.monotonic() + _WATCH_SECS
  while not received:
    time.sleep(_STOP_POLL_SECS)
    if lost_client is not None and time.monotonic() >= next_watch:
      next_watch = time.monotonic() + _WATCH_SECS
      try:
        lost = lost_client()
      except Exception as e:  # pylint: disable=broad-except
        logging.warning("server | cannot check the client claim: %s", e)
        lost = None
      if lost:
        return None, lost
  return received[0], None


def _process_usage():
  """(threads, RSS in MiB) of this process, from /proc (None elsewhere)."""
  try:
    with open("/proc/self/status", encoding="ascii") as f:  # local-fs: procfs
      fields = dict(line.split(":", 1) for line in f if ":" in line)
    return (int(fields["Threads"]), int(fields["VmRSS"].split()[0]) / 1024)
  except (OSError, KeyError, ValueError):
    return None, None


def _flush_output():
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()


def _restart_in_place(task, lost):
  """Re-executes this server (same pid, flags and port): a clean slate."""
  threads, rss = _process_usage()
  restarts = restart_count(os.environ) + 1
  logging.warning(
      "server | %s | its client's claim lapsed: restarting this server in "
      "place (restart %d) to release what it left (%s threads, %s MiB RSS "
      "now)", task, restarts, threads, f"{rss:.0f}" if rss is not None else
      "?")
  logging.debug("server | %s | the lapsed claim: client %s", task, lost)
  _flush_output()
  os.environ[_RESTARTS_ENV] = str(restarts)
  os.execv(sys.executable, [sys.executable, "-m", "harness.server"]
           + sys.argv[1:])


def serve_until_stopped(server, task_type, task_id, received):
  """Serves until SIGTERM or SIGINT, then exits 0; never returns.

  Watches the claim a standalone client holds on `server`: once it lapses
  (the client was killed, or ended it after a failure), re-executes this
  process in place with the same flags.

  Args:
    server: what `start_server` returned.
    task_type: the server's job.
    task_id: the server's index in its job.
    received: the list `cli.catch_stop_signals` returned.
  """
  task = cluster_lib.task_label(task_type, task_id)
  watchdog = server_claim.Watchdog(server.target, task_type, task_id)
  signum, lost = _wait_for_stop_signal(received, watchdog.lost_client)
  if lost:
    _restart_in_place(task, lost)
  logging.info("server | %s | stopping on %s", task,
               signal.Signals(signum).name)
  del server  # Serves until the process exits; gRPC has no clean stop.
  _flush_output()
  # TensorFlow's gRPC server threads cannot be stopped cleanly and may keep
  # interpreter shutdown waiting; leave without running finalizers.
  os._exit(0)  # pylint: disable=protected-access
