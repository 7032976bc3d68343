"""harness.guard.peer_watch and the guard's use of it: a dead collective peer
ends the step in flight at once instead of at the step deadline."""

import threading
import time

from absl.testing import absltest

from harness import errors
from harness._tf import tf
from harness.guard import peer_watch
from harness.guard import preemption
from harness.launch import ports
from harness.state import run_state
from tests import _support


class RefusesTest(absltest.TestCase):

  def test_listening_port_does_not_refuse(self):
    self.assertFalse(peer_watch.refuses(_support.silent_listener(self)))

  def test_closed_port_refuses(self):
    self.assertTrue(peer_watch.refuses(
        f"127.0.0.1:{ports.pick_free_port()}"))


class PeerWatchTest(absltest.TestCase):

  def _watch(self, check, restarted=None, acts=True):
    calls = []
    done = threading.Event()

    def on_lost(label, why):
      calls.append((label, why))
      if acts:
        done.set()
      return acts

    watch = peer_watch.PeerWatch(
        {"worker/1": "h:1", "worker/2": "h:2"}, on_lost=on_lost,
        restarted=restarted, poll_secs=0.01, check=check)
    self.addCleanup(watch.stop)
    return watch, calls, done

  def test_refused_twice_in_a_row_is_lost(self):
    watch, calls, done = self._watch(lambda address: address == "h:2")
    watch.start()
    self.assertTrue(done.wait(10))
    self.assertEqual(calls[0][0], "worker/2")
    self.assertIn("h:2 refuses connections", calls[0][1])
    self.assertEqual(watch.lost, calls[0])

  def test_one_refusal_then_answers_is_not_lost(self):
    seen = {"h:1": 0}

    def check(address):
      if address != "h:1":
        return False
      seen["h:1"] += 1
      return seen["h:1"] % 2 == 1  # Refused every other look.

    watch, calls, _ = self._watch(check)
    watch.start()
    _support.wait_for(lambda: seen["h:1"] >= 20, 30, "20 looks")
    self.assertEqual(calls, [])

  def test_restarted_peer_is_lost(self):
    watch, calls, done = self._watch(lambda address: False,
                                     restarted=lambda: {"worker/1"})
    watch.start()
    self.assertTrue(done.wait(10))
    self.assertEqual(calls[0], ("worker/1",
                                "it restarted since the group formed"))

  def test_keeps_looking_until_on_lost_acts(self):
    watch, calls, _ = self._watch(lambda address: address == "h:1",
                                  acts=False)
    watch.start()
    _support.wait_for(lambda: len(calls) >= 3, 30, "3 calls")
    self.assertIsNone(watch.lost)


class _Session:

  def __init__(self):
    self.closed = threading.Event()

  def close(self):
    self.closed.set()


class GuardEndsTheStepTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    alive = _support.silent_listener(self)
    self.dead = f"127.0.0.1:{ports.pick_free_port()}"  # Nobody listens.
    self.guard = preemption.TrainingGuard(
        task_label="worker/0", is_chief=True, model_dir=self.model_dir,
        cluster={"worker": [alive, self.dead]}, collective=True,
        peer_timeout_secs=60, sleep=lambda secs: None,
        probe_peer=lambda address: None)
    self.session = _Session()
    self.guard.opened(self.session)
    self.addCleanup(self.guard.closed)

  def test_dead_peer_closes_the_session_during_a_step(self):
    self.guard.step_begins()
    self.assertTrue(self.session.closed.wait(30))
    with self.assertRaises(errors.PeerLostError) as ctx:
      self.guard.raise_for(tf.errors.CancelledError(None, None, "cancelled"))
    message = str(ctx.exception)
    self.assertEqual(message, f"worker/0: lost peer worker/1 (port "
                     f"{self.dead} refuses connections). Fix: restart it "
                     "(--max_restarts); see docs/ERRORS.md#lost-peer")

  def test_no_close_between_steps(self):
    self.assertTrue(self.guard.peer_gone("worker/1", "why") is False)
    self.assertFalse(self.session.closed.is_set())
    self.assertFalse(self.guard.peer_lost)

  def test_no_close_when_the_peer_left_its_loop_cleanly(self):
    run_state.write_loop_ended(self.model_dir, "worker/1")
    self.guard.step_begins()
    self.assertFalse(self.guard.peer_gone("worker/1", "why"))
    self.assertFalse(self.session.closed.is_set())

  def test_late_first_start_is_not_a_restart(self):
    self.guard.step_begins()
    run_state.write_task_started(self.model_dir, "worker/1")  # Late start.
    self.assertEqual(self.guard._restarted_since_formed(), set())  # pylint: disable=protected-access
    self.guard.step_ends(succeeded=True)  # The group exists now.
    _support.wait_for(lambda: time.time() > self.guard._formed_at, 5,  # pylint: disable=protected-access
                      "the clock to pass the group's forming")
    run_state.write_task_started(self.model_dir, "worker/1")  # A restart.
    self.assertEqual(self.guard._restarted_since_formed(), {"worker/1"})  # pylint: disable=protected-access


if __name__ == "__main__":
  absltest.main()
