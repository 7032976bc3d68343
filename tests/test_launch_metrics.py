"""`--metrics_port` under `harness.launch`: a port per task, reachable here.

Issue 37: every task got the command's port (all but the first failed with
"Address already in use"), and in the launcher's private network namespace
the one endpoint was unreachable from this machine though the log printed a
127.0.0.1 URL. The tasks here serve harness's real endpoint
(`harness.telemetry.live_metrics`) from a small program without TensorFlow.
"""

import io
import os
import re
import socket
import sys
import textwrap
import threading

from absl.testing import absltest
from absl.testing import parameterized

from harness import errors
from harness import launch
from harness.launch import metrics_ports
from harness.launch import netns
from harness.launch import ports
from tests import _support
from tests import test_live_metrics

_BOUND_SECS = 60
_URL_LINE = re.compile(r"^launch \| metrics \| (\S+) \| (http://\S+)$",
                       re.MULTILINE)

# A task: serves its --metrics_port (0: none) labelled by its task, records a
# step, and waits (bounded) for the test's stop file.
_TASK = """
    import os, sys, time
    from harness.telemetry import live_metrics
    port = int([a for a in sys.argv if a.startswith("--metrics_port=")][-1]
               .split("=")[1])
    task = os.environ["HARNESS_TASK"]
    print("serving", live_metrics.serve(port=port, task_label=task),
          flush=True)
    live_metrics.record_progress(task, step=int(task[-1]) + 10)
    deadline = time.time() + {bound}
    while not os.path.exists({stop!r}) and time.time() < deadline:
      time.sleep(0.05)
"""


class PlanTest(parameterized.TestCase):

  @parameterized.named_parameters(("equals", ["--metrics_port=PORT"]),
                                  ("separate", ["--metrics_port", "PORT"]))
  def test_one_port_a_serving_task_in_order_ps_none(self, flag):
    first = _support.poll_until(_two_free_ports_from, 10)
    flag = [a.replace("PORT", str(first)) for a in flag]
    plan = metrics_ports.plan(["python", "-m", "harness.main", *flag, "-v"],
                              ["chief/0", "worker/0", "ps/0", "evaluator/0"])
    self.addCleanup(plan.close)
    self.assertEqual(plan.ports, {"chief/0": first, "worker/0": first + 1,
                                  "evaluator/0": first + 2})
    self.assertEqual(plan.command_for("worker/0"),
                     ["python", "-m", "harness.main",
                      f"--metrics_port={first + 1}", "-v"])
    self.assertEqual(plan.command_for("ps/0")[3], "--metrics_port=0")

  def test_auto_picks_distinct_free_ports_avoiding_the_tf_ports(self):
    plan = metrics_ports.plan(["x", "--metrics_port=auto"],
                              ["worker/0", "worker/1"], avoid=[1])
    self.addCleanup(plan.close)
    self.assertLen(set(plan.ports.values()), 2)
    self.assertEqual(plan.urls()["worker/1"],
                     f"http://127.0.0.1:{plan.ports['worker/1']}/metrics")

  def test_no_port_leaves_the_command_as_is(self):
    for command in (["x", "--other=1"], ["x", "--metrics_port=0"]):
      plan = metrics_ports.plan(command, ["worker/0", "worker/1"])
      self.assertEqual(plan.command_for("worker/1"), command)
      self.assertEqual(plan.ports, {})

  def test_bad_value_and_taken_port_are_config_errors(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "--metrics_port=nine in the command"):
      metrics_ports.plan(["x", "--metrics_port=nine"], ["worker/0"])
    with socket.socket() as taken:
      taken.bind(("127.0.0.1", 0))
      taken.listen(1)
      port = taken.getsockname()[1]
      with self.assertRaisesRegex(errors.ConfigError,
                                  f"task worker/0 gets port {port}"):
        metrics_ports.plan(["x", f"--metrics_port={port}"], ["worker/0"])


def _two_free_ports_from():
  """A port P with P+1 and P+2 free too, or None."""
  port = ports.pick_free_port()
  sockets = []
  try:
    for offset in range(3):
      sock = socket.socket()
      sockets.append(sock)
      sock.bind(("127.0.0.1", port + offset))
  except OSError:
    return None
  finally:
    for sock in sockets:
      sock.close()
  return port


class LaunchScrapeTest(parameterized.TestCase):
  """Two serving tasks and a ps under launch(); the test scrapes both."""

  @parameterized.named_parameters(
      ("private_network_auto", "netns", "auto"),
      ("private_network_fixed", "netns", "fixed"),
      ("shared_network_auto", "none", "auto"),
      ("shared_network_fixed", "none", "fixed"))
  def test_each_task_scraped_from_here_at_its_logged_url(self, isolation,
                                                          port):
    if isolation == "netns" and netns.unavailable_reason():
      self.skipTest(f"{netns.unavailable_reason()}: run it on Linux with "
                    "util-linux (unshare, nsenter) installed")
    stop = os.path.join(self.create_tempdir().full_path, "stop")
    out = io.StringIO()
    result = {}
    command = [sys.executable, "-c", textwrap.dedent(_TASK.format(
        bound=_BOUND_SECS, stop=stop))]
    if port == "fixed":
      port = _support.poll_until(_two_free_ports_from, 10)
    command.append(f"--metrics_port={port}")
    runner = threading.Thread(target=lambda: result.update(
        status=launch.launch(command, workers=2, ps=1, output=out,
                             network_isolation=isolation,
                             timeout_secs=_BOUND_SECS * 2)))
    runner.start()
    self.addCleanup(runner.join, _BOUND_SECS * 2)
    self.addCleanup(lambda: open(stop, "w").close())
    urls = _support.wait_for(
        lambda: dict(_URL_LINE.findall(out.getvalue())) or None, _BOUND_SECS,
        "the launcher's metrics lines", details=out.getvalue)
    self.assertEqual(sorted(urls), ["worker/0", "worker/1"])
    self.assertNotEqual(urls["worker/0"], urls["worker/1"])
    if port != "auto":
      self.assertEqual(urls["worker/1"], f"http://127.0.0.1:{port + 1}/metrics")
    for task, url in urls.items():
      # The task serves before it records its step: wait for the step, a
      # series labelled by this task (another task's endpoint never has it).
      key = ("harness_global_step", task, None)
      series = _support.wait_for(
          lambda url=url, key=key: _scrape_with(url, key), _BOUND_SECS,
          f"{task}'s step at its endpoint {url}", details=out.getvalue)
      self.assertEqual(series[key], int(task[-1]) + 10, out.getvalue())
    open(stop, "w").close()
    runner.join(_BOUND_SECS * 2)
    self.assertEqual(result.get("status"), 0, out.getvalue())
    self.assertNotIn("Address already in use", out.getvalue())


def _scrape_with(url, key):
  """The endpoint's series once they hold `key`; None before (or no answer)."""
  try:
    series = test_live_metrics.scrape(url)
  except OSError:
    return None
  return series if key in series else None


if __name__ == "__main__":
  absltest.main()
