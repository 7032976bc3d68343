"""harness.distribute.remote_stop: the run a remote client's tasks end after."""

import threading

from absl.testing import absltest

from harness.distribute import remote_stop


class StopAgreementTest(absltest.TestCase):

  def test_no_request_no_stop(self):
    agreement = remote_stop.StopAgreement(threading.Event(), lockstep=True)
    self.assertFalse(agreement.ends_after(5))

  def test_lockstep_tasks_end_after_the_same_run(self):
    # worker/1 saw the request after run 4 while worker/0 was still in its
    # run-4 hooks (tests/test_remote.py, SIGINT): both end after run 5.
    stop = threading.Event()
    agreement = remote_stop.StopAgreement(stop, lockstep=True)
    self.assertFalse(agreement.ends_after(4))  # worker/0, before the request
    stop.set()
    self.assertFalse(agreement.ends_after(4))  # worker/1 names run 5
    self.assertFalse(agreement.ends_after(4))  # worker/0 goes on too
    self.assertTrue(agreement.ends_after(5))
    self.assertTrue(agreement.ends_after(5))

  def test_other_tasks_stop_after_their_current_run(self):
    stop = threading.Event()
    agreement = remote_stop.StopAgreement(stop, lockstep=False)
    stop.set()
    self.assertTrue(agreement.ends_after(4))
    self.assertTrue(agreement.ends_after(90))


if __name__ == "__main__":
  absltest.main()
