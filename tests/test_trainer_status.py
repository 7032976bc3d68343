"""harness.telemetry.trainer_status: progress posted to a Kubeflow Trainer
status server (a local HTTPS stand-in with a CA made here, `tests/_status_server`).

What the server receives and the log lines are checked: the wire format,
a token rewritten between posts, the interval, the server down, slow, and
answering 4xx / 5xx (one line, quiet, one line when it works again), and
that recording never waits for the network.
"""

import os
import re
import sys
import tempfile
import time

from absl.testing import absltest
from absl.testing import parameterized
import jsonschema
import numpy as np
import pytest
import yaml

from harness import errors
from harness.cli import job as job_lib
from harness.telemetry import trainer_status
from tests import _status_server
from tests import _support
from tests import conftest

_WAIT_SECS = 30
_RELEASED = conftest.K8S_CRDS_DIR / "released"
_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def _metrics(status):
  return {m["name"]: m["value"] for m in status.get("metrics", [])}


class TrainerStatusTest(parameterized.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls._certs = tempfile.TemporaryDirectory()  # One CA for the class.
    cls.cert_dir = cls._certs.name

  @classmethod
  def tearDownClass(cls):
    cls._certs.cleanup()
    super().tearDownClass()

  def setUp(self):
    super().setUp()
    self.server = _status_server.StatusServer(self.cert_dir)
    self.server.start()
    self.addCleanup(self.server.stop)
    self.token_path = os.path.join(self.create_tempdir().full_path, "token")
    self._write_token("token-1")

  def _write_token(self, text):
    with open(self.token_path, "w", encoding="utf-8") as f:
      f.write(text + "\n")

  def _reporter(self, **kwargs):
    endpoint = trainer_status.endpoint_from_environ(
        self.server.environ(self.token_path))
    kwargs.setdefault("min_interval_secs", 0.2)
    kwargs.setdefault("timeout_secs", 5)
    reporter = trainer_status.Reporter(endpoint, task_label="chief/0",
                                       **kwargs)
    self.addCleanup(reporter.finish, 1)
    return reporter

  def _wait_received(self, count):
    _support.wait_for(lambda: len(self.server.received) >= count, _WAIT_SECS,
                      f"{count} post(s) to reach the server",
                      details=lambda: repr(self.server.received))

  def test_posts_trainer_status_as_the_trainer_reads_it(self):
    with self.assertLogs(level="INFO") as logs:
      reporter = self._reporter()
      reporter.record_eval({"accuracy": np.float32(0.875),
                            "global_step": np.int64(50), "note": "text"})
      reporter.record_progress(step=50, max_steps=200, steps_per_sec=25.0,
                               examples_per_sec=800.0, loss=0.5)
      self.assertTrue(reporter.finish(10))
    last = self.server.received[-1]
    self.assertEqual((last.method, last.path, last.authorization,
                      last.content_type),
                     ("POST", _status_server.STATUS_PATH, "Bearer token-1",
                      "application/json"))
    self.assertEqual(list(last.body), ["trainerStatus"])
    status = last.body["trainerStatus"]
    self.assertEqual(status["progressPercentage"], 25)
    self.assertEqual(status["estimatedRemainingSeconds"], 6)  # 150 / 25.
    self.assertRegex(status["lastUpdatedTime"], _RFC3339)
    self.assertEqual(_metrics(status), {
        "loss": "0.5", "global_step": "50", "max_steps": "200",
        "steps_per_sec": "25", "examples_per_sec": "800",
        "eval_accuracy": "0.875", "eval_global_step": "50"})
    self.assertTrue(all(isinstance(m["value"], str)
                        for m in status["metrics"]))
    self.assertTrue(any("trainer status | chief/0 | posting progress to "
                        "TrainJob team/mnist at most every 0.2 s" in line
                        for line in logs.output), logs.output)

  def test_statuses_fit_the_released_trainjob_crds(self):
    crds = sorted(_RELEASED.glob("trainer-v*/trainer.kubeflow.org_trainjobs"
                                 ".yaml"))
    if not crds:
      self.skipTest(f"no released Trainer CRDs under {_RELEASED} (the "
                    "repository ships them: restore tests/data)")
    reporter = self._reporter(min_interval_secs=0.05)
    long_name = "m" * 70  # Over the API's 64 characters: left out.
    for numbers in ({"step": 0, "max_steps": 10**10, "steps_per_sec": 1e-9},
                    {"step": 10**10, "max_steps": 10**10,
                     "steps_per_sec": 1e-9, "loss": float("nan")},
                    {"step": 3, "steps_per_sec": 2.0, "loss": 1e-30}):
      reporter.record_eval({long_name: 1.0, "auc": 0.5})
      reporter.record_progress(**numbers)
      count = len(self.server.received) + 1
      self._wait_received(count)
    reporter.finish(10)
    for path in crds:
      with open(path, encoding="utf-8") as f:
        crd = yaml.safe_load(f)
      schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
          "properties"]["status"]["properties"]["trainerStatus"]
      for received in self.server.received:
        status = received.body["trainerStatus"]
        jsonschema.validate(status, schema)  # Raises, naming the field.
        self.assertNotIn(long_name, str(status))
        self.assertIn("lastUpdatedTime", status)  # The CRD's CEL rule.
        for field in ("progressPercentage", "estimatedRemainingSeconds"):
          self.assertLessEqual(status.get(field, 0), 2**31 - 1)  # int32.

  def test_no_eta_before_the_rate_no_percentage_without_max_steps(self):
    reporter = self._reporter()
    reporter.record_progress(step=0, max_steps=100)
    self._wait_received(1)
    reporter.record_progress(step=7, steps_per_sec=3.0)
    reporter.finish(10)
    first, last = (r.body["trainerStatus"] for r in
                   (self.server.received[0], self.server.received[-1]))
    self.assertEqual(first["progressPercentage"], 0)
    self.assertNotIn("estimatedRemainingSeconds", first)
    self.assertNotIn("progressPercentage", last)
    self.assertNotIn("estimatedRemainingSeconds", last)
    self.assertEqual(_metrics(last)["global_step"], "7")

  def test_token_is_read_again_before_each_post(self):
    reporter = self._reporter()
    reporter.record_progress(step=1, max_steps=10)
    self._wait_received(1)
    self._write_token("token-2")  # The kubelet rotated it.
    reporter.record_progress(step=2, max_steps=10)
    reporter.finish(10)
    self.assertEqual([r.authorization for r in self.server.received],
                     ["Bearer token-1", "Bearer token-2"])

  def test_posts_at_most_once_an_interval_and_the_latest_last(self):
    reporter = self._reporter(min_interval_secs=0.5)
    deadline = time.monotonic() + 1.6
    step = 0
    while time.monotonic() < deadline:
      step += 1
      reporter.record_progress(step=step, max_steps=100000)
      time.sleep(0.01)
    reporter.finish(10)
    times = [r.at for r in self.server.received]
    # ~160 records in 1.6 s: 4 posts, 5 with the last one at finish.
    self.assertBetween(len(times), 2, 5)
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Arrivals, not starts: a slow TLS handshake of one post shortens the
    # gap after it, so half the interval (unthrottled: ~0.01 s).
    self.assertGreaterEqual(min(gaps), 0.25, gaps)
    self.assertEqual(_metrics(self.server.received[-1].body[
        "trainerStatus"])["global_step"], str(step))

  def _outage_then_recovery(self, break_server, mend_server):
    """Posts through an outage; returns the log lines of the reporter."""
    with self.assertLogs(level="INFO") as logs:
      reporter = self._reporter(min_interval_secs=0.1, timeout_secs=0.5)
      reporter.record_progress(step=1, max_steps=10)
      _support.wait_for(lambda: reporter.posts == 1, _WAIT_SECS, "post 1")
      break_server()
      for step in (2, 3, 4):  # Three failed posts.
        reporter.record_progress(step=step, max_steps=10)
        _support.wait_for(lambda s=step: reporter.posts == s, _WAIT_SECS,
                          f"post {step} to end")
      mend_server()
      reporter.record_progress(step=5, max_steps=10)
      reporter.finish(10)
    lines = [line for line in logs.output if "trainer status" in line]
    # Quiet: the start, one failure, one recovery; nothing else.
    self.assertLen(lines, 3, lines)
    return ([l for l in lines if l.startswith("WARNING")],
            [l for l in lines if "succeeded" in l])

  def test_server_down_one_line_then_quiet_then_one_line(self):
    warnings, recovered = self._outage_then_recovery(
        self.server.stop, self.server.start)
    self.assertLen(warnings, 1)
    self.assertRegex(warnings[0], r"chief/0 \| post 2 failed: .*refused.*; "
                     "training goes on, quiet until a post succeeds$")
    self.assertLen(recovered, 1)
    self.assertIn("post 5 succeeded: posting again after 3 failed",
                  recovered[0])
    self.assertEqual(_metrics(self.server.received[-1].body[
        "trainerStatus"])["global_step"], "5")

  @parameterized.parameters(403, 422, 500, 503)
  def test_refused_one_line_with_the_servers_message(self, code):
    def refuse():
      self.server.reply_code = code
    def accept():
      self.server.reply_code = 200
    warnings, recovered = self._outage_then_recovery(refuse, accept)
    self.assertLen(warnings, 1)
    self.assertIn(f"failed: HTTP {code}: refused with {code} by the test",
                  warnings[0])
    self.assertLen(recovered, 1)

  def test_slow_server_is_bounded_and_never_waited_for(self):
    self.server.delay_secs = 3.0
    with self.assertLogs(level="INFO") as logs:
      reporter = self._reporter(min_interval_secs=0.1, timeout_secs=0.5)
      slowest = 0.0
      for step in range(1, 50):
        started = time.monotonic()
        reporter.record_progress(step=step, max_steps=50)
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.01)
      started = time.monotonic()
      reporter.finish(5)
      finish_secs = time.monotonic() - started
    self.assertLess(slowest, 0.05)  # Recording never waits for a post.
    self.assertLess(finish_secs, 5.5)
    failures = [l for l in logs.output if l.startswith("WARNING")]
    self.assertLen(failures, 1)
    self.assertRegex(failures[0], r"failed: .*timed out")

  def test_finish_without_waiting_leaves_a_post_in_flight_quietly(self):
    self.server.delay_secs = 3.0  # What a failing task must not wait for.
    reporter = self._reporter(timeout_secs=10)
    reporter.record_progress(step=1, max_steps=2)
    self._wait_received(1)
    with self.assertNoLogs(level="INFO"):
      started = time.monotonic()
      self.assertFalse(reporter.finish(0))
    self.assertLess(time.monotonic() - started, 0.5)

  def test_endpoint_from_environ(self):
    self.assertIsNone(trainer_status.endpoint_from_environ({}))
    environ = self.server.environ(self.token_path)
    self.assertEqual(trainer_status.endpoint_from_environ(environ),
                     trainer_status.Endpoint(
                         url=self.server.url,
                         ca_cert_path=self.server.ca_path,
                         token_path=self.token_path))
    partial = dict(environ)
    del partial[trainer_status.TOKEN_ENV]
    with self.assertRaisesRegex(errors.ConfigError,
                                r"\$KUBEFLOW_TRAINER_SERVER_TOKEN not set"):
      trainer_status.endpoint_from_environ(partial)
    plain = dict(environ, KUBEFLOW_TRAINER_SERVER_URL="http://x/status")
    with self.assertRaisesRegex(errors.ConfigError, "https://"):
      trainer_status.endpoint_from_environ(plain)

  def test_the_binary_reads_the_endpoint_a_partial_one_is_a_warning(self):
    environ = self.server.environ(self.token_path)
    self.assertEqual(job_lib.trainer_status_endpoint(environ).url,
                     self.server.url)
    self.assertIsNone(job_lib.trainer_status_endpoint({}))
    del environ[trainer_status.CA_CERT_ENV]
    with self.assertLogs(level="WARNING") as logs:
      endpoint = job_lib.trainer_status_endpoint(environ)  # No error.
    self.assertIsNone(endpoint)
    self.assertIn("trainer status | not reporting progress: "
                  "$KUBEFLOW_TRAINER_SERVER_CA_CERT not set", logs.output[0])

  def test_a_ca_that_did_not_sign_the_server_is_a_failure(self):
    other = _status_server.StatusServer(self.create_tempdir().full_path)
    endpoint = trainer_status.Endpoint(url=self.server.url,
                                       ca_cert_path=other.ca_path,
                                       token_path=self.token_path)
    with self.assertLogs(level="INFO") as logs:
      reporter = trainer_status.Reporter(endpoint, task_label="chief/0",
                                         min_interval_secs=0.1)
      reporter.record_progress(step=1, max_steps=2)
      reporter.finish(10)
    self.assertEqual(self.server.received, [])
    self.assertTrue(any("CERTIFICATE_VERIFY_FAILED" in line
                        for line in logs.output), logs.output)


class TrainerStatusRunTest(absltest.TestCase):

  @pytest.mark.slow
  def test_a_real_run_reports_progress_rising_to_100(self):
    """... and, in a restarted JobSet's pod, shows the attempt in its
    lines (issue 36 item 5, end to end: the plan, then log_format)."""
    cert_dir = self.create_tempdir("certs").full_path
    server = _status_server.StatusServer(cert_dir).start()
    self.addCleanup(server.stop)
    token_path = os.path.join(cert_dir, "token")
    with open(token_path, "w", encoding="utf-8") as f:
      f.write("pod-token\n")
    result = _support.run(
        [sys.executable, "-m", "harness.main", "--model_fn=mnist_mlp",
         "--input_fn=synthetic", "--max_steps=300",
         "--log_step_count_steps=50", "--eval_steps=2",
         f"--model_dir={self.create_tempdir().full_path}"],
        env=conftest.child_env(extra=dict(server.environ(token_path),
                                          JOBSET_RESTART_ATTEMPT="2")),
        timeout_secs=600)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertIn("trainer status | local attempt 2 | posting progress to "
                  "TrainJob team/mnist", result.output)
    self.assertRegex(result.output, r"train \| local attempt 2 \| step "
                     r"300/300 \|")
    self.assertNotIn("train | local | step", result.output)
    ours = "\n".join(line for line in result.output.splitlines()
                     if "trainer status |" in line or " attempt 2 |" in line)
    self.assertEqual(_support.long_lines(ours), [])  # <= 160 characters.
    progress = server.progress()
    self.assertGreaterEqual(len(progress), 2, server.received)
    self.assertLess(progress[0], 100)
    self.assertEqual(progress, sorted(progress))  # Rising.
    self.assertEqual(progress[-1], 100)
    self.assertEqual({r.authorization for r in server.received},
                     {"Bearer pod-token"})
    last = server.received[-1].body["trainerStatus"]
    self.assertEqual(_metrics(last)["global_step"], "300")
    self.assertIn("eval_accuracy", _metrics(last))  # Evaluated after.


if __name__ == "__main__":
  absltest.main()
