"""harness.state.lease: a trainer of this process, and leases with odd times.

Issue 37: a second trainer in another thread of the same process took over
the live lease ("the holder was this process in an earlier run") and the
first stopped; a lease whose refresh time is ahead of our clock made the
documented 35 s wait unbounded, and one whose time is NaN was refused
forever. The clock is injected: nothing here sleeps.
"""

import math

from absl.testing import absltest
from absl.testing import parameterized

from harness import errors
from harness.state import lease
from harness.state import lease_file

_HOST = "host-a"
_PERIOD_SECS = 5.0
# The documented wait for a holder whose pid cannot be checked here: the
# stale limit plus one refresh period (docs/SECURITY.md: 35 s).
_BOUND_SECS = (lease_file.STALE_AFTER_REFRESHES + 1) * _PERIOD_SECS


class _Clock:

  def __init__(self, now=1_000_000.0):
    self.now = now

  def __call__(self):
    return self.now


def _other_space_record(**fields):
  """A lease of pid 1 in another container (its pid is no evidence here)."""
  record = dict(host=_HOST, pid=1, task="chief/0", start_time=999_990.0,
                refreshed_time=999_998.0, refresh_secs=_PERIOD_SECS,
                token="other", pid_ns="pid:[4026532001]", boot_id="boot-1")
  record.update(fields)
  return lease_file.LeaseRecord(**record)


class InProcessTest(absltest.TestCase):
  """This process's own pid, host and PID namespace, as a notebook has."""

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path

  def test_live_trainer_of_this_process_is_refused_at_once(self):
    first = lease.acquire(self.model_dir, task_label="local",
                          refresh_secs=3600)
    self.addCleanup(first.release)
    slept = []
    with self.assertRaises(errors.ModelDirLeaseError) as raised:
      lease.acquire(self.model_dir, refresh_secs=3600, sleep=slept.append)
    self.assertEqual(slept, [], "the refusal waited")
    self.assertIn(f"model_dir {self.model_dir} is in use by another trainer "
                  "in this process, in thread 'MainThread'",
                  str(raised.exception))
    self.assertEqual(lease_file.read(self.model_dir).token, first.record.token)
    first.check()  # The first trainer was not harmed: still its lease.
    first.refresh()
    self.assertIsNone(first.lost_to)

  def test_lease_of_an_earlier_run_of_this_process_is_taken_over(self):
    first = lease.acquire(self.model_dir, refresh_secs=3600)
    first.release()
    # A run of this process that ended without removing its lease file (its
    # release failed): the file names this pid, no lease of it is held.
    lease_file.write(self.model_dir, first.record)
    with self.assertLogs(level="WARNING") as logs:
      second = lease.acquire(self.model_dir, refresh_secs=3600)
    self.addCleanup(second.release)
    self.assertIn("the holder was this process", "\n".join(logs.output))
    self.assertEqual(lease_file.read(self.model_dir).token, second.record.token)

  def test_a_released_lease_lets_the_next_trainer_of_this_process_in(self):
    lease.acquire(self.model_dir, refresh_secs=3600).release()
    second = lease.acquire(self.model_dir, refresh_secs=3600)
    self.addCleanup(second.release)
    self.assertEqual(lease_file.read(self.model_dir).token, second.record.token)


class OddTimeTest(parameterized.TestCase):
  """Leases whose refresh time says nothing about their holder's age."""

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    self.clock = _Clock()
    self.start = self.clock.now

  def _acquire(self, **kwargs):
    kwargs.setdefault("sleep", self._advance)
    return lease.acquire(
        self.model_dir, clock=self.clock, host=_HOST, pid=1,
        space=("pid:[4026532002]", "boot-1"), pid_alive=lambda pid: True,
        refresh_secs=3600, **kwargs)

  def _advance(self, secs):
    self.clock.now += secs
    if self.clock.now - self.start > 2 * _BOUND_SECS:  # Fail fast, not hang.
      raise AssertionError(f"acquire waited over {2 * _BOUND_SECS} s")

  @parameterized.named_parameters(
      ("an_hour_ahead", 1_000_000.0 + 3600),
      ("a_year_ahead", 1_000_000.0 + 365 * 86400),
      ("nan", math.nan),
      ("infinite", math.inf))
  def test_holder_that_never_refreshes_is_taken_over_within_the_bound(
      self, refreshed_time):
    lease_file.write(self.model_dir,
                     _other_space_record(refreshed_time=refreshed_time))
    start = self.clock.now
    with self.assertLogs(level="WARNING") as logs:
      held = self._acquire()
    self.addCleanup(held.release)
    waited = self.clock.now - start
    self.assertLessEqual(waited, _BOUND_SECS + 1)
    self.assertGreaterEqual(waited, _BOUND_SECS - _PERIOD_SECS)
    self.assertIn("taking over the stale lease of model_dir: not refreshed "
                  "during the", "\n".join(logs.output))
    self.assertEqual(lease_file.read(self.model_dir).token, held.record.token)

  @parameterized.named_parameters(("an_hour", 3600.0), ("a_year", 3.2e7))
  def test_holder_ahead_that_refreshes_is_refused_within_the_bound(
      self, ahead_secs):

    def refresh_ahead(secs):  # The holder refreshes, its clock ahead.
      self._advance(secs)
      lease_file.write(self.model_dir, _other_space_record(
          refreshed_time=self.clock.now + ahead_secs))

    lease_file.write(self.model_dir, _other_space_record(
        refreshed_time=self.clock.now + ahead_secs))
    start = self.clock.now
    with self.assertRaises(errors.ModelDirLeaseError) as raised:
      self._acquire(sleep=refresh_ahead)
    self.assertLessEqual(self.clock.now - start, _BOUND_SECS + 1)
    self.assertIn("is in use by another trainer: host host-a, pid 1",
                  str(raised.exception))
    self.assertEqual(lease_file.read(self.model_dir).token, "other")

  def test_refresh_period_that_is_not_a_number_waits_the_default_bound(self):
    lease_file.write(self.model_dir, _other_space_record(
        refresh_secs=math.nan, refreshed_time=self.clock.now))
    start = self.clock.now
    with self.assertLogs(level="WARNING"):
      held = self._acquire()
    self.addCleanup(held.release)
    self.assertLessEqual(self.clock.now - start, _BOUND_SECS + 1)

  def test_small_clock_skew_still_counts_as_the_age(self):
    # A holder 1 s ahead that stopped: its age is known (0 s), the wait is
    # the ordinary one and the reason the ordinary "not refreshed for".
    lease_file.write(self.model_dir, _other_space_record(
        refreshed_time=self.clock.now + 1))
    with self.assertLogs(level="WARNING") as logs:
      held = self._acquire()
    self.addCleanup(held.release)
    self.assertIn("not refreshed for 3", "\n".join(logs.output))


if __name__ == "__main__":
  absltest.main()
