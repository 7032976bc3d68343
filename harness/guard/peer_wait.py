"""Waiting for the peers a training session needs: visible and bounded.

Before a multi-task training session is created, each trainer waits until
the tasks it talks to (every trainer under a collective strategy, the ps
tasks otherwise) answer as TensorFlow servers::

    peer_wait.wait_for_peers({"worker/1": "10.0.0.2:2222"},
                             task_label="worker/0", timeout_secs=7200)

It logs which tasks it waits for, and for how long, when it starts waiting
and every `LOG_EVERY_SECS`; after `timeout_secs` (RunConfig's
`session_creation_timeout_secs`) it raises `errors.PeersNotReadyError`
naming each missing task and why: nothing listens on the port, the host is
unreachable, or the port answers but is not a TensorFlow server (it does
not speak gRPC's HTTP/2). Without this check a session towards such a peer
waits silently for the whole session-creation time.
"""

import socket
import time

from absl import logging

from harness import errors

__all__ = ["LOG_EVERY_SECS", "probe", "wait_for_peers"]

LOG_EVERY_SECS = 10.0
_POLL_SECS = 0.5
_PROBE_SECS = 1.0
# The HTTP/2 client preface and an empty SETTINGS frame: a gRPC server (a
# TensorFlow server is one) answers with a SETTINGS frame of its own.
_HTTP2_PREFACE = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                  b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
_SETTINGS_FRAME_TYPE = 0x04


def probe(address, timeout_secs=_PROBE_SECS):
  """Whether a TensorFlow (gRPC) server answers at `address` ("host:port").

  Returns:
    None when one does; else why not, as text for a log line.
  """
  host, _, port = address.rpartition(":")
  try:
    sock = socket.create_connection((host, int(port)), timeout=timeout_secs)
  except ConnectionRefusedError:
    return "refused: nothing listens there"
  except socket.timeout:
    return f"the port accepts no connection within {timeout_secs:g} s"
  except (OSError, ValueError) as e:
    return f"not reachable: {getattr(e, 'strerror', None) or e}"
  with sock:
    try:
      sock.settimeout(timeout_secs)
      sock.sendall(_HTTP2_PREFACE)
      reply = sock.recv(9)
    except socket.timeout:
      return ("the port answers but is not a TensorFlow server (no gRPC "
              f"reply within {timeout_secs:g} s)")
    except OSError as e:
      return ("the port answers but is not a TensorFlow server (the "
              f"connection failed: {e.strerror or e})")
  if len(reply) >= 4 and reply[3] == _SETTINGS_FRAME_TYPE:
    return None
  if not reply:
    return ("the port answers but is not a TensorFlow server (it closed "
            "the connection)")
  return ("the port answers but is not a TensorFlow server (it replied "
          f"{reply[:16]!r}, not gRPC)")


def wait_for_peers(addresses, *, task_label, timeout_secs,
                   clock=time.monotonic, sleep=time.sleep, check=probe):
  """Returns once every peer answers as a TensorFlow server.

  Args:
    addresses: {task label: "host:port"} of the peers to wait for.
    task_label: this task, e.g. "worker/0", for log lines and the error.
    timeout_secs: give up after this long (session_creation_timeout_secs).
    clock, sleep, check: time source, sleep and probe (injected by tests).

  Raises:
    PeersNotReadyError: some peers did not answer within `timeout_secs`.
  """
  start = clock()
  next_log = start
  waited_logged = False
  while True:
    missing = {}
    for label in sorted(addresses):
      why = check(addresses[label])
      if why is not None:
        missing[label] = why
    now = clock()
    waited = now - start
    if not missing:
      if waited_logged:
        logging.info("train | %s | every peer answers, after %.0f s",
                     task_label, waited)
      return
    shown = "; ".join(f"{label} at {addresses[label]} ({why})"
                      for label, why in missing.items())
    if waited >= timeout_secs:
      raise errors.PeersNotReadyError(
          f"{task_label}: gave up after {timeout_secs:g} s "
          f"(session_creation_timeout_secs) waiting for {len(missing)} "
          f"peer(s): {shown}. Fix: start each of them (the same command "
          "with its own TF_CONFIG task) and check the addresses in "
          "TF_CONFIG's cluster; if they start later than that, raise "
          "--session_creation_timeout_secs (RunConfig's "
          "session_creation_timeout_secs).")
    if now >= next_log:
      log = logging.warning if waited_logged else logging.info
      # The first missing peer, so that the line stays readable; the error
      # at the end names every one.
      label, why = next(iter(missing.items()))
      more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
      log("train | %s | waiting for %d peer(s) for %.0f s (of %g s): "
          "%s at %s (%s)%s", task_label, len(missing), waited, timeout_secs,
          label, addresses[label], why, more)
      waited_logged = True
      next_log = now + LOG_EVERY_SECS
    sleep(min(_POLL_SECS, max(0.0, timeout_secs - waited)))
