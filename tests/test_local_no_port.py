"""docs/SECURITY.md: local training (no cluster) opens no port.

A local `Estimator.train` runs no `tf.distribute.Server` and, with the
defaults (no `metrics_port`, no TensorBoard), no other listener: during a
step, this process holds no listening TCP socket it did not hold before.
"""

import os

from absl.testing import absltest

from harness._tf import tf
from tests import _support

_LISTEN = "0A"  # TCP state LISTEN in /proc/net/tcp*.


def listening_sockets():
  """Inodes of the TCP sockets this process holds that are listening."""
  listening = set()
  for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    if os.path.exists(table):
      with open(table) as f:
        for line in f.readlines()[1:]:
          fields = line.split()
          if fields[3] == _LISTEN:
            listening.add(fields[9])
  mine = set()
  for fd in os.listdir("/proc/self/fd"):
    try:
      target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
      continue
    if target.startswith("socket:["):
      mine.add(target[len("socket:["):-1])
  return listening & mine


class _SeeSockets(tf.compat.v1.train.SessionRunHook):

  def __init__(self):
    self.seen = None

  def after_run(self, run_context, run_values):
    del run_context, run_values
    self.seen = listening_sockets()


class LocalTrainingOpensNoPortTest(absltest.TestCase):

  def test_no_listening_socket_while_training(self):
    if not os.path.exists("/proc/self/fd"):
      self.skipTest("needs Linux /proc: run it on Linux")
    before = listening_sockets()
    hook = _SeeSockets()
    estimator = _support.linear_estimator(self.create_tempdir().full_path, 10)
    estimator.train(_support.constant_input_fn, max_steps=3, hooks=[hook])
    self.assertIsNotNone(hook.seen)
    self.assertEqual(hook.seen - before, set())

  def test_a_listening_socket_is_seen(self):
    # The check itself: a server this process starts is found.
    before = listening_sockets()
    import socket  # pylint: disable=g-import-not-at-top
    with socket.socket() as server:
      server.bind(("127.0.0.1", 0))
      server.listen()
      self.assertLen(listening_sockets() - before, 1)


if __name__ == "__main__":
  absltest.main()
