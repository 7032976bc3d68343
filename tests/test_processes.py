"""Tests leave no process behind (tests/_processes.py, tests/conftest.py).

A multi-process test that times out used to leave its `harness.server` and
`harness.main` children running, and `_support.run` past its bound killed
the command alone, not what it started in sessions of its own. Here the
child ignores SIGTERM and starts a grandchild in a session of its own that
ignores it too (tests/programs/stubborn_tree.py): both must be gone.
"""

import os
import signal
import subprocess
import sys

from absl.testing import absltest
import pytest

from tests import _processes
from tests import _support
from tests import conftest

_PROGRAMS = os.path.join(os.path.dirname(__file__), "programs")
_TREE = os.path.join(_PROGRAMS, "stubborn_tree.py")
_RUN_SECS = 120
# _support.run's bound in the test of it: the tree is up well before.
_TREE_SECS = 10


class NoChildLeftTest(absltest.TestCase):

  def _pids(self, pids_file):
    """The tree's two pids, each SIGKILLed at this test's end if alive."""
    self.assertTrue(os.path.exists(pids_file), "the tree never started")
    with open(pids_file) as f:
      pids = [int(p) for p in f.read().split()]
    for pid in pids:
      self.addCleanup(lambda p=pid: _processes.alive(p) and os.kill(
          p, signal.SIGKILL))
    return pids

  @pytest.mark.slow  # A pytest run of its own.
  def test_a_failed_test_leaves_no_child_that_ignores_sigterm(self):
    pids_file = os.path.join(self.create_tempdir().full_path, "pids")
    result = _support.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         os.path.join(_PROGRAMS, "leaves_a_child.py")],
        timeout_secs=_RUN_SECS,
        env={**os.environ, "PYTHONPATH": str(conftest.REPO_ROOT),
             "PIDS_FILE": pids_file})
    self.assertIn("1 failed", result.stdout, result.description)
    pids = self._pids(pids_file)
    self.assertEqual([p for p in pids if _processes.alive(p)], [],
                     f"left running after the test: {pids}\n"
                     f"{result.description}")

  @pytest.mark.slow  # Waits for its bound.
  def test_run_past_its_bound_kills_the_tree(self):
    pids_file = os.path.join(self.create_tempdir().full_path, "pids")
    with self.assertRaises(subprocess.TimeoutExpired):
      _support.run([sys.executable, _TREE, pids_file],
                   timeout_secs=_TREE_SECS)
    pids = self._pids(pids_file)
    self.assertEqual([p for p in pids if _processes.alive(p)], [],
                     f"left running past the bound: {pids}")


if __name__ == "__main__":
  absltest.main()
