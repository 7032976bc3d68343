"""The TrainJob status reporter's HTTP (issue 51 items 3-4): a redirect is
never followed (the bearer token went to a plain-http `/steal` every 5 s),
a server that trickles its reply cannot hold a post open, and a malformed
URL is one line, not a dead thread. Each a local server on 127.0.0.1, over
TLS with a CA made by `openssl` (tests/_status_server.py).
"""

import http.server
import os
import socket
import ssl
import tempfile
import threading
import time

from absl.testing import absltest

from harness.telemetry import status_post
from harness.telemetry import trainer_status
from tests import _status_server
from tests import _support

_WAIT_SECS = 30


def _warnings(logs):
  return [line for line in logs.output if line.startswith("WARNING")]


class _Recorder(http.server.ThreadingHTTPServer):
  """A plain-http server on 127.0.0.1 recording each request's headers."""

  def __init__(self):
    recorder = self
    self.requests = []

    class Handler(http.server.BaseHTTPRequestHandler):

      def log_message(self, *args):
        del args

      def _record(self):
        recorder.requests.append((self.command, self.path,
                                  self.headers.get("Authorization")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

      do_GET = do_POST = _record  # pylint: disable=invalid-name

    super().__init__(("127.0.0.1", 0), Handler)
    self.daemon_threads = True
    self.thread = threading.Thread(target=self.serve_forever,
                                   kwargs={"poll_interval": 0.05}, daemon=True)
    self.thread.start()

  def close(self):
    self.shutdown()
    self.server_close()
    self.thread.join(10)


class _Trickler:
  """A TLS server that reads a request, then answers a byte at a time."""

  def __init__(self, cert_dir, byte_secs=1.0):
    self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    self._context.load_cert_chain(os.path.join(cert_dir, "server.crt"),
                                  os.path.join(cert_dir, "server.key"))
    self._listener = socket.create_server(("127.0.0.1", 0))
    self._listener.settimeout(0.2)
    self.port = self._listener.getsockname()[1]
    self._byte_secs = byte_secs
    self._stop = threading.Event()
    self.bytes_sent = 0
    self._thread = threading.Thread(target=self._serve, daemon=True)
    self._thread.start()

  def _serve(self):
    while not self._stop.is_set():
      try:
        conn, _ = self._listener.accept()
      except OSError:
        continue
      try:
        with self._context.wrap_socket(conn, server_side=True) as tls:
          tls.settimeout(10)
          tls.recv(65536)  # The request (headers and a small body).
          for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}":
            if self._stop.wait(self._byte_secs):
              return
            tls.sendall(bytes([byte]))
            self.bytes_sent += 1
      except OSError:
        pass  # The client cut the post off.

  def close(self):
    self._stop.set()
    self._thread.join(15)
    self._listener.close()


class StatusHttpTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls._certs = tempfile.TemporaryDirectory()
    cls.cert_dir = cls._certs.name
    _status_server.make_certificates(cls.cert_dir)

  @classmethod
  def tearDownClass(cls):
    cls._certs.cleanup()
    super().tearDownClass()

  def setUp(self):
    super().setUp()
    self.token_path = os.path.join(self.create_tempdir().full_path, "token")
    with open(self.token_path, "w", encoding="utf-8") as f:
      f.write("secret-token\n")

  def _endpoint(self, url):
    return trainer_status.Endpoint(
        url=url, ca_cert_path=os.path.join(self.cert_dir, "ca.crt"),
        token_path=self.token_path)

  def _post(self, url, timeout_secs=2.0):
    return status_post.post(
        url, b"{}", token_path=self.token_path,
        ca_cert_path=os.path.join(self.cert_dir, "ca.crt"),
        timeout_secs=timeout_secs)

  def test_a_redirect_is_not_followed_and_the_token_stays_home(self):
    steal = _Recorder()
    self.addCleanup(steal.close)
    server = _status_server.StatusServer(self.cert_dir)
    location = f"http://127.0.0.1:{steal.server_address[1]}/steal"

    def redirect(handler):
      handler.send_response(302)
      handler.send_header("Location", location)
      handler.send_header("Content-Length", "0")
      handler.end_headers()

    server.handle = redirect
    server.start()
    self.addCleanup(server.stop)
    for code_url in (server.url, server.url + "?watch=1"):
      failure = self._post(code_url)
      self.assertEqual(
          failure, f"HTTP 302: a redirect to http://127.0.0.1:"
          f"{steal.server_address[1]} is not followed (the token goes to "
          f"https://127.0.0.1:{server.port} only)")
    with self.assertLogs(level="INFO") as logs:
      reporter = trainer_status.Reporter(
          self._endpoint(server.url), task_label="chief/0",
          min_interval_secs=0.1, timeout_secs=2)
      for step in range(1, 6):
        reporter.record_progress(step=step, max_steps=5)
        time.sleep(0.15)
      self.assertTrue(reporter.finish(10))
    self.assertGreaterEqual(reporter.posts, 2)
    self.assertEqual(steal.requests, [], "the token left for another origin")
    warnings = _warnings(logs)
    self.assertLen(warnings, 1)
    self.assertIn("post 1 failed: HTTP 302: a redirect to http://127.0.0.1:",
                  warnings[0])

  def test_a_trickling_reply_is_cut_off_at_the_bound(self):
    trickler = _Trickler(self.cert_dir, byte_secs=1.0)
    self.addCleanup(trickler.close)
    url = (f"https://127.0.0.1:{trickler.port}"
           f"{_status_server.STATUS_PATH}")
    started = time.monotonic()
    failure = self._post(url, timeout_secs=2.0)  # Each byte within 2 s.
    secs = time.monotonic() - started
    self.assertEqual(failure, "no complete reply within 4 s (2 x the 2 s "
                     "timeout); the post was cut off")
    self.assertLess(secs, 6.0)
    self.assertGreaterEqual(trickler.bytes_sent, 2)  # It was trickling.

  def test_a_trickling_server_does_not_hold_the_reporter(self):
    trickler = _Trickler(self.cert_dir, byte_secs=1.0)
    self.addCleanup(trickler.close)
    url = (f"https://127.0.0.1:{trickler.port}"
           f"{_status_server.STATUS_PATH}")
    with self.assertLogs(level="INFO") as logs:
      reporter = trainer_status.Reporter(
          self._endpoint(url), task_label="chief/0", min_interval_secs=0.1,
          timeout_secs=2)  # Each byte comes within 2 s: only the bound cuts.
      reporter.record_progress(step=1, max_steps=10)
      _support.wait_for(lambda: reporter.posts >= 1, _WAIT_SECS,
                        "the first post to be cut off")
      reporter.record_progress(step=10, max_steps=10)  # The final 100 %.
      _support.wait_for(lambda: reporter.posts >= 2, _WAIT_SECS,
                        "the second post to be cut off")
      self.assertTrue(reporter.finish(10))
    warnings = _warnings(logs)
    self.assertLen(warnings, 1)
    self.assertIn("post 1 failed: no complete reply within 4 s", warnings[0])

  def test_a_malformed_url_is_one_line_and_the_thread_lives(self):
    self.assertRegex(self._post("https://[::1"),
                     r"^malformed status URL 'https://\[::1': .*IPv6")
    self.assertRegex(self._post("http://127.0.0.1:1/x"),
                     "not an https:// URL with a host")
    with self.assertLogs(level="INFO") as logs:
      reporter = trainer_status.Reporter(
          self._endpoint("https://[::1"), task_label="chief/0",
          min_interval_secs=0.05, timeout_secs=1)
      for step in range(1, 4):
        reporter.record_progress(step=step, max_steps=3)
        _support.wait_for(lambda n=step: reporter.posts >= n, _WAIT_SECS,
                          f"post {step}")
      self.assertTrue(reporter.finish(5))
    self.assertEqual(reporter.posts, 3)
    warnings = _warnings(logs)
    self.assertLen(warnings, 1)
    self.assertIn("post 1 failed: malformed status URL", warnings[0])
    self.assertNotIn("Traceback", "\n".join(logs.output))

  def test_an_exception_in_a_post_does_not_end_the_thread(self):
    calls = []

    def broken(*args):
      calls.append(args)
      raise RuntimeError("a bug in the post")

    original = trainer_status._post  # pylint: disable=protected-access
    trainer_status._post = broken  # pylint: disable=protected-access
    self.addCleanup(setattr, trainer_status, "_post", original)
    with self.assertLogs(level="INFO") as logs:
      reporter = trainer_status.Reporter(
          self._endpoint("https://127.0.0.1:1/x"), task_label="chief/0",
          min_interval_secs=0.05, timeout_secs=1)
      reporter.record_progress(step=1, max_steps=2)
      _support.wait_for(lambda: reporter.posts >= 1, _WAIT_SECS, "post 1")
      reporter.record_progress(step=2, max_steps=2)
      _support.wait_for(lambda: reporter.posts >= 2, _WAIT_SECS, "post 2")
      self.assertTrue(reporter.finish(5))
    self.assertLen(calls, 2)
    self.assertIn("post 1 failed: RuntimeError: a bug in the post",
                  _warnings(logs)[0])


if __name__ == "__main__":
  absltest.main()
