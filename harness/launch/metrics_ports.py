"""A live metrics port per task for `harness.launch`.

The command after `--` may carry harness.main's `--metrics_port=N` (or
`--metrics_port N`); run as is, every task would take port N and all but the
first would fail. The launcher gives each task that serves metrics (chief,
workers, evaluator; a ps serves none and gets 0) its own port: N, N+1, ...
in task order, or free ports for `--metrics_port=auto`::

    plan = metrics_ports.plan(command, ["chief/0", "ps/0"], avoid=tf_ports)
    plan.command_for("chief/0")  # [..., "--metrics_port=9464"]
    plan.listeners               # [(socket on 127.0.0.1:9464, 9464)]
    plan.close()                 # after netns took its copies

The ports are bound on 127.0.0.1 while planned. In a private network
namespace (`launch/netns.py`) its holder keeps those sockets and forwards
each connection to the task's port inside (`launch/relay.py`), so that the
logged URL works from this machine; without one, `close()` frees them just
before the tasks start and each task binds its own. No TensorFlow.
"""

import dataclasses
import socket

from harness import errors
from harness.cluster import jobs

__all__ = ["FLAG", "AUTO", "MetricsPlan", "plan"]

FLAG = "--metrics_port"
AUTO = "auto"
# The jobs whose tasks serve metrics: the trainers and the evaluator.
_SERVING_JOBS = jobs.TRAINER_JOBS + (jobs.EVALUATOR,)
_HOST = "127.0.0.1"


@dataclasses.dataclass
class MetricsPlan:
  """Each task's command and metrics port; the sockets holding the ports."""
  command: list
  ports: dict  # {task name: port}, tasks that serve metrics only.
  listeners: list  # [(listening socket, port)], until close().

  def command_for(self, name):
    """The command of task `name`, its --metrics_port set (0 for a ps)."""
    if not self.ports and not self.listeners:
      return list(self.command)
    port = self.ports.get(name, 0)
    out, skip = [], False
    for i, arg in enumerate(self.command):
      if skip:
        skip = False
      elif arg == FLAG and i + 1 < len(self.command):
        out.append(f"{FLAG}={port}")
        skip = True
      elif arg.startswith(FLAG + "="):
        out.append(f"{FLAG}={port}")
      else:
        out.append(arg)
    return out

  def urls(self):
    """{task: "http://127.0.0.1:P/metrics"} of the tasks that serve."""
    return {name: f"http://{_HOST}:{port}/metrics"
            for name, port in self.ports.items()}

  def log(self, line):
    """Writes one `launch | metrics | <task> | <url>` line a task."""
    for name, url in self.urls().items():
      line(f"launch | metrics | {name} | {url}")

  def close(self):
    """Closes this process's sockets of the ports."""
    for sock, _ in self.listeners:
      sock.close()
    self.listeners = []


def _value(command):
  """The command's --metrics_port value (the last, as absl), or None."""
  value = None
  for i, arg in enumerate(command):
    if arg == FLAG and i + 1 < len(command):
      value = command[i + 1]
    elif arg.startswith(FLAG + "="):
      value = arg[len(FLAG) + 1:]
  return value


def _listen(port, name, flag_text):
  """A socket listening on `port` of 127.0.0.1 for task `name`.

  Raises:
    ConfigError: the port cannot be bound; the message quotes the command's
      `--metrics_port` value, `flag_text`, that gave it.
  """
  sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  try:
    sock.bind((_HOST, port))
    sock.listen(16)
  except OSError as e:
    sock.close()
    raise errors.ConfigError(
        f"{FLAG}={flag_text} in the command: task {name} gets port {port} (one "
        f"port a task, in order), which cannot be bound on {_HOST}: {e}. "
        f"Fix: pick another {FLAG}, or {FLAG}={AUTO} for free ports.") from e
  return sock


def _pick(port, name, flag_text, taken):
  """A socket listening on `port` (0: a free one) that is not in `taken`;
  `flag_text` is the command's `--metrics_port` value, for the errors."""
  for _ in range(100):  # A free port that is a TF port of the cluster: again.
    sock = _listen(port, name, flag_text)
    if sock.getsockname()[1] not in taken:
      return sock
    sock.close()
    if port:
      break
  raise errors.ConfigError(
      f"{FLAG}={flag_text} in the command: task {name} gets port {port}, a "
      f"TensorFlow port of the cluster. Fix: pick another {FLAG}, or "
      f"{FLAG}={AUTO}.")


def plan(command, names, *, avoid=()):
  """Plans a metrics port per task from `command`'s --metrics_port.

  Args:
    command: the tasks' command (a list).
    names: the task names, in order ("chief/0", "worker/0", "ps/0", ...).
    avoid: ports not to use (the cluster's TensorFlow ports).

  Returns:
    A `MetricsPlan` (no ports when the command sets none, or 0).

  Raises:
    ConfigError: the value is neither an int in 0..65535 nor "auto", or a
      port cannot be bound.
  """
  value = _value(command)
  serving = [n for n in names
             if jobs.split_task_label(n)[0] in _SERVING_JOBS]
  if value is None or value.strip() == "0":
    return MetricsPlan(command=list(command), ports={}, listeners=[])
  auto = value.strip() == AUTO
  if not auto and not (value.strip().isdigit() and 0 < int(value) <= 65535 -
                       len(serving) + 1):
    raise errors.ConfigError(
        f"{FLAG}={value} in the command: harness.launch gives each task its "
        f"own port from this one on ({len(serving)} ports), so it must be an "
        f"int in 1..{65536 - len(serving)}, or {AUTO} (free ports, logged). "
        f"Fix: e.g. {FLAG}=9464.")
  listeners, taken = [], set(avoid)
  try:
    for offset, name in enumerate(serving):
      sock = _pick(0 if auto else int(value) + offset, name, value, taken)
      taken.add(sock.getsockname()[1])
      listeners.append((sock, sock.getsockname()[1]))
  except BaseException:
    for sock, _ in listeners:
      sock.close()
    raise
  return MetricsPlan(
      command=list(command),
      ports={name: port for name, (_, port) in zip(serving, listeners)},
      listeners=listeners)
