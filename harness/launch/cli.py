"""`python -m harness.launch`: a whole training cluster on this machine.

    python -m harness.launch --workers=2 --ps=1 --evaluator -- \\
        python -m harness.main --model_dir=/tmp/m ...

Every task runs the command after `--` with its own `TF_CONFIG` (the cluster
on free ports of `--host`, and its task), `HARNESS_TASK=<job>/<index>` and
`PYTHONUNBUFFERED=1`, `TF_CPP_MIN_LOG_LEVEL=3` unless set; the rest of the
environment is inherited. Each task leads its own process group. Output
lines start with the task, `[worker/1] ...`; the launcher's, `launch | `.

`--metrics_port=N` (or `auto`) in the command: a port a task, its URL logged
and reachable from this machine, namespace or not (`launch/metrics_ports.py`).

Network: TensorFlow servers listen on every interface (`cluster.listen`), so by
default (`--network_isolation=auto`) the tasks run inside one private network
namespace (`launch/netns.py`: Linux, root or user namespaces) where only they
can reach their ports; the launcher logs `launch | network | ...` saying which.
Where that is impossible (or with `--network_isolation=none`, needed by jobs
that use the network, e.g. a gs:// model_dir) it prints one warning line
naming the open ports and a firewall rule for them.

The run ends with 0 once every chief/worker/evaluator task has exited 0 (ps
tasks, which never exit by themselves, are then stopped); with the exit status
of the first task that failed (a signal N counts as 128+N) once its restarts
are used up; with 124 after `--timeout_secs`; with 128+N on signal N. Then
SIGTERM goes to the trainers, after them to ps and evaluator (SIGKILL after
`--grace_secs` each), so the chief saves first. The same from Python::

    code = harness.launch.launch(["python", "train.py"], workers=2, ps=1)

The task supervisor (process groups, restarts, stopping, output) is
`launch/supervisor.py`; this module builds the cluster and is the binary
(its flags and `--help` text: `launch/cli_flags.py`).
"""

import contextlib
import functools
import json
import os
import shlex
import shutil
import signal
import sys
import threading

from absl import app

from harness import cluster as cluster_lib
from harness import errors
from harness import tf_env
from harness.cli import binary_flags
from harness.cli import tensorboard_server
from harness.cluster import listen
from harness.launch import cli_flags
from harness.launch import metrics_ports
from harness.launch import netns
from harness.launch import ports
from harness.launch import supervisor

__all__ = ["launch", "build_tf_configs", "task_names"]


def _check_count(name, value, minimum=0):
  if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
    raise errors.ConfigError(
        f"`{name}` must be an integer >= {minimum}, got {value!r}.")


def task_names(*, workers, chief=False, ps=0, evaluator=False):
  """Lists the tasks of a cluster, chief first, then workers, ps, evaluator.

  Args:
    workers: number of "worker" tasks.
    chief: whether there is a "chief" task.
    ps: number of "ps" tasks.
    evaluator: whether there is an "evaluator" task.

  Returns:
    Task names such as ["chief/0", "worker/0", "ps/0", "evaluator/0"].

  Raises:
    ConfigError: if a count is negative, or there is neither chief nor worker.
  """
  _check_count("workers", workers)
  _check_count("ps", ps)
  if not chief and workers == 0:
    raise errors.ConfigError(
        "A cluster needs a chief or at least one worker, got workers=0 and "
        "chief=False. Use --workers=1 or more, or --chief.")
  names = ["chief/0"] if chief else []
  names += [f"worker/{i}" for i in range(workers)]
  names += [f"ps/{i}" for i in range(ps)]
  if evaluator:
    names.append("evaluator/0")
  return names


def build_tf_configs(*, workers, chief=False, ps=0, evaluator=False,
                     host="127.0.0.1", ports_by_task=None):
  """Returns the `TF_CONFIG` of every task of a cluster on `host`.

  Args:
    workers, chief, ps, evaluator: the tasks, as in `task_names`.
    host: the address every task listens on.
    ports_by_task: optional {task name: port}; tasks not in it get a port
      picked by binding port 0 on `host`. The evaluator has no port: it is not
      part of the cluster.

  Returns:
    {task name: TF_CONFIG dict}, e.g. "worker/1" -> {"cluster": {"worker":
    [...]}, "task": {"type": "worker", "index": 1}}, in `task_names` order.

  Raises:
    ConfigError: if the tasks are invalid or no port can be bound on `host`.
  """
  names = task_names(workers=workers, chief=chief, ps=ps, evaluator=evaluator)
  members = [n for n in names if not n.startswith("evaluator/")]
  given = dict(ports_by_task or {})
  unknown = sorted(set(given) - set(members))
  if unknown:
    raise errors.ConfigError(
        f"`ports_by_task` names tasks {unknown} that have no address in the "
        f"cluster {members}.")
  missing = [n for n in members if n not in given]
  for name, port in zip(missing, ports.pick_free_ports(len(missing), host)):
    given[name] = port
  cluster = {}
  for name in members:
    job = name.split("/")[0]
    cluster.setdefault(job, []).append(ports.address(host, given[name]))
  configs = {}
  for name in names:
    job, index = name.split("/")
    configs[name] = {
        "cluster": {job_: list(addrs) for job_, addrs in cluster.items()},
        "task": {"type": job, "index": int(index)},
    }
  return configs


def _task_env(base, name, tf_config, isolated=False):
  env = dict(os.environ if base is None else base)
  env["TF_CONFIG"] = json.dumps(tf_config)
  env["HARNESS_TASK"] = name
  env["PYTHONUNBUFFERED"] = "1"
  tf_env.quiet_cpp_logs(env)  # As in harness's own processes.
  env.pop(listen.ISOLATION_ENV, None)
  if isolated:
    env[listen.ISOLATION_ENV] = listen.NETNS
  return env


def _check_program(command, env, task):
  """Raises ConfigError unless `command[0]` can be executed."""
  program = command[0]
  if os.sep in program:
    found = os.path.isfile(program) and os.access(program, os.X_OK)  # local-fs: an executable
  else:
    found = shutil.which(program, path=env.get("PATH", os.defpath))  # local-fs: an executable
  if not found:
    raise errors.ConfigError(
        f"Cannot start task {task} with command {command}: {program!r} is "
        "not an executable file. Give a program on PATH (or its path) after "
        "`--`.")


def _open_ports(configs):
  found = []
  for config in configs.values():
    for addresses in config["cluster"].values():
      for address in addresses:
        port = listen.port_of(address)
        if port not in found:
          found.append(port)
  return found


def _checked_arguments(command, *, max_restarts, timeout_secs, grace_secs,
                       network_isolation):
  """Checks `launch`'s arguments; returns `command` as a list."""
  if isinstance(command, str):
    command = shlex.split(command)
  command = list(command)
  if not command:
    raise errors.ConfigError(
        "`command` is empty: give the program to run for every task, e.g. "
        "`python -m harness.launch --workers=2 -- python train.py`.")
  _check_count("max_restarts", max_restarts)
  for name, value in (("timeout_secs", timeout_secs),
                      ("grace_secs", grace_secs)):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
        value < 0):
      raise errors.ConfigError(
          f"`{name}` must be a number of seconds >= 0, got {value!r}.")
  if network_isolation not in netns.MODES:
    raise errors.ConfigError(
        f"`network_isolation` must be one of {netns.MODES}, got "
        f"{network_isolation!r}.")
  return command


def launch(command, *, workers, chief=False, ps=0, evaluator=False,
           max_restarts=0, host="127.0.0.1", timeout_secs=0, env=None,
           output=None, grace_secs=10.0, stop_event=None,
           network_isolation="auto"):
  """Runs `command` once per task of a local cluster; returns the exit status.

  Args:
    command: the program and its arguments (a list, or a string split by
      shell rules), run once per task.
    workers, chief, ps, evaluator: the tasks, as in `task_names`.
    max_restarts: how many times in total each task is restarted (same
      TF_CONFIG, same port) after exiting non-zero or by a signal.
    host: the address every task listens on.
    timeout_secs: if > 0, stop the whole run after it, returning 124.
    env: the base environment of the tasks (default: this process's).
    output: text stream for the prefixed output (default: sys.stdout).
    grace_secs: seconds between SIGTERM and SIGKILL when stopping tasks.
    stop_event: optional `threading.Event`; once set, every task is stopped
      and 130 is returned, as after Ctrl-C.
    network_isolation: "auto" (a private network namespace when the platform
      allows and `host` is loopback, else a warning), "netns" (required) or
      "none" (a warning that the ports are open).

  Returns:
    0 if every non-ps task exited 0; else the exit status of the first task
    that failed (128 + N for signal N), 124 on timeout, 130 when stopped.

  Raises:
    ConfigError: if an argument is invalid (before any process starts), or
      the command cannot be started (the tasks already started are stopped).
  """
  command = _checked_arguments(command, max_restarts=max_restarts,
                               timeout_secs=timeout_secs,
                               grace_secs=grace_secs,
                               network_isolation=network_isolation)
  configs = build_tf_configs(workers=workers, chief=chief, ps=ps,
                             evaluator=evaluator, host=host)
  for name, config in configs.items():  # E.g. a --host that is no host.
    cluster_lib.check_servable(cluster_lib.parse_tf_config(
        config, source=f"the TF_CONFIG launch made for {name}"))
  base_env = dict(os.environ if env is None else env)
  _check_program(command, base_env, next(iter(configs)))
  out = supervisor.Output(sys.stdout if output is None else output)
  metrics = metrics_ports.plan(command, list(configs),
                               avoid=_open_ports(configs))
  try:  # In a namespace, its holder forwards the metrics ports inside.
    space = netns.isolate_for_launch(
        network_isolation, host=host, open_ports=_open_ports(configs),
        log=out.line, forward=metrics.listeners)
  finally:
    metrics.close()
  metrics.log(out.line)
  tasks = [
      supervisor.Task(
          name, (space.wrap if space else list)(metrics.command_for(name)),
          _task_env(base_env, name, config, isolated=bool(space)), out)
      for name, config in configs.items()]
  try:
    return supervisor.supervise(
        tasks, out, max_restarts=max_restarts, timeout_secs=timeout_secs,
        stop_event=stop_event, grace_secs=grace_secs)
  finally:  # Also on KeyboardInterrupt or any error of the launcher itself.
    supervisor.stop_all(tasks, grace_secs)
    if space:
      space.close()


# ---------------------------------------------------------------- binary --


def _tensorboard(flag, command):
  """One TensorBoard for the cluster (`--tensorboard`), or a null context."""
  if flag.tensorboard.value is None:
    if flag.tensorboard_keep.value:
      binary_flags.usage_error(
          "launch", "--tensorboard_keep keeps the server that --tensorboard "
          "starts: add --tensorboard.", cli_flags.USAGE)
    return contextlib.nullcontext()
  model_dir = tensorboard_server.model_dir_in_command(command)
  if not model_dir:
    binary_flags.usage_error(
        "launch", f"--tensorboard={flag.tensorboard.value}: the command "
        "after `--` passes no --model_dir to serve. Fix: add "
        "--model_dir=<shared path> to the command.", cli_flags.USAGE)
  return tensorboard_server.serving(
      model_dir, port=flag.tensorboard.value,
      keep=flag.tensorboard_keep.value, label="launch | tensorboard")


def _main(flag, argv):
  command = argv[1:]
  if not command:
    binary_flags.usage_error(
        "launch", "no command: put the command every task runs after `--`.",
        cli_flags.USAGE)
  stop_event = threading.Event()
  received = []

  def on_signal(signum, unused_frame):  # Only flags: the loop does the work.
    received.append(signum)
    stop_event.set()

  signal.signal(signal.SIGTERM, on_signal)
  signal.signal(signal.SIGINT, on_signal)
  try:
    with _tensorboard(flag, command):
      status = launch(
          command, workers=flag.workers.value, chief=flag.chief.value,
          ps=flag.ps.value, evaluator=flag.evaluator.value,
          max_restarts=flag.max_restarts.value, host=flag.host.value,
          timeout_secs=flag.timeout_secs.value,
          grace_secs=flag.grace_secs.value, stop_event=stop_event,
          network_isolation=flag.network_isolation.value)
  except errors.ConfigError as e:
    binary_flags.usage_error("launch", str(e), cli_flags.USAGE)
  if received and status == 130:
    status = 128 + received[0]
  sys.exit(status)


def run():
  """Console-script entry point (`harness-launch`), as `python -m`."""
  flag = cli_flags.define()
  parse = binary_flags.flags_parser("launch", cli_flags.USAGE,
                                    lambda: cli_flags.help_text(flag))
  app.run(functools.partial(_main, flag),
          flags_parser=lambda argv: parse(
              tensorboard_server.expand_bare_flag(argv)))

