"""Helpers several test files share (one copy each; issue 13 part 5).

    from tests import _support

    self.assertEqual(_support.checkpoint_steps(model_dir), [0, 50, 100])

The child-process environment is `tests.conftest.child_env`.
"""

import glob
import os
import socket

from harness._tf import tf


def checkpoint_steps(model_dir):
  """Global steps of the `model.ckpt-N` checkpoints on disk, ascending."""
  return sorted(int(p.rsplit("-", 1)[1].split(".")[0]) for p in
                glob.glob(os.path.join(model_dir, "model.ckpt-*.index")))


def checkpoint_step(model_dir):
  """The global step of model_dir's latest checkpoint; None without one."""
  path = tf.train.latest_checkpoint(model_dir)
  return None if path is None else int(
      tf.train.load_variable(path, "global_step"))


def free_port():
  """A loopback TCP port that was free when asked (bound to port 0)."""
  with socket.socket() as sock:
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]
