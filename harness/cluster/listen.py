"""Where a TensorFlow server of harness really listens, and saying so.

TensorFlow 2.21's gRPC server (`GrpcServer::Init`) listens on
`0.0.0.0:<port>`, the port of the task's cluster address (or
`ServerDef.port`): the host part of the address is never used for binding,
and no ServerDef, ConfigProto or environment option names a listen host.
`ss -ltnp` shows such a server as `*:<port>`, i.e. every interface. An
unauthenticated TF server runs any graph it is sent (file reads and writes
included), so harness says this truthfully in its log::

    line, warning = listen.describe("127.0.0.1:2222", environ=os.environ)
    logging.info("server | worker/0 | listening on %s", line)
    if warning:
      logging.warning("server | worker/0 | %s", warning)

A server inside a private network namespace (`harness.launch` puts its
tasks in one; it sets `ISOLATION_ENV` for them) is reachable only from that
namespace; elsewhere the warning tells how to firewall the port.
`bind_address` (`--bind_address`, `RunConfig(bind_address=)`) can only be
"*" (all interfaces, the exposure acknowledged, no warning): a single host
is refused with `NotSupportedError`, since TensorFlow cannot bind one.

This module imports nothing from TensorFlow.
"""

import ipaddress
import re

from harness import errors

__all__ = [
    "ISOLATION_ENV", "NETNS", "ALL_INTERFACES", "check_bind_address",
    "describe", "host_problem", "port_of",
]

# Set by harness.launch in each task's environment when the task runs in
# launch's private network namespace.
ISOLATION_ENV = "HARNESS_NETWORK_ISOLATION"
NETNS = "netns"
ALL_INTERFACES = "*"
_ALL_SPELLINGS = ("*", "0.0.0.0", "::", "[::]")


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")


def host_problem(host):
  """Why `host` is neither an IP address nor a host name, or None.

  A syntax check only (no lookup): e.g. "not..a..host" has an empty label,
  which Python's socket module rejects with a UnicodeError.
  """
  if not isinstance(host, str) or not host.strip():
    return "is empty"
  try:
    ipaddress.ip_address(host[1:-1] if host.startswith("[") else host)
    return None
  except ValueError:
    pass
  name = host[:-1] if host.endswith(".") else host
  if len(name) > 253 or not all(_HOST_LABEL.match(label)
                                for label in name.split(".")):
    return ("is neither an IP address nor a host name (labels of 1-63 "
            "letters, digits or '-' between dots)")
  return None


def port_of(address):
  """The port of "host:port" ("[v6]:port" too) as an int."""
  _, _, port = str(address).rpartition(":")
  try:
    return int(port)
  except ValueError as e:
    raise errors.ClusterConfigError(
        f"Cluster address {address!r} has no port: use host:port, e.g. "
        "127.0.0.1:2222.") from e


def check_bind_address(bind_address, *, source="bind_address"):
  """Returns the normalized bind address: None (default) or "*".

  Args:
    bind_address: None or "" (the default: the host of the task's cluster
      address, which TensorFlow 2.21 cannot honour, so a warning is logged),
      or "*" / "0.0.0.0" / "::" (all interfaces, acknowledged).
    source: where the value came from, for the error message.

  Raises:
    NotSupportedError: any other address.
  """
  if bind_address is None or bind_address == "":
    return None
  if bind_address in _ALL_SPELLINGS:
    return ALL_INTERFACES
  raise errors.NotSupportedError(
      f"{source}={bind_address!r}: TensorFlow 2.21's gRPC server cannot "
      "listen on one address (GrpcServer::Init binds 0.0.0.0:<port>; no "
      "ServerDef, ConfigProto or environment option names a host). Fix: "
      f"leave {source} out (harness warns that the port is open on every "
      f"interface) or pass {source}='*' to acknowledge it, and restrict "
      "access with a private network namespace (harness.launch "
      "--network_isolation=netns), a firewall rule, or the NetworkPolicy of "
      "harness.k8s.")


def describe(address, *, environ, bind_address=None):
  """The truthful listen line of a server for `address`, and a warning.

  Args:
    address: the task's cluster address, "host:port".
    environ: mapping read for `ISOLATION_ENV`.
    bind_address: None or "*" (from `check_bind_address`).

  Returns:
    (line, warning): e.g. ("*:2222 (all interfaces; cluster address
    127.0.0.1:2222)", "*:2222 is open to anyone ...") ; warning is None inside a
    private network namespace or when `bind_address` is "*".
  """
  port = port_of(address)
  if environ.get(ISOLATION_ENV) == NETNS:
    return (f"*:{port} inside harness.launch's private network namespace "
            "(unreachable from outside it)", None)
  line = f"*:{port} (all interfaces; cluster address {address})"
  if check_bind_address(bind_address) == ALL_INTERFACES:
    return line, None
  # One short line; docs/SECURITY.md has the why and the firewall rules.
  warning = (f"*:{port} is open to anyone who reaches it (they can run code "
             "as this user): firewall it, see docs/SECURITY.md")
  return line, warning
