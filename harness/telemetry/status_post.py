"""One POST of the TrainJob status: https only, no redirects, bounded whole.

    failure = status_post.post(url, body, token_path=..., ca_cert_path=...,
                               timeout_secs=5.0)   # None: HTTP 200

`harness.telemetry.trainer_status`'s reporter thread calls it. What it promises
(issue 51):
- The bearer token goes to the configured https origin only: a redirect
  (3xx) is a failure naming where it pointed, never followed.
- A post is bounded as a whole: connecting by `timeout_secs`, the rest
  (TLS, request, reply) by `2 * timeout_secs` in all; a server that
  trickles its reply a byte at a time is cut off then (a watchdog shuts the
  socket down).
- Any failure, a malformed URL included, is one short reason (a string),
  never an exception.
The standard library only, no TensorFlow.
"""

import http.client
import json
import socket
import ssl
import threading
import urllib.parse

__all__ = ["post", "REASON_CHARS"]

REASON_CHARS = 90  # Of a failure's reason: a log line stays < 160.
_REPLY_BYTES = 4096


def _origin(url):
  try:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else repr(url)
  except ValueError:
    return repr(url[:40])


def _target(url):
  """(host, port, path) of an https URL; raises ValueError naming why."""
  parts = urllib.parse.urlsplit(url)  # ValueError: "Invalid IPv6 URL".
  if parts.scheme != "https" or not parts.hostname:
    raise ValueError("not an https:// URL with a host")
  path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
  return parts.hostname, parts.port or 443, path


def post(url, body, *, token_path, ca_cert_path, timeout_secs):
  """POSTs `body` (bytes) with the token of `token_path`.

  Returns:
    None on HTTP 200, else one short reason.
  """
  try:
    host, port, path = _target(url)
  except ValueError as e:
    return f"malformed status URL {url[:60]!r}: {e}"
  try:
    with open(token_path, encoding="utf-8") as f:  # local-fs: token
      token = f.read().strip()
  except OSError as e:
    return f"cannot read the token file {token_path}: {e}"
  if not token:
    return f"the token file {token_path} is empty"
  try:
    # The CA file is read each time too (the Trainer may rotate it); no
    # proxy: the status server is a Service of the cluster.
    context = ssl.create_default_context(cafile=ca_cert_path)
    raw = socket.create_connection((host, port), timeout=timeout_secs)
  except (OSError, ValueError) as e:  # A bad CA file, refused, no route.
    return f"{type(e).__name__}: {e}"
  headers = {"Authorization": f"Bearer {token}",
             "Content-Type": "application/json", "Connection": "close"}
  return _exchange(raw, context, (host, port, path), body, headers,
                   timeout_secs, url)


def _exchange(raw, context, target, body, headers, timeout_secs, url):
  """TLS, request and reply on the connected socket `raw`, cut off
  `2 * timeout_secs` from now."""
  host, port, path = target
  bound = 2 * timeout_secs
  watch = raw.dup()  # Shutting it down ends any blocked read or write.
  cut = threading.Event()

  def cut_off():
    cut.set()
    try:
      watch.shutdown(socket.SHUT_RDWR)
    except OSError:
      pass

  timer = threading.Timer(bound, cut_off)
  timer.daemon = True
  timer.start()
  connection = http.client.HTTPSConnection(host, port, timeout=timeout_secs,
                                           context=context)
  try:
    connection.sock = context.wrap_socket(raw, server_hostname=host)
    connection.request("POST", path, body=body, headers=headers)
    reply = connection.getresponse()
    text = reply.read(_REPLY_BYTES)
    return _outcome(reply, text, url)
  except Exception as e:  # pylint: disable=broad-except
    if cut.is_set():
      return (f"no complete reply within {bound:g} s (2 x the {timeout_secs:g}"
              " s timeout); the post was cut off")
    return f"{type(e).__name__}: {e}"
  finally:
    timer.cancel()
    connection.close()
    raw.close()
    watch.close()


def _outcome(reply, text, url):
  """None for 200; else the status and the server's message, or where a
  redirect pointed (not followed: the token stays with `url`'s origin)."""
  if reply.status == 200:
    return None
  if 300 <= reply.status < 400:
    location = reply.getheader("Location") or "nowhere"
    return (f"HTTP {reply.status}: a redirect to {_origin(location)} is not "
            f"followed (the token goes to {_origin(url)} only)")
  return f"HTTP {reply.status}: {_server_message(text, reply.reason)}"


def _server_message(data, reason):
  """The `message` of the server's metav1.Status reply, else its text."""
  text = data.decode("utf-8", "replace") or reason
  try:
    text = json.loads(text).get("message") or text
  except (ValueError, AttributeError):
    pass
  return " ".join(str(text).split())[:REASON_CHARS]
