"""Which standalone client drives a server: claims, heartbeats, expiry.

A standalone client (`harness.distribute.remote`) claims every server of
its remote cluster before sending any graph, and renews it (heartbeat)::

    claims = server_claim.claim_all(cluster, timeout_secs=15)  # or raises
    ...  # train
    claims.release(clean=True)

A claim lives on the server itself: two resource variables in the container
`harness_claim` of the server's CPU (`holder`: who, as JSON; `deadline`: the
server's own clock, `tf.timestamp()`, plus the client's timeout), changed
only inside a `tf.CriticalSection` so that two clients claiming at the same
instant cannot both win. A claim is granted when nobody holds the server,
the holder is this client, or the holder's deadline passed. A second live
client gets `RemoteClusterBusyError` naming the holder.

The server (`harness.server`) watches its claim (`Watchdog`): once a
holder's deadline passes without a heartbeat, the client is gone, and
whatever it left on the server (sessions, a step blocked in an all-reduce
with its threads, memory) is released by restarting the server in place
(same pid and port; see `harness.server`). Aborting the blocked step instead
would leave the collective runtime aborted for every later client.
A client that ends cleanly clears its claim (renewed for the sessions'
close first, `Claims.closing`); one that fails expires it: restart at once.
"""

import json
import os
import socket
import threading
import time
import uuid

from absl import logging

from harness import errors
from harness.distribute.claim_graph import RESTART
from harness.distribute.claim_graph import ClaimOps
from harness.distribute.claim_graph import server_device
from harness.distribute.claim_graph import server_task
from harness.distribute.claim_graph import tf_module as _tf
from harness.state import processes

__all__ = ["Claims", "claim_all", "Watchdog"]

_RPC_TIMEOUT_MS = 10000
# A claim's life once sessions close: a close waits for tf.data's autotuning
# thread, which wakes only at the end of its period (up to 60 s, TF 2.21),
# and the server runs nothing else meanwhile, renewals included.
CLOSE_TIMEOUT_SECS = 90.0


class _Server:
  """One server's claim graph and session (re-created after a restart)."""

  def __init__(self, job, index, address):
    self.job, self.index, self.address = job, index, address
    self.label = f"{job}/{index} at {address}"
    self.ops = ClaimOps(server_device(job, index))
    self.session = None

  def run(self, action, token, timeout):
    """Runs the claim op; returns (granted, holder text, seconds left)."""
    tf = _tf()
    if self.session is None:
      self.session = tf.compat.v1.Session(
          f"grpc://{self.address}", graph=self.ops.graph,
          config=tf.compat.v1.ConfigProto(
              operation_timeout_in_ms=_RPC_TIMEOUT_MS,
              device_filters=[server_task(self.job, self.index)]))
    try:
      granted, holder, left = self.session.run(self.ops.change, feed_dict={
          self.ops.token: token, self.ops.timeout: timeout,
          self.ops.action: action})
    except tf.errors.OpError:
      self.close()  # A restarted server forgot the session.
      raise
    return bool(granted), holder.decode(), float(left)

  def close(self):
    """Drops the session; closing it may fail on a restarted server."""
    session, self.session = self.session, None
    if session is not None:
      try:
        session.close()
      except _tf().errors.OpError as e:
        # The session is closed either way (TF marks it closed before the
        # RPC); the server that held it restarted or is gone.
        logging.debug("remote | client | closing the claim session of %s: "
                      "%s", self.label, e)


def _holder(text):
  """The holder's JSON as a dict ({} if it is not a client's)."""
  try:
    who = json.loads(text)
  except ValueError:
    return {}
  return who if isinstance(who, dict) else {}


def _describe_holder(text, left_secs):
  if text == RESTART:
    return "nobody (the server is restarting to release a lost client)"
  who = _holder(text)
  name = (f"host {who.get('host')}, pid {who.get('pid')}, started "
          f"{who.get('started')}") if who else repr(text)
  return (f"{name}; its claim expires in {max(0.0, left_secs):.0f} s unless "
          "renewed")


def _dead_on_this_host(text):
  """True if the holder is a client process of this host that has exited.

  Its pid means something only in our PID namespace and boot (containers
  sharing a host name have their own pids); a claim without them (an older
  client) is left to expire.
  """
  who = _holder(text)
  if not isinstance(who.get("pid"), int) or who["pid"] == os.getpid():
    return False
  return processes.same_space(
      who.get("host"), who.get("pid_ns"), who.get("boot_id")) and (
          not processes.pid_alive(who["pid"]))


class Claims:
  """This client's claims on every server, renewed by a heartbeat thread."""

  def __init__(self, servers, token, timeout_secs):
    self._servers = servers
    self._token = token
    self._timeout = float(timeout_secs)
    self._stop = threading.Event()
    self._lock = threading.Lock()  # One claim op per server at a time.
    self.lost = None  # Why a heartbeat failed, once one did.
    self.closing_since = None  # time.monotonic() when sessions began closing.
    self._thread = threading.Thread(target=self._beat, daemon=True,
                                    name="harness-claim-heartbeat")

  def _renew(self, server):
    with self._lock:
      return server.run("claim", self._token, self._timeout)

  def closing(self):
    """Before the first session closes: renews every claim for
    `CLOSE_TIMEOUT_SECS`; a renewal that fails from now on is not a loss."""
    if self.closing_since is not None:
      return
    self.closing_since = time.monotonic()
    self._timeout = max(self._timeout, CLOSE_TIMEOUT_SECS)
    for server in self._servers:
      try:
        self._renew(server)
      except Exception as e:  # pylint: disable=broad-except
        logging.debug("remote | client | renewing the claim of %s for the "
                      "close: %s", server.label, e)

  def _beat(self):
    while not self._stop.wait(self._timeout / 4):
      for server in self._servers:
        try:
          granted, holder, left = self._renew(server)
        except Exception as e:  # pylint: disable=broad-except
          if self._stop.is_set():  # Released meanwhile: nothing is lost.
            return
          if self.closing_since is not None:  # Busy closing; still claimed.
            logging.debug("remote | client | renewing the claim of %s while "
                          "it closes a session: %s", server.label, e)
            continue
          # One line: TensorFlow's messages run over several.
          text = (getattr(e, "message", None) or str(e)).strip()
          first = text.splitlines()[0][:100] if text else ""
          self.lost = f"{server.label}: {type(e).__name__}: {first}"
        else:
          if not granted:
            self.lost = (f"{server.label} is now held by "
                         + _describe_holder(holder, left))
        if self.lost:
          logging.error("remote | client | lost the claim of %s", self.lost)
          return

  def release(self, *, clean):
    """Ends the claims: cleared (`clean`) or expired (servers restart)."""
    self._stop.set()
    if self._thread.is_alive():
      self._thread.join(timeout=30)
    for server in self._servers:
      try:
        server.run("clean" if clean else "expire", self._token, self._timeout)
      except Exception as e:  # pylint: disable=broad-except
        logging.warning("remote | client | cannot end the claim of %s: %s",
                        server.label, e)
      server.close()


def _busy_error(server, holder, left, timeout_secs):
  return errors.RemoteClusterBusyError(
      f"The server of {server.label} is driven by another client: "
      f"{_describe_holder(holder, left)}. Two clients on the same servers "
      "would interleave their steps. Fix: wait for that client to finish, or "
      "stop it (its servers restart once its claim expires, "
      f"{timeout_secs:g} s after its last renewal), or use other servers.")


def _client_token():
  """This client's claim: who it is, where, since when (JSON text)."""
  pid_ns, boot_id = processes.process_space()
  return json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                     "pid_ns": pid_ns, "boot_id": boot_id,
                     "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                              time.gmtime()),
                     "id": uuid.uuid4().hex[:8]}, sort_keys=True)


def _expire_dead_holder(server, holder, left, claims, timeout_secs):
  """Expires the claim of a dead client of this host; else raises busy."""
  if not _dead_on_this_host(holder):
    claims.release(clean=True)
    raise _busy_error(server, holder, left, timeout_secs)
  logging.warning(
      "remote | client | %s: its claim holder (pid %s) is no longer "
      "running on this host: expiring it; the server restarts",
      server.label, _holder(holder).get("pid"))
  logging.debug("remote | client | the expired claim: %s", holder)
  server.run("expire", holder, timeout_secs)


def claim_all(cluster, *, timeout_secs, wait_secs):
  """Claims every server of `cluster` for this client; starts heartbeats.

  A holder that is a dead process of this host (a killed client) has its
  claim expired at once; its servers restart, and this call waits up to
  `wait_secs` for them to come back before claiming them.

  Args:
    cluster: {job: [address, ...]}.
    timeout_secs: a claim not renewed for this long expires (the servers
      then restart); heartbeats run every `timeout_secs / 4`.
    wait_secs: how long to wait for servers that restart.

  Returns:
    A `Claims`; call `release(clean=...)` when training ends.

  Raises:
    RemoteClusterBusyError: another live client holds a server (the claims
      taken so far are released).
    RemoteClusterError: a restarting server is not back within `wait_secs`.
  """
  tf = _tf()
  token = _client_token()
  servers = [_Server(job, index, address)
             for job, addresses in cluster.items()
             for index, address in enumerate(addresses)]
  claims = Claims(servers, token, timeout_secs)
  pending = list(servers)
  deadline = time.monotonic() + wait_secs
  while pending:
    server = pending[0]
    try:
      granted, holder, left = server.run("claim", token, timeout_secs)
    except tf.errors.OpError as e:
      if time.monotonic() > deadline:
        claims.release(clean=True)
        raise errors.RemoteClusterError(
            f"The server of {server.label} did not answer the claim within "
            f"{wait_secs:g} s ({type(e).__name__}: {e}). Fix: check that it "
            "runs (`python -m harness.server`), or raise "
            "--remote_connect_timeout_secs.") from e
      time.sleep(0.5)
      continue
    if granted:
      pending.pop(0)
      continue
    if holder != RESTART and left > 0:
      _expire_dead_holder(server, holder, left, claims, timeout_secs)
    elif time.monotonic() > deadline:
      claims.release(clean=True)
      raise errors.RemoteClusterError(
          f"The server of {server.label} did not restart within "
          f"{wait_secs:g} s after its previous client was lost. Fix: check "
          "its log; restart it by hand if needed.")
    time.sleep(0.5)
  claims._thread.start()  # pylint: disable=protected-access
  logging.info("remote | client | claimed %d server(s) (claim renewed every "
               "%g s, expires after %g s)", len(servers), timeout_secs / 4,
               timeout_secs)
  return claims


class Watchdog:
  """The server side: reports when its claim's holder stopped renewing it."""

  def __init__(self, target, job, index):
    tf = _tf()
    self._ops = ClaimOps(server_device(job, index))
    # Only this task: a session that lists the whole cluster's devices
    # would dial tasks not started yet, and gRPC then refuses the clients'
    # steps to them for its reconnect backoff ("Connection refused").
    self._session = tf.compat.v1.Session(
        target, graph=self._ops.graph, config=tf.compat.v1.ConfigProto(
            device_filters=[server_task(job, index)]))
    self._session.run(self._ops.set_watched)

  def lost_client(self):
    """Who was lost (the holder whose claim expired), else None."""
    holder, deadline, now = self._session.run(self._ops.watch)
    holder = holder.decode()
    if holder == RESTART:
      return "(claim expired by its client or a successor)"
    if holder and now > deadline:
      return holder
    return None
