"""A test that starts a child and fails as a timed-out test does, without
a cleanup of its own; tests/test_processes.py runs it under pytest.

    PIDS_FILE=/tmp/pids python -m pytest tests/programs/leaves_a_child.py
"""

import os

from absl.testing import absltest

from tests import _support

_PROGRAM = os.path.join(os.path.dirname(__file__), "stubborn_tree.py")


class LeavesAChildTest(absltest.TestCase):

  def test_times_out_with_its_child_running(self):
    child = _support.ChildProcess([_PROGRAM, os.environ["PIDS_FILE"]],
                                  "stubborn tree")
    self.assertTrue(child.wait_for_text("ready", 60), child.describe())
    self.fail("timed out (on purpose); the child is still running")


if __name__ == "__main__":
  absltest.main()
