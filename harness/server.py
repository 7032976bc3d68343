"""A standard TensorFlow server for one task of a cluster.

From TF_CONFIG (the default)::

    TF_CONFIG='{"cluster": {"worker": ["h1:2222", "h2:2222"]},
                "task": {"type": "worker", "index": 1}}' \\
        python -m harness.server --num_cpu_devices=2

or from flags::

    python -m harness.server --cluster_spec="worker=h1:2222,h2:2222;ps=h3:2222" \\
        --job_name=worker --task_index=1

The server runs no model code: clients (a `Session("grpc://h2:2222")`, a
standalone-client strategy, a parameter-server trainer) place ops on it. It
is configured so that collective-strategy clients work (the collective group
leader is set, as TensorFlow's `run_standard_tensorflow_server` did) and
logs where it really listens, `server | worker/1 | listening on *:2222 (all
interfaces; cluster address h2:2222) | 2 CPU devices` (TensorFlow 2.21 binds
every interface; see `harness.cluster.listen`), with a warning and a
firewall hint unless `--bind_address='*'` acknowledges it or harness.launch
runs it in a private network namespace. Then it serves until SIGTERM or
SIGINT, on which it exits 0. A standalone client
(`harness.distribute.remote`) claims the server while it trains
(`harness.distribute.server_claim`); once a claim expires unrenewed (the
client was killed) or its client ends it after a failure, the server logs
`its client's claim lapsed: restarting this server in place` and
re-executes itself with the same flags (same pid and port), which releases
whatever that client left (sessions, steps blocked in an all-reduce, their
threads and memory) without aborting collectives. A bad flag or TF_CONFIG
is one message on stderr and exit status 2. Library use, e.g. for
parameter servers or in-process workers::

    server = server.start_server({"worker": [...], "ps": [...]}, "ps", 0)
"""

import functools
import os
import signal
import sys
import time
import types

from absl import app
from absl import flags
from absl import logging

from harness import errors
from harness.cli import bad_flags as cli
from harness.cli import log_format
from harness.cluster import listen
from harness.cluster.jobs import EVALUATOR
from harness.cluster import tf_config as cluster_lib
from harness.distribute import server_claim

__all__ = [
    "start_server",
    "server_config",
    "collective_group_leader",
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


def collective_group_leader(cluster):
  """The task leading collective ops in `cluster` ({job: [address, ...]}).

  Returns "/job:chief/replica:0/task:0" with a chief, else worker 0's name,
  or None when the cluster has neither a chief nor a worker job.
  """
  jobs = _cluster_dict(cluster)
  for job in ("chief", "worker"):
    if jobs.get(job):
      return f"/job:{job}/replica:0/task:0"
  return None


def server_config(cluster, job_name, *, num_cpu_devices, num_gpus):
  """The `ConfigProto` a standard server of `cluster` runs with.

  `tf.distribute.Server` ignores logical device configuration, so the
  number of CPU devices is set through `device_count`. The collective group
  leader is set so that collective-strategy clients do not hang in their
  variable initialisers.

  Args:
    cluster: {job: [address, ...]} (or a ClusterInfo / tf.train.ClusterSpec).
    job_name: the job of the task the config is for; "ps" tasks get no GPU.
    num_cpu_devices: CPU devices of the task, >= 1.
    num_gpus: GPUs the task may use, >= 0 (0: none is visible).

  Returns:
    A `tf.compat.v1.ConfigProto`.

  Raises:
    ConfigError: if a device count is out of range.
  """
  if isinstance(num_cpu_devices, bool) or not isinstance(
      num_cpu_devices, int) or num_cpu_devices < 1:
    raise errors.ConfigError(
        f"`num_cpu_devices` must be an integer >= 1, got {num_cpu_devices!r}.")
  if isinstance(num_gpus, bool) or not isinstance(num_gpus, int) or (
      num_gpus < 0):
    raise errors.ConfigError(
        f"`num_gpus` must be an integer >= 0, got {num_gpus!r}.")
  # Flag and TF_CONFIG errors are reported before TensorFlow's slow import.
  from harness._tf import tf  # lazy: TF-free --help and flag errors; pylint: disable=g-import-not-at-top
  gpus = 0 if job_name == "ps" else num_gpus
  config = tf.compat.v1.ConfigProto(
      device_count={"CPU": num_cpu_devices, "GPU": gpus})
  leader = collective_group_leader(cluster)
  if leader:
    config.experimental.collective_group_leader = leader
  return config


def _check_task(jobs, job_name, task_index):
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
  config = server_config(jobs, job_name, num_cpu_devices=num_cpu_devices,
                         num_gpus=num_gpus)
  from harness._tf import tf  # lazy: TF-free --help and flag errors; pylint: disable=g-import-not-at-top
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


# ---------------------------------------------------------------- binary --


def _define_flags():
  """Defines the binary's flags and returns their holders.

  Called only when the module runs as a binary, so that importing it as a
  library adds no flags that could clash with other modules' flags.
  """
  return types.SimpleNamespace(
      cluster_spec=flags.DEFINE_string(
          "cluster_spec", None, "The cluster, 'worker=h:p,h:p;ps=h:p' or "
          "JSON; default: TF_CONFIG's."),
      job_name=flags.DEFINE_string(
          "job_name", None, "This task's job (with --cluster_spec)."),
      task_index=flags.DEFINE_integer(
          "task_index", 0, "This task's index in its job (with "
          "--cluster_spec).", lower_bound=0),
      num_cpu_devices=flags.DEFINE_integer(
          "num_cpu_devices", 1, "CPU devices this task offers.",
          lower_bound=1),
      num_gpus_per_worker=flags.DEFINE_integer(
          "num_gpus_per_worker", 0, "GPUs this task may use (0: none "
          "visible).", lower_bound=0),
      bind_address=flags.DEFINE_string(
          "bind_address", None, "Where to listen. Default: the host of this "
          "task's cluster address, which TensorFlow 2.21 cannot honour (it "
          "listens on every interface), so a warning is logged; '*' "
          "acknowledges all interfaces. One host is refused."))


def _cluster_info(flag, environ):
  """The ClusterInfo from --cluster_spec/--job_name/--task_index or TF_CONFIG."""
  if flag.cluster_spec.value is None:
    if flag.job_name.present or flag.task_index.present:
      raise errors.FlagError(
          "flags --job_name/--task_index need --cluster_spec; without it the "
          "task comes from TF_CONFIG.")
    info = cluster_lib.from_environ(environ)
    if info is None or not info.has_cluster or info.task_type is None:
      raise errors.ClusterConfigError(
          "No cluster task given: TF_CONFIG is "
          f"{environ.get('TF_CONFIG')!r}, which names no cluster and task, "
          "and --cluster_spec is not given. Set TF_CONFIG to "
          '{"cluster": {...}, "task": {"type": ..., "index": ...}}, or pass '
          "--cluster_spec, --job_name and --task_index.")
    cluster_lib.check_servable(info)  # Placeholders fail here, not earlier.
    return info
  if not flag.job_name.value:
    raise errors.FlagError(
        "flag --job_name is required with --cluster_spec, e.g. "
        "--job_name=worker.")
  tf_config = {
      "cluster": cluster_lib.parse_remote_cluster(
          flag.cluster_spec.value, source="flag --cluster_spec"),
      "task": {"type": flag.job_name.value, "index": flag.task_index.value},
  }
  info = cluster_lib.parse_tf_config(
      tf_config, source="flags --cluster_spec/--job_name/--task_index")
  cluster_lib.check_servable(info)
  return info


def _catch_stop_signals():
  """The list SIGTERM/SIGINT go to from now on: before `listening on`, so a
  stop signal sent as soon as that line appears still ends it with 0."""
  received = []

  def on_signal(signum, unused_frame):
    received.append(signum)

  signal.signal(signal.SIGTERM, on_signal)
  signal.signal(signal.SIGINT, on_signal)
  return received


def _wait_for_stop_signal(received, lost_client=None):
  """Blocks until SIGTERM or SIGINT, or until a claiming client is lost.

  The server's own `join()` blocks in C++ where Python signal handlers never
  run; a short sleep loop lets the handler end the wait within 0.1 s.

  Args:
    received: the list `_catch_stop_signals` returned.
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


def _restart_in_place(task, lost):
  """Re-executes this server (same pid, flags and port): a clean slate."""
  threads, rss = _process_usage()
  restarts = int(os.environ.get(_RESTARTS_ENV, "0")) + 1
  logging.warning(
      "server | %s | its client's claim lapsed: restarting this server in "
      "place (restart %d) to release what it left (%s threads, %s MiB RSS "
      "now)", task, restarts, threads, f"{rss:.0f}" if rss is not None else
      "?")
  logging.debug("server | %s | the lapsed claim: client %s", task, lost)
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  os.environ[_RESTARTS_ENV] = str(restarts)
  os.execv(sys.executable, [sys.executable, "-m", "harness.server"]
           + sys.argv[1:])


def _main(flag, argv):
  # absl's full prefix only with absl's --verbosity=1 (debug).
  log_format.use(debug=logging.get_verbosity() >= logging.DEBUG)
  if len(argv) > 1:
    cli.usage_error("server", f"unexpected arguments {argv[1:]}; this binary "
                    "takes only flags.")
  try:
    bind_address = listen.check_bind_address(flag.bind_address.value,
                                             source="--bind_address")
    info = _cluster_info(flag, os.environ)
    server = start_server(
        info.cluster, info.task_type, info.task_id,
        num_cpu_devices=flag.num_cpu_devices.value,
        num_gpus=flag.num_gpus_per_worker.value, protocol=info.rpc_layer)
  except (errors.ConfigError, errors.NotSupportedError) as e:
    cli.usage_error("server", str(e))
  task = cluster_lib.task_label(info.task_type, info.task_id)
  received = _catch_stop_signals()
  line, warning = listen.describe(info.task_address, environ=os.environ,
                                  bind_address=bind_address)
  logging.info("server | %s | listening on %s | %d CPU devices", task, line,
               flag.num_cpu_devices.value)
  if warning:  # Once per server: not again at each restart in place.
    log = logging.debug if os.environ.get(_RESTARTS_ENV) else logging.warning
    log("server | %s | %s", task, warning)
  watchdog = server_claim.Watchdog(server.target, info.task_type,
                                   info.task_id)
  signum, lost = _wait_for_stop_signal(received, watchdog.lost_client)
  if lost:
    _restart_in_place(task, lost)
  logging.info("server | %s | stopping on %s", task,
               signal.Signals(signum).name)
  del server  # Serves until the process exits; gRPC has no clean stop.
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  # TensorFlow's gRPC server threads cannot be stopped cleanly and may keep
  # interpreter shutdown waiting; leave without running finalizers.
  os._exit(0)  # pylint: disable=protected-access


_HELP = """\
usage: python -m harness.server [--cluster_spec=... --job_name=J --task_index=I]

A standard TensorFlow server for one task of a cluster (from TF_CONFIG, or
from --cluster_spec/--job_name/--task_index). It runs no model code: a
standalone client (harness.main --remote_cluster) or a parameter-server
trainer places ops on it. It serves until SIGTERM or SIGINT (exit 0).

    python -m harness.server --job_name=worker --task_index=1 \\
        --cluster_spec="worker=h1:2222,h2:2222;ps=h3:2222"

Security: it runs any graph sent to it, unauthenticated, and TensorFlow 2.21
listens on every interface. Firewall the port (docs/SECURITY.md).
"""


def _help_text(flag):
  names = [holder.name for holder in vars(flag).values()]
  return f"{_HELP}\nflags:\n" + cli.flag_help(flags.FLAGS, names)


def run():
  """Console-script entry point (`harness-server`), as `python -m`."""
  flag = _define_flags()
  app.run(functools.partial(_main, flag),
          flags_parser=cli.flags_parser("server",
                                        help_text=lambda: _help_text(flag)))


if __name__ == "__main__":
  run()
