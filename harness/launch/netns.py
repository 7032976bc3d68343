"""A private network namespace for the tasks of `harness.launch`.

TensorFlow 2.21 servers listen on every interface (see `harness.cluster.listen`).
`harness.launch` therefore runs its tasks inside one private network
namespace holding only a loopback interface: the tasks reach each other on
127.0.0.1, and nothing outside the namespace (another machine, or another
process of this one) can reach their ports::

    space = netns.start()               # raises NetnsUnavailable with why
    command = space.wrap(["python", "-m", "harness.main", ...])
    ...                                 # run tasks with `command`
    space.close()

The namespace is held by a small process, `unshare --net [--user
--map-root-user] python -c "from harness.launch import netns; netns.hold()"`
(not `-m`: the package door has loaded this module already), which brings `lo`
up, prints "ready" and waits for its stdin to close (the launcher closing it,
or the launcher dying). Tasks join it with `nsenter`, which execs the task's
program in place (the task's pid is the program's pid). As root only a network
namespace is created; otherwise a user namespace too (Linux user namespaces
must be enabled). Files keep their owners; processes and the filesystem are
shared with the host: only the network is private, so tasks cannot reach
anything off this machine (no gs:// model_dir, no downloads).

This module imports nothing from TensorFlow.
"""

import fcntl
import os
import select
import shutil
import socket
import struct
import subprocess
import sys

from harness import errors
from harness.launch import relay

__all__ = ["NetnsUnavailable", "PrivateNetwork", "start", "unavailable_reason",
           "isolate_for_launch", "hold", "MODES"]

MODES = ("auto", "netns", "none")  # harness.launch --network_isolation.
_LOOPBACK_HOSTS = ("localhost", "::1", "[::1]")

_READY = "ready"
_HOLDER = "from harness.launch import netns; netns.hold({!r})"
_START_SECS = 30.0
_STOP_SECS = 5.0
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


class NetnsUnavailable(Exception):
  """This platform cannot give harness.launch a private network namespace."""


def unavailable_reason():
  """Why a private network namespace cannot be made here, or None to try."""
  if not sys.platform.startswith("linux"):
    return f"network namespaces are Linux-only (platform {sys.platform})"
  for tool in ("unshare", "nsenter"):
    if shutil.which(tool) is None:  # local-fs: an executable
      return f"`{tool}` (util-linux) is not installed"
  return None


class PrivateNetwork:
  """A running namespace holder; `wrap` puts commands inside it."""

  def __init__(self, proc, *, user_namespace):
    self._proc = proc
    self.pid = proc.pid
    self.user_namespace = user_namespace

  @property
  def path(self):
    """The namespace's file, e.g. "/proc/123/ns/net" (`nsenter --net=`)."""
    return f"/proc/{self.pid}/ns/net"

  def wrap(self, command):
    """`command` (a list) prefixed so that it runs inside the namespace."""
    prefix = ["nsenter"]
    if self.user_namespace:
      prefix += [f"--user=/proc/{self.pid}/ns/user", "--preserve-credentials"]
    return prefix + [f"--net={self.path}", "--"] + list(command)

  def close(self):
    """Stops the holder (tasks still inside keep the namespace alive)."""
    if self._proc.poll() is not None:
      return
    try:
      self._proc.stdin.close()
      self._proc.wait(timeout=_STOP_SECS)
    except (OSError, subprocess.TimeoutExpired):
      self._proc.kill()
      self._proc.wait(timeout=_STOP_SECS)


def start(timeout_secs=_START_SECS, forward=()):
  """Creates the namespace; returns a `PrivateNetwork`.

  `forward`: [(socket listening on this machine, port)]: the holder accepts
  on each and connects to that port inside (`launch/relay.py`).

  Raises:
    NetnsUnavailable: with the reason (no Linux, no tools, no permission).
  """
  reason = unavailable_reason()
  if reason:
    raise NetnsUnavailable(reason)
  user_namespace = os.geteuid() != 0
  command = ["unshare", "--net"]
  if user_namespace:
    command += ["--user", "--map-root-user"]
  command += ["--", sys.executable, "-c",
              _HOLDER.format([(s.fileno(), p) for s, p in forward])]
  env = dict(os.environ)
  here = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))  # local-fs: the folder holding `harness`
  env["PYTHONPATH"] = os.pathsep.join(
      p for p in (here, env.get("PYTHONPATH")) if p)
  proc = subprocess.Popen(command, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, start_new_session=True,
                          pass_fds=[s.fileno() for s, _ in forward])
  ready, _, _ = select.select([proc.stdout], [], [], timeout_secs)
  line = proc.stdout.readline().decode("utf-8", "replace").strip() if (
      ready) else ""
  if line != _READY:
    if proc.poll() is None:
      proc.kill()
    try:
      _, err = proc.communicate(timeout=_STOP_SECS)
    except subprocess.TimeoutExpired:
      err = b""
    detail = err.decode("utf-8", "replace").strip().splitlines()
    raise NetnsUnavailable(
        f"`{' '.join(command[:-3])}` failed"
        + (f": {detail[-1]}" if detail
           else f" (no answer in {timeout_secs:g} s)")
        + ("; unprivileged user namespaces may be disabled "
           "(kernel.unprivileged_userns_clone / user.max_user_namespaces)"
           if user_namespace else ""))
  return PrivateNetwork(proc, user_namespace=user_namespace)


def isolate_for_launch(mode, *, host, open_ports, log, forward=()):
  """harness.launch's network: a private namespace, or a warning line.

  Args:
    mode: one of `MODES`: "auto" (isolate when possible, else warn),
      "netns" (isolate or raise), "none" (warn).
    host: the address of the cluster's tasks; only loopback can be isolated.
    open_ports: the TF ports of the cluster.
    log: callable(line) writing one launcher line.
    forward: listening sockets and ports to forward inside (`start`).

  Returns:
    A started `PrivateNetwork`, or None.

  Raises:
    ConfigError: mode "netns" and no namespace can be made.
  """
  ports_text = ",".join(str(p) for p in open_ports)
  if mode == "none":
    reason = "--network_isolation=none"
  elif not (host.startswith("127.") or host in _LOOPBACK_HOSTS):
    reason = (f"--host={host} is not a loopback address, and a private "
              "namespace has only loopback")
  else:
    try:
      space = start(forward=forward)
    except NetnsUnavailable as e:
      reason = str(e)
    else:
      log(f"launch | network | tasks run in a private network namespace "
          f"({space.path}); only they reach ports {ports_text}")
      return space
  if mode == "netns":
    raise errors.ConfigError(
        f"--network_isolation=netns: cannot create a private network "
        f"namespace: {reason}. Fix: run as root or enable user namespaces, "
        "use a loopback --host, or use --network_isolation=auto (falls back "
        "to a warning).")
  log(f"launch | WARNING | TensorFlow servers listen on all interfaces: "
      f"ports {ports_text} are open to the network while the job runs (no "
      f"private network namespace: {reason}). Firewall them, e.g. `iptables "
      f"-I INPUT -p tcp -m multiport --dports {ports_text} ! -i lo -j DROP`.")
  return None


def _bring_loopback_up():
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
    request = struct.pack("16sh", b"lo", 0)
    flags = struct.unpack("16sh", fcntl.ioctl(sock, _SIOCGIFFLAGS,
                                              request))[1]
    fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sh", b"lo",
                                                 flags | _IFF_UP))


def hold(forward=()):
  """The holder process of `start`: lo up, forwarding, "ready", then wait for
  EOF."""
  _bring_loopback_up()
  relay.forward(forward)
  sys.stdout.write(_READY + "\n")
  sys.stdout.flush()
  while sys.stdin.buffer.read(4096):
    pass
