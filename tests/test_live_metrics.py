"""Live Prometheus metrics: `--metrics_port` / `RunConfig(metrics_port=)`.

The fast tests serve in-process and scrape over HTTP; the slow one scrapes
a real `python -m harness.main` while it trains.
"""

import math
import re
import signal
import socket
import threading
import time
import urllib.request

from absl.testing import absltest
import pytest

from harness import errors
from harness import fields
from harness.cli import flags
from harness.cli import job_config
from harness.cli import results_text
from harness.cluster import jobs
from harness.launch import ports
from harness.telemetry import live_metrics
from tests import _support

_SCRAPE_TIMEOUT_SECS = 10
_SERIES = re.compile(r"^(harness_\w+)\{([^}]*)\} (\S+)$", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def scrape(url):
  """{(name, task, metric or None): value} of the harness_ series at url."""
  with urllib.request.urlopen(url, timeout=_SCRAPE_TIMEOUT_SECS) as reply:
    text = reply.read().decode("utf-8")
  series = {}
  for name, labels, value in _SERIES.findall(text):
    labels = dict(_LABEL.findall(labels))
    series[(name, labels["task"], labels.get("metric"))] = float(value)
  return series


def non_loopback_ipv4():
  """This machine's outward IPv4 address (no packet sent), or None."""
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
    try:
      probe.connect(("10.255.255.255", 1))
    except OSError:
      return None
    address = probe.getsockname()[0]
  return None if address.startswith("127.") else address


def reachable(host, port):
  try:
    with socket.create_connection((host, port), timeout=5):
      return True
  except OSError:
    return False


class LiveMetricsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.addCleanup(live_metrics.stop)
    self.port = ports.pick_free_port()

  def test_off_by_default_and_records_are_no_ops(self):
    self.assertEqual(job_config.JobConfig().metrics_port, 0)
    self.assertIsNone(live_metrics.serve(port=0, task_label="chief/0"))
    self.assertIsNone(live_metrics.url())
    live_metrics.record_progress("chief/0", step=5, steps_per_sec=1.0)
    live_metrics.record_eval({"loss": 1.0}, 5)
    live_metrics.record_checkpoint(5)

  def test_progress_checkpoint_eval_and_restarts_are_served(self):
    now = [100.0]
    url = live_metrics.serve(port=self.port, task_label="worker/1",
                             environ={jobs.TASK_RESTARTS_ENV: "2"})
    self.assertEqual(url, f"http://127.0.0.1:{self.port}/metrics")
    live_metrics.record_session_start("worker/1", step=0, first=True)
    live_metrics.record_progress(
        "worker/1", step=250, max_steps=1000, steps_per_sec=50.0,
        examples_per_sec=1600.0, loss=0.25)
    live_metrics.record_checkpoint(200, clock=lambda: now[0])
    now[0] = 107.5
    live_metrics.record_eval({"accuracy": 0.5, "global_step": 200,
                              "note": "text"}, 200)
    live_metrics.record_session_start("worker/1", step=240, first=False)
    got = scrape(url)
    expected = {
        "harness_global_step": 240, "harness_steps_per_second": 50,
        "harness_examples_per_second": 1600, "harness_loss": 0.25,
        "harness_max_steps": 1000, "harness_progress_percent": 25,
        "harness_eta_seconds": 15, "harness_last_checkpoint_step": 200,
        "harness_seconds_since_last_checkpoint": 7.5,
        "harness_eval_global_step": 200, "harness_restarts": 3}
    for name, value in expected.items():
      self.assertAlmostEqual(got[(name, "worker/1", None)], value, msg=name)
    self.assertEqual(got[("harness_eval_metric", "worker/1", "accuracy")], 0.5)
    self.assertNotIn(("harness_eval_metric", "worker/1", "note"), got)
    self.assertNotIn(("harness_eval_metric", "worker/1", "global_step"), got)

  def test_no_checkpoint_yet_is_nan_and_unknown_max_steps_leaves_eta_out(self):
    url = live_metrics.serve(port=self.port, task_label="local")
    live_metrics.record_progress("local", step=10, steps_per_sec=2.0)
    got = scrape(url)
    self.assertTrue(math.isnan(
        got[("harness_seconds_since_last_checkpoint", "local", None)]))
    self.assertNotIn(("harness_eta_seconds", "local", None), got)
    self.assertNotIn(("harness_progress_percent", "local", None), got)

  def test_evaluation_results_reach_the_endpoint(self):
    from harness.core import evaluation  # lazy: TensorFlow, this test only
    url = live_metrics.serve(port=self.port, task_label="evaluator/0")
    evaluation.write_dict_to_summary(self.create_tempdir().full_path,
                                     {"loss": 0.75, "global_step": 30}, 30)
    got = scrape(url)
    self.assertEqual(got[("harness_eval_metric", "evaluator/0", "loss")], 0.75)
    self.assertEqual(got[("harness_eval_global_step", "evaluator/0", None)], 30)

  def test_one_endpoint_a_process(self):
    url = live_metrics.serve(port=self.port, task_label="chief/0")
    self.assertEqual(
        live_metrics.serve(port=ports.pick_free_port(), task_label="x/0"), url)

  def test_idle_connections_are_closed_within_the_bound(self):
    idle_secs = 0.5
    url = live_metrics.serve(port=self.port, task_label="chief/0",
                             idle_timeout_secs=idle_secs)
    threads_before = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", self.port), timeout=30)
            for _ in range(8)]
    started = time.monotonic()
    for connection in idle:
      with connection:
        self.assertEqual(connection.recv(1), b"", "closed by the server")
    closed_after = time.monotonic() - started
    # Each was closed after about the setting; 3x allows a loaded machine.
    self.assertLess(closed_after / idle_secs, 3.0, closed_after)
    self.assertGreaterEqual(closed_after / idle_secs, 0.9, closed_after)
    _support.wait_for(lambda: threading.active_count() <= threads_before,
                      10, "the idle connections' threads to end")
    self.assertIn(("harness_restarts", "chief/0", None), scrape(url))

  def test_default_bind_is_loopback_only(self):
    live_metrics.serve(port=self.port, task_label="local")
    self.assertTrue(reachable("127.0.0.1", self.port))
    address = non_loopback_ipv4()
    if address is None:
      self.skipTest("this machine has no non-loopback IPv4 address: run it "
                    "where a network interface has one")
    self.assertFalse(reachable(address, self.port), address)

  def test_metrics_bind_all_interfaces_is_reachable_outside_loopback(self):
    # The check above can fail: the same probe reaches a 0.0.0.0 endpoint.
    address = non_loopback_ipv4()
    if address is None:
      self.skipTest("this machine has no non-loopback IPv4 address: run it "
                    "where a network interface has one")
    live_metrics.serve(port=self.port, bind="0.0.0.0", task_label="local")
    self.assertTrue(reachable(address, self.port), address)

  def test_taken_port_and_bad_values_raise_config_error(self):
    with socket.socket() as taken:
      taken.bind(("127.0.0.1", 0))
      taken.listen()
      with self.assertRaisesRegex(errors.ConfigError, "cannot listen"):
        live_metrics.serve(port=taken.getsockname()[1], task_label="local")
    for bad in (-1, 65536, "9464", True):
      with self.assertRaisesRegex(errors.ConfigError, "metrics_port="):
        fields.check_metrics_port(bad)
    with self.assertRaisesRegex(errors.ConfigError, "metrics_bind=''"):
      fields.check_metrics_bind("")

  def test_closing_summary_names_the_url(self):
    result = job_config.JobResult(mode="train", task="local",
                                   model_dir="/tmp/m")
    self.assertNotIn("metrics:", results_text.summary(
        result, job_config.JobConfig()))
    url = live_metrics.serve(port=self.port, task_label="local")
    self.assertIn(f"  metrics:            {url}", results_text.summary(
        result, job_config.JobConfig()))


class MetricsFlagsTest(absltest.TestCase):

  def test_flags_reach_run_config_kwargs(self):
    job, plan = flags.parse(["harness.main", "--metrics_port=9464",
                             "--metrics_bind=0.0.0.0"], environ={})
    kwargs = job_config.run_config_kwargs(job, plan)
    self.assertEqual((kwargs["metrics_port"], kwargs["metrics_bind"]),
                     (9464, "0.0.0.0"))
    default_job, default_plan = flags.parse(["harness.main"], environ={})
    default = job_config.run_config_kwargs(default_job, default_plan)
    self.assertEqual((default["metrics_port"], default["metrics_bind"]),
                     (0, "127.0.0.1"))

  def test_bad_port_flag_is_refused(self):
    with self.assertRaisesRegex(Exception, "metrics_port"):
      flags.parse(["harness.main", "--metrics_port=70000"], environ={})

  def test_run_config_field(self):
    from harness import run_config  # lazy: loads TensorFlow, this test only
    config = run_config.RunConfig()
    self.assertEqual((config.metrics_port, config.metrics_bind),
                     (0, "127.0.0.1"))
    config = config.replace(metrics_port=9464, metrics_bind="0.0.0.0")
    self.assertEqual((config.metrics_port, config.metrics_bind),
                     (9464, "0.0.0.0"))
    with self.assertRaisesRegex(errors.ConfigError, "metrics_port=-2"):
      run_config.RunConfig(metrics_port=-2)


class LiveRunTest(absltest.TestCase):

  @pytest.mark.slow
  def test_scrape_a_real_run_mid_training(self):
    port = ports.pick_free_port()
    model_dir = self.create_tempdir().full_path
    child = _support.ChildProcess(
        ["-m", "harness.main", "--model_fn=linear", "--input_fn=constant",
         "--mode=train", f"--model_dir={model_dir}", "--max_steps=10000000",
         "--batch_size=8", "--steps_per_loop=1", "--log_step_count_steps=20",
         "--save_checkpoints_steps=100", f"--metrics_port={port}"],
        "harness.main")
    self.addCleanup(child.kill_group)
    url = f"http://127.0.0.1:{port}/metrics"
    self.assertTrue(child.wait_for_text(f"serving {url}", 240),
                    child.describe())
    key = ("harness_global_step", "local", None)
    first = _support.wait_for(
        lambda: scrape(url).get(key), 240, "a first progress line's step",
        details=child.describe)
    second = _support.wait_for(
        lambda: (scrape(url).get(key) or 0) > first and scrape(url), 240,
        f"global_step to pass {first}", details=child.describe)
    self.assertGreater(second[key], first)
    self.assertGreater(
        second[("harness_examples_per_second", "local", None)], 0)
    self.assertGreater(second[("harness_steps_per_second", "local", None)], 0)
    self.assertIn(("harness_eta_seconds", "local", None), second)
    since = _support.wait_for(
        lambda: _finite(scrape(url).get(
            ("harness_seconds_since_last_checkpoint", "local", None))),
        240, "a checkpoint save to reach the endpoint",
        details=child.describe)[0]
    self.assertGreaterEqual(since, 0)
    address = non_loopback_ipv4()
    if address is not None:
      self.assertFalse(reachable(address, port),
                       f"{address}:{port} answers; the default is loopback")
    # The loss gauge is the loss the progress line of the same step logged.
    _support.wait_for(lambda: _loss_agrees(scrape(url), child), 240,
                      "harness_loss to equal a logged step's loss=",
                      details=child.describe)
    code, _ = child.stop(signal.SIGTERM, 120)
    self.assertIsNotNone(code, child.describe())


def _loss_agrees(series, child):
  """True when series' harness_loss matches the `loss=` that the progress
  line of its harness_global_step logged (4 significant digits)."""
  loss = series.get(("harness_loss", "local", None))
  step = series.get(("harness_global_step", "local", None))
  if loss is None or step is None:
    return False
  match = child.search(re.compile(
      rf"train \| local \| step {int(step)}/\d+ \|.* \| loss=([^ |]+)"))
  return match is not None and math.isclose(
      float(match.group(1)), loss, rel_tol=1e-3, abs_tol=1e-6)


def _finite(value):
  # 0.0 is a valid age, so the wait's value is a tuple (always truthy).
  return (value,) if value is not None and math.isfinite(value) else None


if __name__ == "__main__":
  absltest.main()
