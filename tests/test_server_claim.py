"""One standalone client per cluster; servers restart after a lost client.

Fast: claims against an in-process server (granted, refused naming the
holder, cleared, expired and seen by the server's watchdog). The real
processes (a second client refused while the first trains; the first killed
with SIGKILL; the next client expires the dead client's claims, the servers
restart in place, same pid and port, and the client finishes) are
tests/test_remote.py::RemoteClusterTest::test_collective_client_killed_then_resumed.
"""

import json
import os
import socket

from absl.testing import absltest

from harness import errors
from harness._tf import tf
from harness.distribute import claim_graph
from harness.distribute import server_claim
from harness.launch import ports
from harness.state import processes
from tests import _support



def _in_process_server():
  address = f"127.0.0.1:{ports.pick_free_port()}"
  server = tf.distribute.Server(
      tf.train.ClusterSpec({"worker": [address]}), job_name="worker",
      task_index=0, start=True)
  return server, address


class DeadHolderTest(absltest.TestCase):
  """A holder's pid is evidence only in our PID namespace and boot."""

  def _holder(self, **changes):
    pid_ns, boot_id = processes.process_space()
    who = {"host": socket.gethostname(), "pid": 2 ** 22 + 7,  # No such pid.
           "pid_ns": pid_ns, "boot_id": boot_id}
    who.update(changes)
    return json.dumps(who)

  def test_exited_client_of_this_namespace_is_dead(self):
    self.assertTrue(server_claim._dead_on_this_host(self._holder()))  # pylint: disable=protected-access

  def test_client_of_another_namespace_or_boot_or_older_is_not(self):
    for changes in ({"pid_ns": "pid:[1]"}, {"boot_id": "other-boot"},
                    {"pid_ns": None, "boot_id": None}):
      with self.subTest(changes=changes):
        self.assertFalse(server_claim._dead_on_this_host(  # pylint: disable=protected-access
            self._holder(**changes)))


class ClaimTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.server, cls.address = _in_process_server()
    cls.cluster = {"worker": [cls.address]}
    cls.watchdog = server_claim.Watchdog(cls.server.target, "worker", 0)

  def test_claims_refusal_release_and_expiry(self):
    self.assertIsNone(self.watchdog.lost_client())
    first = server_claim.claim_all(self.cluster, timeout_secs=60,
                                   wait_secs=10)
    with self.assertRaises(errors.RemoteClusterBusyError) as raised:
      server_claim.claim_all(self.cluster, timeout_secs=60, wait_secs=10)
    message = str(raised.exception)
    self.assertIn(f"The server of worker/0 at {self.address} is driven by "
                  f"another client: host {socket.gethostname()}, pid "
                  f"{os.getpid()}", message)
    self.assertIn("would interleave their steps", message)
    self.assertIsNone(self.watchdog.lost_client())  # Still renewed.
    first.release(clean=True)
    second = server_claim.claim_all(self.cluster, timeout_secs=60,
                                    wait_secs=10)
    second.release(clean=False)  # A failed client: restart the server.
    self.assertIn("expired", self.watchdog.lost_client())
    with self.assertRaisesRegex(errors.RemoteClusterError,
                                "did not restart within 1 s"):
      server_claim.claim_all(self.cluster, timeout_secs=60, wait_secs=1)

  def setUp(self):
    super().setUp()
    # Each test starts from a server nobody holds (as after a restart).
    ops = claim_graph.ClaimOps(claim_graph.server_device("worker", 0))
    with tf.compat.v1.Session(self.server.target, graph=ops.graph) as sess:
      holder = sess.run(ops.watch)[0].decode()
      if holder:
        sess.run(ops.change, feed_dict={ops.token: holder, ops.timeout: 1,
                                        ops.action: "clean"})

  def test_unrenewed_claim_is_reported_by_the_watchdog(self):
    claims = server_claim.claim_all(self.cluster, timeout_secs=1,
                                    wait_secs=10)
    claims._stop.set()  # pylint: disable=protected-access  # "Killed".
    lost = _support.wait_for(self.watchdog.lost_client, 30,
                             "the watchdog to report the unrenewed claim")
    self.assertEqual(json.loads(lost)["pid"], os.getpid())


if __name__ == "__main__":
  absltest.main()
