"""Where servers really listen, and who can reach them.

TensorFlow 2.21 binds every interface. `python -m harness.server` must say
so (`listening on *:PORT`) and warn; a cluster run by `python -m
harness.launch` must be unreachable from outside its private network
namespace: connections through this machine's non-loopback address (and
through 127.0.0.1 of the host namespace) are refused while the server
answers inside the namespace. Traffic goes only to this machine's own
addresses and to the test's namespace.
"""

import io
import re
import shutil
import socket
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness import errors
from harness import launch
from harness.cluster import listen
from harness.launch import netns
from harness.launch import ports
from tests import _support
from tests import conftest

_START_SECS = 180  # TF start-up on a loaded 2-core machine.
_CONNECT_SECS = 5
_LISTENING = re.compile(r"listening on \*:(\d+)(.*)$")


def _non_loopback_ipv4():
  """An IPv4 address of this machine other than loopback, or None."""
  if shutil.which("ip") is None:
    return None
  out = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"],
                       capture_output=True, text=True, timeout=10,
                       check=False).stdout
  found = re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", out)
  return found[0] if found else None


def _connect(host, port):
  """None if a TCP connection to host:port opens, else the OSError."""
  try:
    with socket.create_connection((host, port), timeout=_CONNECT_SECS):
      return None
  except OSError as e:
    return e


class DescribeTest(parameterized.TestCase):

  def test_default_says_all_interfaces_and_warns(self):
    line, warning = listen.describe("127.0.0.1:2222", environ={})
    self.assertEqual(line, "*:2222 (all interfaces; cluster address "
                     "127.0.0.1:2222)")
    self.assertEqual(warning, "*:2222 is open to anyone who reaches it (they "
                     "can run code as this user): firewall it, see "
                     "docs/SECURITY.md")

  def test_acknowledged_all_interfaces_does_not_warn(self):
    line, warning = listen.describe("[::1]:2222", environ={},
                                    bind_address="*")
    self.assertTrue(line.startswith("*:2222 (all interfaces"))
    self.assertIsNone(warning)

  def test_inside_launch_namespace(self):
    line, warning = listen.describe(
        "127.0.0.1:7", environ={listen.ISOLATION_ENV: listen.NETNS})
    self.assertEqual(line, "*:7 inside harness.launch's private network "
                     "namespace (unreachable from outside it)")
    self.assertIsNone(warning)

  @parameterized.parameters(None, "", "*", "0.0.0.0", "::")
  def test_accepted_bind_addresses(self, value):
    self.assertIn(listen.check_bind_address(value), (None, "*"))

  def test_one_host_is_refused_with_the_reason(self):
    with self.assertRaisesRegex(
        errors.NotSupportedError,
        r"--bind_address='10\.0\.0\.5': TensorFlow 2\.21's gRPC server "
        r"cannot listen on one address \(GrpcServer::Init binds "
        r"0\.0\.0\.0:<port>"):
      listen.check_bind_address("10.0.0.5", source="--bind_address")


class LaunchNetworkTest(absltest.TestCase):
  """harness.launch's choice of network, through its Python entry point."""

  def _launch(self, **kwargs):
    out = io.StringIO()
    code = launch.launch([sys.executable, "-c", "pass"], workers=1,
                         output=out, timeout_secs=120, **kwargs)
    return code, out.getvalue()

  def test_none_warns_with_the_open_ports_and_a_firewall_rule(self):
    code, out = self._launch(network_isolation="none")
    self.assertEqual(code, 0, out)
    match = re.search(r"launch \| WARNING \| TensorFlow servers listen on all "
                      r"interfaces: ports (\d+) are open to the network .*"
                      r"--network_isolation=none\). Firewall them, e\.g\. "
                      r"`iptables -I INPUT -p tcp -m multiport --dports (\d+) "
                      r"! -i lo -j DROP`", out)
    self.assertIsNotNone(match, out)
    self.assertEqual(match.group(1), match.group(2))
    self.assertNotIn("launch | network |", out)

  def test_auto_isolates_where_possible_else_warns(self):
    code, out = self._launch()
    self.assertEqual(code, 0, out)
    if netns.unavailable_reason() is None:
      self.assertIn("launch | network | tasks run in a private network "
                    "namespace", out)
    else:
      self.assertIn("launch | WARNING | TensorFlow servers listen on all "
                    "interfaces", out)

  def test_netns_required_for_a_non_loopback_host_is_an_error(self):
    address = _non_loopback_ipv4()
    if not address:
      self.skipTest("this machine has no non-loopback IPv4 address: run it "
                    "where a network interface has one")
    with self.assertRaisesRegex(
        errors.ConfigError, rf"--network_isolation=netns: cannot create a "
        rf"private network namespace: --host={re.escape(address)} is not a "
        "loopback address"):
      self._launch(network_isolation="netns", host=address)


@pytest.mark.slow
class ReachabilityTest(absltest.TestCase):

  def _start(self, args, env):
    """`python ARGS`: (its Popen, the ChildProcess collecting its output)."""
    child = _support.ChildProcess(args, args[1], env=env)
    self.addCleanup(child.terminate_group)
    return child.proc, child

  def test_standalone_server_says_all_interfaces_and_warns(self):
    port = ports.pick_free_port()
    env = conftest.child_env({"cluster": {"worker": [f"127.0.0.1:{port}"]},
                              "task": {"type": "worker", "index": 0}})
    proc, out = self._start(["-m", "harness.server"], env)
    match = out.wait_for_match(_LISTENING, _START_SECS)
    self.assertIsNotNone(match, f"no listen line\n{out.describe()}")
    self.assertEqual(int(match.group(1)), port)
    self.assertIn("(all interfaces; cluster address 127.0.0.1:", match.group(2))
    warned = out.wait_for_match(re.compile(
        rf"\*:{port} is open to anyone.*docs/SECURITY\.md"), 10)
    self.assertIsNotNone(warned, out.describe())
    address = _non_loopback_ipv4()
    if address:  # The warning is true: the port answers off loopback.
      self.assertIsNone(_connect(address, port), out.describe())
    self.assertIsNone(proc.poll())

  def test_launch_cluster_is_unreachable_from_outside_its_namespace(self):
    reason = netns.unavailable_reason()
    if reason:
      self.skipTest(f"no private network namespace here: {reason}; run it "
                    "on Linux with util-linux (unshare, nsenter) installed")
    proc, out = self._start(
        ["-m", "harness.launch", "--workers=1",
         "--network_isolation=netns", "--timeout_secs=300", "--",
         sys.executable, "-m", "harness.server"], conftest.child_env())
    space = out.wait_for_match(re.compile(
        r"launch \| network \| tasks run in a private network namespace "
        r"\((/proc/\d+/ns/net)\)"), 60)
    self.assertIsNotNone(space, out.describe())
    match = out.wait_for_match(re.compile(
        r"\[(worker/0)\].*listening on \*:(\d+) inside harness.launch's "
        "private network namespace"), _START_SECS)
    self.assertIsNotNone(match, out.describe())
    port = int(match.group(2))
    self.assertIsNone(out.search(re.compile("WARNING")), out.describe())
    # Inside the namespace the server answers ...
    inside = subprocess.run(
        ["nsenter", f"--net={space.group(1)}", "--", sys.executable, "-c",
         "import socket; socket.create_connection(('127.0.0.1', "
         f"{port}), timeout={_CONNECT_SECS}).close(); print('connected')"],
        capture_output=True, text=True, timeout=60, check=False)
    self.assertIn("connected", inside.stdout, inside.stderr)
    # ... from this machine's own addresses outside it, nothing does.
    targets = ["127.0.0.1"]
    address = _non_loopback_ipv4()
    if address:
      targets.insert(0, address)
    for host in targets:
      error = _connect(host, port)
      self.assertIsInstance(error, ConnectionRefusedError,
                            f"{host}:{port} from outside the namespace: "
                            f"{error!r}\n{out.describe()}")
    self.assertIsNone(proc.poll(), out.describe())


if __name__ == "__main__":
  absltest.main()
