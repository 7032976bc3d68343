"""Noticing a dead collective peer while a step waits for it.

A collective step whose peer was killed does not always fail: TensorFlow
may wait for the peer's part until the step deadline (--peer_timeout_secs,
60 s by default). `PeerWatch` runs beside the training loop of a
collective trainer and looks at its peers every `POLL_SECS`::

    watch = peer_watch.PeerWatch({"worker/1": "127.0.0.1:2223"},
                                 on_lost=guard.peer_gone)
    watch.start(); ...; watch.stop()

A peer is gone when its port refuses connections at `REFUSALS` polls in a
row (nothing listens there: its process ended), or when `restarted()`
names it (it recorded a new start since the group formed). A port that is
slow to answer (a loaded machine) does not count. `on_lost(label, why)` is
called from the watch's thread; the guard ends the step in flight (it
closes the session) and returns True, or returns False outside a step.
"""

import socket
import threading

__all__ = ["POLL_SECS", "REFUSALS", "PeerWatch", "refuses"]

POLL_SECS = 0.25
REFUSALS = 2
_CONNECT_SECS = 1.0
_RECORD_EVERY = 4  # Polls between two reads of the start records.


def refuses(address, timeout_secs=_CONNECT_SECS):
  """Whether "host:port" refuses a TCP connection (nothing listens)."""
  host, _, port = address.rpartition(":")
  try:
    with socket.create_connection((host, int(port)), timeout=timeout_secs):
      return False
  except ConnectionRefusedError:
    return True
  except (OSError, ValueError):  # Slow or unreachable: not proof.
    return False


class PeerWatch:
  """A daemon thread that calls `on_lost(label, why)` while a peer is gone.

  It stops once `on_lost` returns True (it acted on the loss).
  """

  def __init__(self, addresses, *, on_lost, restarted=None,
               poll_secs=POLL_SECS, refusals=REFUSALS, check=refuses):
    """Makes the watch (not started).

    Args:
      addresses: {task label: "host:port"} of the peers to watch.
      on_lost: `fn(label, why) -> bool`, called at each look that finds a
        peer gone until it returns True.
      restarted: `fn() -> set of labels` that restarted since the group
        formed, or None.
      poll_secs: seconds between two looks.
      refusals: refused connections in a row that mean a peer is gone.
      check: `fn(address) -> bool`, whether the port refuses (tests).
    """
    self._addresses = dict(addresses)
    self._on_lost = on_lost
    self._restarted = restarted
    self._poll_secs = poll_secs
    self._refusals = refusals
    self._check = check
    self._stop = threading.Event()
    self._thread = None
    self.lost = None  # (label, why) once found.

  def start(self):
    self._thread = threading.Thread(target=self._run, daemon=True,
                                    name="harness-peer-watch")
    self._thread.start()

  def stop(self):
    self._stop.set()
    thread = self._thread
    if thread is not None and thread is not threading.current_thread():
      thread.join(timeout=5 * _CONNECT_SECS)

  def _run(self):
    refused = {label: 0 for label in self._addresses}
    polls = 0
    while not self._stop.wait(self._poll_secs):
      polls += 1
      found = self._look(refused, read_records=polls % _RECORD_EVERY == 0)
      if found and not self._stop.is_set() and self._on_lost(*found):
        self.lost = found
        return

  def _look(self, refused, read_records):
    for label in sorted(self._addresses):
      refused[label] = refused[label] + 1 if self._check(
          self._addresses[label]) else 0
      if refused[label] >= self._refusals:
        return label, f"port {self._addresses[label]} refuses connections"
    if read_records and self._restarted is not None:
      restarted = sorted(self._restarted())
      if restarted:
        return restarted[0], "it restarted since the group formed"
    return None
