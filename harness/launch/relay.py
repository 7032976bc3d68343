"""Forwards TCP connections from this machine into `harness.launch`'s private
network namespace (the tasks' live metrics ports).

The namespace holder (`netns.hold`) runs inside the namespace and is given
sockets that the launcher bound and set listening on this machine's
127.0.0.1 (`launch/metrics_ports.py`); a socket keeps the namespace it was
made in, so the holder accepts connections from this machine on them and
connects each to the same port on 127.0.0.1 inside, where the task
listens::

    relay.forward([(listening_fd, port), ...])   # threads; returns at once

Each connection is two byte copies, closed after `IDLE_SECS` without data.
No TensorFlow.
"""

import socket
import threading

__all__ = ["IDLE_SECS", "forward"]

IDLE_SECS = 30.0
_CONNECT_SECS = 5.0
_CHUNK = 65536


def forward(pairs):
  """Starts a daemon accept loop for each (listening fd, inner port)."""
  for fd, port in pairs:
    listener = socket.socket(fileno=fd)
    threading.Thread(target=_accept_loop, args=(listener, port),
                     name=f"relay-{port}", daemon=True).start()


def _accept_loop(listener, port):
  while True:
    try:
      client, _ = listener.accept()
    except OSError:
      return  # Closed: the holder is ending.
    threading.Thread(target=_connect, args=(client, port), daemon=True).start()


def _connect(client, port):
  """Joins `client` to 127.0.0.1:`port` here; a task not (yet) serving
  closes the client's connection at once."""
  with client:
    try:
      inner = socket.create_connection(("127.0.0.1", port),
                                       timeout=_CONNECT_SECS)
    except OSError:
      return
    with inner:
      client.settimeout(IDLE_SECS)
      inner.settimeout(IDLE_SECS)
      back = threading.Thread(target=_copy, args=(inner, client), daemon=True)
      back.start()
      _copy(client, inner)
      back.join(IDLE_SECS)


def _copy(source, target):
  """Copies bytes until `source` ends (or idles, or fails); then ends
  `target`'s writing half."""
  try:
    while True:
      data = source.recv(_CHUNK)
      if not data:
        break
      target.sendall(data)
  except OSError:  # Timed out, reset: the connection ends.
    pass
  try:
    target.shutdown(socket.SHUT_WR)
  except OSError:
    pass
