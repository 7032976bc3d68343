"""Live training metrics over HTTP, in Prometheus's text format.

    url = live_metrics.serve(port=9464, bind="127.0.0.1", task_label="chief/0")
    # curl http://127.0.0.1:9464/metrics | grep global_step
    # harness_global_step{task="chief/0"} 1200.0

Off unless a port is given (`RunConfig(metrics_port=...)`, flag
`--metrics_port`); bound to 127.0.0.1 unless `metrics_bind` says otherwise.
One endpoint a process (a task); every series is labelled by task. The
numbers come from what the training loop already computes: the progress
line (`telemetry/progress.py`, every `log_step_count_steps` steps: step,
steps/s, loss, ETA), the chief's `examples/sec` summary (`telemetry/step_rate.py`), its
checkpoint saves, the evaluation results written to `eval/`, and session
(re)creations. Nothing here adds a
`session.run` fetch. No TensorFlow.
"""

import math
import os
import threading
import time

from absl import logging
import prometheus_client

from harness import errors
from harness import fields
from harness.cluster import jobs

__all__ = [
    "IDLE_TIMEOUT_SECS", "serve", "url", "stop",
    "record_progress", "record_examples_rate", "record_session_start",
    "record_checkpoint", "record_eval", "ATTEMPT_LABEL",
]

# A connection that sends no request within this long is closed (each one
# holds a server thread; a scraper's request comes at once).
IDLE_TIMEOUT_SECS = 10.0

_LOCK = threading.Lock()
_STATE = {"server": None, "url": None, "task": None, "gauges": None,
          "attempt": None}
ATTEMPT_LABEL = "attempt"  # The JobSet restart attempt, when there is one.


def _make_gauges(registry, *, with_attempt):
  def gauge(name, doc, labels=("task",)):
    if with_attempt:
      labels += (ATTEMPT_LABEL,)
    return prometheus_client.Gauge(f"harness_{name}", doc, labels,
                                   registry=registry)
  return {
      "global_step": gauge("global_step", "Global step at the last progress "
                           "line (every log_step_count_steps steps)."),
      "steps_per_second": gauge("steps_per_second", "Global steps per "
                                "second since the previous progress line."),
      "examples_per_second": gauge("examples_per_second", "Examples per "
                                   "second (steps/s times the global batch; "
                                   "the chief's examples/sec summary)."),
      "loss": gauge("loss", "Training loss fetched for the progress line."),
      "max_steps": gauge("max_steps", "The step training stops at."),
      "progress_percent": gauge("progress_percent", "global_step / "
                                "max_steps * 100 (when max_steps is known)."),
      "eta_seconds": gauge("eta_seconds", "Seconds to max_steps at the "
                           "current step rate (when max_steps is known)."),
      "last_checkpoint_step": gauge("last_checkpoint_step", "Global step "
                                    "of this task's last checkpoint save."),
      "seconds_since_checkpoint": gauge(
          "seconds_since_last_checkpoint", "Seconds since this task's last "
          "checkpoint save (NaN before the first)."),
      "eval_step": gauge("eval_global_step", "Global step of the last "
                         "evaluation."),
      "eval": gauge("eval_metric", "Last evaluation's value of each metric.",
                    ("task", "metric")),
      "restarts": gauge("restarts", "Earlier starts of this task (from "
                        f"${jobs.TASK_RESTARTS_ENV}) plus training sessions "
                        "this process re-created after its first."),
  }


def _closing_idle(handler_class, idle_timeout_secs):
  """`handler_class` that closes a connection idle for `idle_timeout_secs`."""

  class _IdleBounded(handler_class):
    timeout = idle_timeout_secs  # socketserver sets it on the connection.

    def handle(self):
      try:
        super().handle()
      except TimeoutError:
        pass  # Idle: the server closes the connection; its thread ends.

  return _IdleBounded


def serve(*, port, bind=fields.default("metrics_bind"), task_label="local",
          environ=None, attempt=None, idle_timeout_secs=IDLE_TIMEOUT_SECS):
  """Starts this process's metrics endpoint once; returns its URL.

  Args:
    port: TCP port (0: off, returns None).
    bind: address to listen on (127.0.0.1 unless a remote scraper needs it).
    task_label: the `task` label of this process's series ("chief/0").
    environ: read for $HARNESS_TASK_RESTARTS, the starts before this one
      (harness.launch sets it; default os.environ).
    attempt: the JobSet restart attempt of this process
      (`RunConfig.restart_attempt`); an int adds the label
      `attempt="<n>"` to every series, None (outside a JobSet) none.
    idle_timeout_secs: a connection without a request for this long is
      closed, and its thread ends.

  Returns:
    "http://<bind>:<port>/metrics", or None when `port` is 0. A second call
    returns the running endpoint's URL (one endpoint a process).

  Raises:
    ConfigError: the port or address is invalid, or the port is taken.
  """
  fields.check_metrics_port(port)
  fields.check_metrics_bind(bind)
  if not port:
    return None
  with _LOCK:
    if _STATE["server"] is not None:
      return _STATE["url"]
    registry = prometheus_client.CollectorRegistry()
    gauges = _make_gauges(registry, with_attempt=attempt is not None)
    try:
      server, _ = prometheus_client.start_http_server(port, bind, registry)
    except OSError as e:
      raise errors.ConfigError(
          f"metrics_port={port} on {bind}: cannot listen ({e}). Fix: pick a "
          "free port per task on one host, or 0 for no endpoint.") from e
    server.RequestHandlerClass = _closing_idle(server.RequestHandlerClass,
                                               idle_timeout_secs)
    host = f"[{bind}]" if ":" in bind else bind
    _STATE.update(server=server, task=task_label, gauges=gauges,
                  url=f"http://{host}:{port}/metrics",
                  attempt=None if attempt is None else str(attempt))
    environ = os.environ if environ is None else environ
    _series("restarts", task_label).set(
        _int_or_zero(environ.get(jobs.TASK_RESTARTS_ENV, "")))
    _series("seconds_since_checkpoint", task_label).set(math.nan)
  logging.info("metrics | %s | serving %s", task_label, _STATE["url"])
  return _STATE["url"]


def _int_or_zero(text):
  try:
    return max(int(text), 0)
  except ValueError:
    return 0


def url():
  """The running endpoint's URL, or None."""
  return _STATE["url"]


def stop():
  """Stops the endpoint (tests; a process normally keeps it to its end)."""
  with _LOCK:
    server = _STATE["server"]
    _STATE.update(server=None, url=None, task=None, gauges=None,
                  attempt=None)
  if server is not None:
    server.shutdown()
    server.server_close()


def _gauges():
  return _STATE["gauges"]


def _series(key, task, *more):
  """The child of gauge `key` for `task` (and `more` label values), with
  this process's attempt label when it has one."""
  if _STATE["attempt"] is not None:
    more += (_STATE["attempt"],)
  return _STATE["gauges"][key].labels(task, *more)


def record_progress(task_label, *, step, max_steps=None, steps_per_sec=None,
                    examples_per_sec=None, loss=None):
  """One progress line's numbers (None: unknown, the series is left as is)."""
  gauges = _gauges()
  if gauges is None:
    return
  _series("global_step", task_label).set(step)
  for key, value in (("steps_per_second", steps_per_sec),
                     ("examples_per_second", examples_per_sec),
                     ("loss", loss)):
    if value is not None:
      _series(key, task_label).set(float(value))
  if max_steps:
    _series("max_steps", task_label).set(max_steps)
    _series("progress_percent", task_label).set(
        min(100.0, 100.0 * step / max_steps))
    if steps_per_sec:
      _series("eta_seconds", task_label).set(
          max(max_steps - step, 0) / steps_per_sec)


def record_examples_rate(examples_per_sec):
  """The chief's `examples/sec` summary value (`telemetry/step_rate.py`)."""
  gauges = _gauges()
  if gauges is None:
    return
  _series("examples_per_second", _STATE["task"]).set(examples_per_sec)


def record_session_start(task_label, *, step, first):
  """A training session was created at `step`; `first` False: a re-creation."""
  gauges = _gauges()
  if gauges is None:
    return
  _series("global_step", task_label).set(step)
  if not first:
    _series("restarts", task_label).inc()


def record_checkpoint(step, *, clock=time.monotonic):
  """This process saved a checkpoint at `step`."""
  gauges = _gauges()
  if gauges is None:
    return
  task = _STATE["task"]
  saved_at = clock()
  _series("last_checkpoint_step", task).set(step)
  _series("seconds_since_checkpoint", task).set_function(
      lambda: clock() - saved_at)


def record_eval(results, step):
  """The numeric values of one evaluation's results, at global `step`."""
  gauges = _gauges()
  if gauges is None:
    return
  task = _STATE["task"]
  _series("eval_step", task).set(step)
  for name, value in results.items():
    if name == "global_step":
      continue  # harness_eval_global_step.
    try:
      number = float(value)
    except (TypeError, ValueError):
      continue  # Strings, arrays: not a gauge.
    _series("eval", task, name).set(number)
