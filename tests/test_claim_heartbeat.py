"""The client's claim heartbeat: a failed renewal is one line; a failure
after the claims were released, or while the servers close the training
sessions, is not a lost claim."""

import threading
from unittest import mock

from absl.testing import absltest

from harness.distribute import server_claim
from tests import _support


class _FailingServer:
  label = "worker/0 at 127.0.0.1:1"

  def __init__(self, released=None):
    self.calls = 0
    self._released = released

  def run(self, action, token, timeout):
    del token, timeout
    if action != "claim":
      return True, "", 0.0
    self.calls += 1
    if self._released is not None:
      self._released.wait(10)
    raise RuntimeError("Deadline Exceeded\nAdditional GRPC error "
                       "information from remote target /job:worker:\n...")

  def close(self):
    pass


class HeartbeatTest(absltest.TestCase):

  def test_failed_renewal_is_one_line(self):
    claims = server_claim.Claims([_FailingServer()], "token", 0.04)
    claims._thread.start()  # pylint: disable=protected-access
    _support.wait_for(lambda: claims.lost, 30, "the heartbeat to fail")
    self.assertEqual(claims.lost, "worker/0 at 127.0.0.1:1: RuntimeError: "
                     "Deadline Exceeded")
    claims.release(clean=True)

  def test_failure_after_release_is_not_lost(self):
    released = threading.Event()
    server = _FailingServer(released)
    claims = server_claim.Claims([server], "token", 0.04)
    claims._thread.start()  # pylint: disable=protected-access
    _support.wait_for(lambda: server.calls, 30, "a renewal in flight")
    threading.Timer(0.2, released.set).start()
    claims.release(clean=True)
    self.assertIsNone(claims.lost)

  def test_closing_renews_for_the_close_and_tolerates_a_busy_server(self):
    # A session's close can hold its server up to tf.data's 60 s autotuning
    # period, answering no renewal: the claim must outlast it, not be lost.
    server = _FailingServer()
    timeouts = []
    failing_run = server.run

    def run(action, token, timeout):
      timeouts.append(timeout)
      return failing_run(action, token, timeout)

    server.run = run
    with mock.patch.object(server_claim, "CLOSE_TIMEOUT_SECS", 0.08):
      claims = server_claim.Claims([server], "token", 0.04)
      claims.closing()
      self.assertEqual(timeouts, [0.08])  # Renewed for the close at once.
      self.assertIsNotNone(claims.closing_since)
      claims._thread.start()  # pylint: disable=protected-access
      _support.wait_for(lambda: server.calls >= 4, 30,
                        "renewals failing while the server closes")
      self.assertIsNone(claims.lost)
      claims.release(clean=True)


if __name__ == "__main__":
  absltest.main()
