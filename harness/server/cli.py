"""`python -m harness.server`: its flags, its task, and its main.

The binary only wires: `_cluster_info` reads the task from the flags or
TF_CONFIG, `serve.start_server` starts it, and `serve.serve_until_stopped`
keeps it. A bad flag or TF_CONFIG is one message on stderr and exit status
2; `--help` prints `_HELP` and the flags, and exits 0.
"""

import functools
import os
import signal
import types

from absl import app
from absl import flags
from absl import logging

from harness import cluster as cluster_lib
from harness import errors
from harness.cli import binary_flags
from harness.cli import log_format
from harness.cluster import listen

__all__ = ["catch_stop_signals", "run"]


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


def _main(flag, received, argv):
  # absl's full prefix only with absl's --verbosity=1 (debug).
  log_format.use(debug=logging.get_verbosity() >= logging.DEBUG)
  if len(argv) > 1:
    binary_flags.usage_error(
        "server", f"unexpected arguments {argv[1:]}; this binary takes only "
        "flags.")
  try:  # Flags and TF_CONFIG first: a bad one fails before TF's import.
    bind_address = listen.check_bind_address(flag.bind_address.value,
                                             source="--bind_address")
    info = _cluster_info(flag, os.environ)
  except (errors.ConfigError, errors.NotSupportedError) as e:
    binary_flags.usage_error("server", str(e))
  from harness.server import serve  # lazy: TensorFlow, not for --help  # pylint: disable=g-import-not-at-top
  try:
    server = serve.start_server(
        info.cluster, info.task_type, info.task_id,
        num_cpu_devices=flag.num_cpu_devices.value,
        num_gpus=flag.num_gpus_per_worker.value, protocol=info.rpc_layer)
  except (errors.ConfigError, errors.NotSupportedError) as e:
    binary_flags.usage_error("server", str(e))
  task = cluster_lib.task_label(info.task_type, info.task_id)
  line, warning = listen.describe(info.task_address, environ=os.environ,
                                  bind_address=bind_address)
  logging.info("server | %s | listening on %s | %d CPU devices", task, line,
               flag.num_cpu_devices.value)
  if warning:  # Once per server: not again at each restart in place.
    log = logging.debug if serve.restart_count(os.environ) else logging.warning
    log("server | %s | %s", task, warning)
  serve.serve_until_stopped(server, info.task_type, info.task_id, received)


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


def catch_stop_signals():
  """The list SIGTERM/SIGINT go to from now on: call it before logging
  `listening on`, so a stop signal sent as soon as that line appears still
  ends the server with 0."""
  received = []

  def on_signal(signum, unused_frame):
    received.append(signum)

  signal.signal(signal.SIGTERM, on_signal)
  signal.signal(signal.SIGINT, on_signal)
  return received


def _help_text(flag):
  names = [holder.name for holder in vars(flag).values()]
  return f"{_HELP}\nflags:\n" + binary_flags.flag_help(flags.FLAGS, names)


def run():
  """Console-script entry point (`harness-server`), as `python -m`."""
  # First: a stop signal while it starts still ends it (with 0, once it
  # listens), also as PID 1 of a pod, where an unhandled SIGTERM is ignored.
  received = catch_stop_signals()
  flag = _define_flags()
  app.run(functools.partial(_main, flag, received),
          flags_parser=binary_flags.flags_parser("server",
                                        help_text=lambda: _help_text(flag)))
