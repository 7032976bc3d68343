"""Free TCP ports on this machine, picked by binding port 0.

Used by `python -m harness.launch` and by tests that start servers::

    worker_port, ps_port = ports.pick_free_ports(2)

The ports are free when returned, not reserved: another process may take one
before the caller binds it. All ports of one call are held open together
while they are picked, so they are distinct from each other.

This module imports nothing from TensorFlow.
"""

import contextlib
import socket

from harness import errors

__all__ = ["pick_free_port", "pick_free_ports", "address"]


def pick_free_ports(count, host="127.0.0.1"):
  """Returns `count` distinct TCP ports that are free on `host` right now.

  Args:
    count: how many ports, >= 0.
    host: the interface to bind, e.g. "127.0.0.1" or "::1".

  Returns:
    A list of `count` distinct port numbers.

  Raises:
    ConfigError: if `count` is negative or `host` cannot be bound.
  """
  if not isinstance(count, int) or count < 0:
    raise errors.ConfigError(
        f"`count` must be an integer >= 0 ports to pick, got {count!r}.")
  family = socket.AF_INET6 if ":" in host else socket.AF_INET
  with contextlib.ExitStack() as stack:
    ports = []
    for _ in range(count):
      sock = stack.enter_context(socket.socket(family, socket.SOCK_STREAM))
      try:
        sock.bind((host, 0))
      except OSError as e:
        raise errors.ConfigError(
            f"Cannot bind a free port on host {host!r}: {e}. Use an address "
            "of this machine, e.g. --host=127.0.0.1.") from e
      ports.append(sock.getsockname()[1])
  return ports


def pick_free_port(host="127.0.0.1"):
  """Returns one TCP port that is free on `host` right now."""
  return pick_free_ports(1, host)[0]


def address(host, port):
  """Returns "host:port", with IPv6 hosts in brackets ("[::1]:2222")."""
  if ":" in host and not host.startswith("["):
    host = f"[{host}]"
  return f"{host}:{port}"
