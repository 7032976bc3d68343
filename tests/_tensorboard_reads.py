"""Reading a run's TensorBoard data: its event files and a server's HTTP API.

Used by tests/test_tensorboard.py and by tests/_docs_facts.py (the checks
made on the docs commands' own `--tensorboard` runs).
"""

import json
import re
import urllib.error
import urllib.parse
import urllib.request

from tests import _support

try:
  from tensorboard.backend.event_processing import event_multiplexer
except ImportError:  # pragma: no cover - setup.py installs it.
  event_multiplexer = None

HAVE_TENSORBOARD = event_multiplexer is not None
HTTP_WAIT_SECS = 120
# harness's line naming the server it started, and the one it left running.
URL = re.compile(r"tensorboard \| (http://127\.0\.0\.1:\d+)/ \| serving")
KEPT_PID = re.compile(r"kept running at \S+ \(pid (\d+), output in (\S+)\)")


def scalars(model_dir):
  """{run: {tag: [(step, value), ...]}} read by TensorBoard's reader."""
  mux = event_multiplexer.EventMultiplexer()
  mux.AddRunsFromDirectory(model_dir)
  mux.Reload()
  return {run: {tag: [(e.step, e.value) for e in mux.Scalars(run, tag)]
                for tag in tags["scalars"]}
          for run, tags in mux.Runs().items()}


def check_rates(test, series, global_batch):
  """examples/sec = global batch x global_step/sec, at the same steps."""
  steps_per_sec = dict(series["global_step/sec"])
  examples_per_sec = dict(series["examples/sec"])
  test.assertNotEmpty(steps_per_sec)
  test.assertEqual(sorted(examples_per_sec), sorted(steps_per_sec))
  for step, rate in steps_per_sec.items():
    test.assertGreater(rate, 0)
    test.assertAlmostEqual(examples_per_sec[step] / rate, global_batch,
                           places=3)


def get_json(url, path, timeout=30):
  with urllib.request.urlopen(url + path, timeout=timeout) as response:
    return json.loads(response.read().decode("utf-8"))


def wait_for_series(url, run, tag, want_steps):
  """The scalar series `run`/`tag` from TensorBoard's HTTP API, polled until
  it holds `want_steps` (TensorBoard loads event files in the background)."""
  query = urllib.parse.urlencode({"run": run, "tag": tag})
  last = [None]

  def series():
    try:
      last[0] = get_json(url, f"/data/plugin/scalars/scalars?{query}")
    except urllib.error.HTTPError as e:  # 400 until the run/tag is loaded.
      last[0] = f"HTTP {e.code}"
      return None
    return last[0] if {int(step) for _, step, _ in last[0]} >= set(
        want_steps) else None

  return _support.wait_for(
      series, HTTP_WAIT_SECS, f"{url}: {run}/{tag} to reach steps "
      f"{want_steps}", details=lambda: f"last answer: {last[0]}",
      interval_secs=1)
