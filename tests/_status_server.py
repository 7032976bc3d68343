"""A stand-in for Kubeflow Trainer's status server, over real TLS.

    server = _status_server.StatusServer(cert_dir)   # CA made by `openssl`
    server.start()
    environ = server.environ(token_path)  # the three KUBEFLOW_TRAINER_ vars
    ... server.received  # [Received(...)] in arrival order
    server.stop()

The CA and the server's certificate (for 127.0.0.1) are made with the
`openssl` command line (the `cryptography` package is not in the venv).
Like the Trainer's (`pkg/statusserver/server.go`), it routes POST to the
status path only, answers 200 with the payload, else a metav1.Status JSON.
`reply_code` and `delay_secs` make it refuse or answer slowly.
"""

import dataclasses
import http.server
import json
import os
import ssl
import subprocess
import threading
import time

STATUS_PATH = ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/"
               "trainjobs/mnist/status")
_OPENSSL_TIMEOUT_SECS = 60
_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")  # Fast.


def _openssl(*args, cwd):
  subprocess.run(("openssl",) + args, cwd=cwd, check=True,
                 capture_output=True, timeout=_OPENSSL_TIMEOUT_SECS)


def make_certificates(directory):
  """Writes ca.crt and server.crt/.key (127.0.0.1, localhost) there."""
  _openssl("req", "-x509", *_KEY, "-nodes", "-days", "2",
           "-subj", "/CN=test status CA", "-keyout", "ca.key", "-out",
           "ca.crt", "-addext", "basicConstraints=critical,CA:TRUE",
           "-addext", "keyUsage=critical,keyCertSign,cRLSign",
           cwd=directory)
  _openssl("req", *_KEY, "-nodes", "-subj", "/CN=127.0.0.1",
           "-keyout", "server.key", "-out", "server.csr", cwd=directory)
  with open(os.path.join(directory, "ext.cnf"), "w", encoding="utf-8") as f:
    f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "extendedKeyUsage=serverAuth\n")
  _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey",
           "ca.key", "-CAcreateserial", "-days", "2", "-out", "server.crt",
           "-extfile", "ext.cnf", cwd=directory)


def _reply(handler, code, payload):
  data = json.dumps(payload).encode("utf-8")
  try:
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
  except OSError:
    pass  # The client gave up (a slow reply past its timeout).


@dataclasses.dataclass(frozen=True)
class Received:
  method: str
  path: str
  authorization: str
  content_type: str
  body: object  # The parsed JSON (None when it did not parse).
  at: float  # time.monotonic() on arrival.


class StatusServer:
  """An HTTPS server on 127.0.0.1 recording every request it gets."""

  def __init__(self, cert_dir, port=0):
    self.cert_dir = cert_dir
    if not os.path.exists(os.path.join(cert_dir, "ca.crt")):
      make_certificates(cert_dir)
    self.ca_path = os.path.join(cert_dir, "ca.crt")
    self.received = []
    self.reply_code = 200
    self.delay_secs = 0.0
    self._port = port
    self._httpd = None
    self._thread = None

  @property
  def port(self):
    return self._port

  @property
  def url(self):
    return f"https://127.0.0.1:{self._port}{STATUS_PATH}"

  def environ(self, token_path):
    return {"KUBEFLOW_TRAINER_SERVER_URL": self.url,
            "KUBEFLOW_TRAINER_SERVER_CA_CERT": self.ca_path,
            "KUBEFLOW_TRAINER_SERVER_TOKEN": token_path}

  def start(self):
    """Listens (on the same port again after a stop)."""
    server = self
    class Handler(http.server.BaseHTTPRequestHandler):
      def log_message(self, *args):  # Quiet.
        del args

      def do_POST(self):  # pylint: disable=invalid-name
        server.handle(self)

      def do_GET(self):  # pylint: disable=invalid-name
        _reply(self, 405, {"message": "method not allowed"})

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self._port),
                                            Handler)
    httpd.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(self.cert_dir, "server.crt"),
                            os.path.join(self.cert_dir, "server.key"))
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    self._port = httpd.server_address[1]
    self._httpd = httpd
    self._thread = threading.Thread(target=httpd.serve_forever,
                                    kwargs={"poll_interval": 0.05},
                                    daemon=True)
    self._thread.start()
    return self

  def stop(self):
    """Stops listening: connections are refused until `start`."""
    if self._httpd is not None:
      self._httpd.shutdown()
      self._httpd.server_close()
      self._thread.join(10)
      self._httpd = None

  def handle(self, handler):
    """Records one POST, then answers it as the test set the server up."""
    length = int(handler.headers.get("Content-Length") or 0)
    raw = handler.rfile.read(length)
    try:
      body = json.loads(raw)
    except ValueError:
      body = None
    self.received.append(Received(
        method="POST", path=handler.path,
        authorization=handler.headers.get("Authorization", ""),
        content_type=handler.headers.get("Content-Type", ""), body=body,
        at=time.monotonic()))
    if self.delay_secs:
      time.sleep(self.delay_secs)
    if handler.path != STATUS_PATH:
      _reply(handler, 404, {"message": "Not found"})
    elif self.reply_code != 200:
      _reply(handler, self.reply_code, {
          "kind": "Status", "status": "Failure", "code": self.reply_code,
          "message": f"refused with {self.reply_code} by the test"})
    else:
      _reply(handler, 200, body)

  def progress(self):
    """progressPercentage of each status received, in order."""
    return [r.body["trainerStatus"].get("progressPercentage")
            for r in self.received if r.body]
