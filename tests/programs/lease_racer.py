"""A process that races others for model_dirs' leases, for
tests/test_lease_race.py: every racer waits at a barrier, then all call
`lease.acquire` on the same model_dir at once; each says whether it holds
the lease, and the holder releases it once every racer said.
"""

import os

__all__ = ["race"]

_BARRIER_SECS = 300  # Every racer imports TensorFlow first (loaded machine).


def race(root, rounds, start, done, results):
  """Races `rounds` times, in `root`/race-<round>; puts (round, pid, held)."""
  from harness import errors  # pylint: disable=g-import-not-at-top
  from harness.state import lease  # pylint: disable=g-import-not-at-top
  for round_index in range(rounds):
    model_dir = os.path.join(root, f"race-{round_index}")
    start.wait(timeout=_BARRIER_SECS)
    try:
      held = lease.acquire(model_dir, task_label=f"racer/{os.getpid()}",
                           refresh_secs=30)
    except errors.ModelDirLeaseError:
      held = None
    results.put((round_index, os.getpid(), held is not None))
    done.wait(timeout=_BARRIER_SECS)
    if held is not None:
      held.release()
