"""Progress in the TrainJob: the chief posts it to Kubeflow Trainer.

    endpoint = trainer_status.endpoint_from_environ(os.environ)  # or None
    trainer_status.start(endpoint, task_label="chief/0")
    trainer_status.record_progress(step=1200, max_steps=10000,
                                   steps_per_sec=350.2, loss=0.312)
    trainer_status.finish()  # the last status posted (bounded), thread gone

Kubeflow Trainer >= v2.2 with its alpha gate `TrainJobStatus` on gives the
trainer pods three variables; the process that has them posts its progress,
which the controller writes to the TrainJob's `status.trainerStatus`. The
training thread only records numbers (`telemetry/progress` at each progress
line, `core/evaluation` after each evaluation, as they feed
`telemetry/live_metrics`); a thread here posts the latest at most once per
`MIN_INTERVAL_SECS` (`telemetry/status_post`: https only, a redirect is a failure and never gets the
token, each post cut off `2 * TIMEOUT_SECS` after it connected). A failed
post (a malformed URL too) logs one line, later failures are quiet until a
post succeeds (one line); the thread never dies. Training never waits for a
post; `finish`, after it, waits (bounded) for the last.

The wire format, checked at kubeflow/trainer v2.2.0 (dc7656ad) and v2.3.0
(658725bd):
- `POST $KUBEFLOW_TRAINER_SERVER_URL`, the full URL `https://<svc>.<ns>.svc:
  <port>/apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>
  /status` (`pkg/runtime/framework/plugins/trainjobstatus/trainjobstatus.go`
  `createEnvVars`, `pkg/statusserver/utils.go` `StatusUrl`; POST only:
  `pkg/statusserver/server.go` `NewServer`).
- `$KUBEFLOW_TRAINER_SERVER_CA_CERT` and `$KUBEFLOW_TRAINER_SERVER_TOKEN`
  are file paths (`/var/run/secrets/kubeflow/trainer/ca.crt`, `.../token`,
  a projected volume: the CA from a ConfigMap, the token a service-account
  token with `expirationSeconds: 3600` that the kubelet rotates; plugin
  `createTokenVolume`). Both files are read again before each post.
- Headers `Authorization: Bearer <token>` (`pkg/statusserver/auth.go`
  `extractRawToken`) and `Content-Type: application/json`.
- Body `{"trainerStatus": {...}}` (`pkg/apis/trainer/v1alpha1/
  trainjob_types.go` `UpdateTrainJobStatusRequest`, `TrainerStatus`,
  `Metric`): `progressPercentage` int32 in 0..100, `estimatedRemainingSeconds`
  int32 >= 0 (both optional), `metrics` at most 256 `{"name", "value"}`
  with both strings of 1..64 characters, `lastUpdatedTime` RFC 3339
  (required by the type's CEL rule). Bodies over 64 KiB get 413.
- 200 on success; otherwise a `metav1.Status` JSON whose `message` says
  why (403 token refused, 404 no such TrainJob, 422 invalid, 500).
- At most one post per 5 s: docs/user-guides/trainjob-progress.md (v2.3.0)
  and the SDK's `update_trainjob_status` (kubeflow/sdk, `kubeflow/trainer/
  backends/kubernetes/utils.py`: the token from its file, cached 300 s;
  metric values as strings). Proposal: docs/proposals/2779-trainjob-
  progress/README.md (v2.2.0). The standard library only, no TensorFlow.
"""

import dataclasses
import datetime
import json
import numbers
import re
import threading
import time

from absl import logging

from harness import errors
from harness.telemetry import status_post

__all__ = ["URL_ENV", "CA_CERT_ENV", "TOKEN_ENV", "MIN_INTERVAL_SECS",
           "TIMEOUT_SECS", "Endpoint", "Reporter", "endpoint_from_environ",
           "start", "record_progress", "record_eval", "finish"]

URL_ENV = "KUBEFLOW_TRAINER_SERVER_URL"
CA_CERT_ENV = "KUBEFLOW_TRAINER_SERVER_CA_CERT"  # A file path.
TOKEN_ENV = "KUBEFLOW_TRAINER_SERVER_TOKEN"  # A file path; it rotates.
MIN_INTERVAL_SECS = 5.0  # Between the starts of two posts.
TIMEOUT_SECS = 5.0  # Connecting; a whole post is cut off at twice this.
_MAX_METRICS = 256
_MAX_TEXT = 64  # Characters of a metric's name and of its value.
_INT32_MAX = 2**31 - 1
_REASON_CHARS = status_post.REASON_CHARS


@dataclasses.dataclass(frozen=True, kw_only=True)
class Endpoint:
  """Where to post: the status URL, the CA file and the token file."""
  url: str
  ca_cert_path: str
  token_path: str


def endpoint_from_environ(environ):
  """The `Endpoint` the Trainer injected into `environ`, or None.

  Raises:
    ConfigError: some of the three variables are set but not all, or the
      URL is not https (the CA would verify nothing).
  """
  names = (URL_ENV, CA_CERT_ENV, TOKEN_ENV)
  values = [(environ.get(name) or "").strip() for name in names]
  if not any(values):
    return None
  missing = [name for name, value in zip(names, values) if not value]
  if missing:
    raise errors.ConfigError(
        f"${', $'.join(missing)} not set while ${URL_ENV} and the others "
        "are: Kubeflow Trainer's TrainJobStatus gate sets all three. Fix: "
        "set all three, or none (no progress in the TrainJob).")
  if not values[0].startswith("https://"):
    raise errors.ConfigError(
        f"${URL_ENV}={values[0]!r}: the status server is reached over TLS "
        "verified against the given CA. Fix: an https:// URL.")
  return Endpoint(url=values[0], ca_cert_path=values[1],
                  token_path=values[2])


def _rfc3339(epoch_secs):
  return datetime.datetime.fromtimestamp(
      int(epoch_secs), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(value):
  """A metric value as the string the API stores, or None (not a number)."""
  if isinstance(value, bool):
    return None
  if isinstance(value, numbers.Integral):  # numpy's too.
    return str(int(value))
  try:
    number = float(value)
  except (TypeError, ValueError):
    return None
  return f"{number:.6g}"


def _metric_list(pairs):
  """[{"name", "value"}] of `pairs` the API accepts (1..64 characters each,
  at most 256); others are left out."""
  metrics = []
  for name, value in pairs:
    text = _text(value)
    if text is None or not 0 < len(name) <= _MAX_TEXT or len(
        text) > _MAX_TEXT:
      continue
    metrics.append({"name": name, "value": text})
  return metrics[:_MAX_METRICS]


def _status_object(progress, eval_results, observed_at):
  """The `trainerStatus` object of the latest numbers.

  Args:
    progress: dict of the last progress line (step, max_steps,
      steps_per_sec, examples_per_sec, loss; None: unknown), or None.
    eval_results: the last evaluation's {name: value}, or None.
    observed_at: seconds since the epoch of the newest of the two.
  """
  status = {}
  pairs = []
  if progress:
    step, max_steps = progress["step"], progress["max_steps"]
    rate = progress["steps_per_sec"]
    if max_steps:
      status["progressPercentage"] = max(0, min(100, int(
          100 * step // max_steps)))
      if rate:  # No ETA before the rate is measured.
        status["estimatedRemainingSeconds"] = min(_INT32_MAX, int(round(
            max(max_steps - step, 0) / rate)))
    pairs += [("loss", progress["loss"]), ("global_step", step),
              ("max_steps", max_steps), ("steps_per_sec", rate),
              ("examples_per_sec", progress["examples_per_sec"])]
  pairs += [(f"eval_{name}", value)
            for name, value in sorted((eval_results or {}).items())]
  metrics = _metric_list((n, v) for n, v in pairs if v is not None)
  if metrics:
    status["metrics"] = metrics
  status["lastUpdatedTime"] = _rfc3339(observed_at)
  return status


def _target(url):
  """"TrainJob <namespace>/<name>" of a status URL, else the URL."""
  found = re.search(r"/namespaces/([^/]+)/trainjobs/([^/]+)/", url)
  return f"TrainJob {found[1]}/{found[2]}" if found else url


def _post(endpoint, body, timeout_secs):
  """POSTs `body` (bytes); returns None on 200, else why it failed
  (`status_post.post`: no redirects, bounded as a whole)."""
  return status_post.post(endpoint.url, body,
                          token_path=endpoint.token_path,
                          ca_cert_path=endpoint.ca_cert_path,
                          timeout_secs=timeout_secs)


class Reporter:
  """Posts the latest recorded status from its own thread.

  `record_*` only store numbers under a lock and wake the thread; the
  thread posts the newest status, never two posts closer than
  `min_interval_secs` (the start of one to the start of the next).
  """

  def __init__(self, endpoint, *, task_label="local",
               min_interval_secs=MIN_INTERVAL_SECS,
               timeout_secs=TIMEOUT_SECS, clock=time.monotonic,
               wall_clock=time.time):
    """Starts the posting thread.

    Args:
      endpoint: an `Endpoint`.
      task_label: this task in the log lines ("chief/0").
      min_interval_secs: seconds between the starts of two posts.
      timeout_secs: bound of connecting (seconds); a whole post is cut
        off at twice this (`status_post`).
      clock: monotonic seconds (the interval); wall_clock: seconds since
        the epoch (`lastUpdatedTime`). Injectable for tests.
    """
    self._endpoint = endpoint
    self._label = task_label
    self._min_interval_secs = float(min_interval_secs)
    self._timeout_secs = float(timeout_secs)
    self._clock = clock
    self._wall_clock = wall_clock
    self._cond = threading.Condition()
    # Guarded by _cond: the latest numbers and whether they are posted.
    self._progress = None
    self._eval = None
    self._observed_at = None
    self._pending = False
    self._stopping = False
    # The posting thread's own.
    self._last_post = None
    self._posts = 0
    self._posts_done = 0
    self._failed_since = None  # Post number of the first failure, if down.
    self._thread = threading.Thread(target=self._run, daemon=True,
                                     name="trainer-status")
    self._thread.start()
    logging.info("trainer status | %s | posting progress to %s at most "
                 "every %g s", task_label, _target(endpoint.url),
                 min_interval_secs)

  @property
  def posts(self):
    """How many posts were made (ended, failed or not)."""
    return self._posts_done

  def record_progress(self, *, step, max_steps=None, steps_per_sec=None,
                      examples_per_sec=None, loss=None):
    """The numbers of one progress line (None: unknown)."""
    self._record(progress={
        "step": int(step), "max_steps": max_steps,
        "steps_per_sec": steps_per_sec, "examples_per_sec": examples_per_sec,
        "loss": loss})

  def record_eval(self, results):
    """One evaluation's {name: value}; sent with the next status."""
    self._record(eval_results=dict(results))

  def _record(self, *, progress=None, eval_results=None):
    with self._cond:
      if progress is not None:
        self._progress = progress
      if eval_results is not None:
        self._eval = eval_results
      self._observed_at = self._wall_clock()
      self._pending = True
      self._cond.notify()

  def finish(self, timeout_secs=None):
    """Posts what is pending (after the interval), stops the thread.

    Waits at most `timeout_secs` (default: the interval plus two post
    timeouts; 0: not at all, quietly); returns True when the thread ended.
    """
    if timeout_secs is None:
      timeout_secs = self._min_interval_secs + 2 * self._timeout_secs
    with self._cond:
      self._stopping = True
      self._cond.notify()
    self._thread.join(timeout_secs)
    if self._thread.is_alive():
      if timeout_secs > 0:
        logging.info("trainer status | %s | the last post did not end in "
                     "%g s; not waiting for it", self._label, timeout_secs)
      return False
    return True

  def _next_body(self):
    """Waits for a status due to be posted; its body, or None: stop."""
    with self._cond:
      while True:
        if not self._pending:
          if self._stopping:
            return None
          self._cond.wait()
          continue
        wait_secs = 0.0 if self._last_post is None else (
            self._last_post + self._min_interval_secs - self._clock())
        if wait_secs <= 0:
          break
        self._cond.wait(wait_secs)  # A newer record may come meanwhile.
      self._pending = False
      status = _status_object(self._progress, self._eval, self._observed_at)
    return json.dumps({"trainerStatus": status}).encode("utf-8")

  def _run(self):
    while True:
      body = self._next_body()
      if body is None:
        return
      self._last_post = self._clock()
      self._posts += 1
      try:
        failure = _post(self._endpoint, body, self._timeout_secs)
      except Exception as e:  # pylint: disable=broad-except
        failure = f"{type(e).__name__}: {e}"  # The thread goes on.
      self._log_outcome(failure)
      self._posts_done += 1

  def _log_outcome(self, failure):
    """One line when posting starts to fail, one when it works again."""
    if failure is None:
      if self._failed_since is not None:
        logging.info("trainer status | %s | post %d succeeded: posting "
                     "again after %d failed", self._label, self._posts,
                     self._posts - self._failed_since)
      self._failed_since = None
      return
    if self._failed_since is None:
      self._failed_since = self._posts
      logging.warning("trainer status | %s | post %d failed: %s; training "
                      "goes on, quiet until a post succeeds", self._label,
                      self._posts, failure[:_REASON_CHARS])
    else:
      logging.debug("trainer status | %s | post %d failed: %s", self._label,
                    self._posts, failure)


_LOCK = threading.Lock()
_STATE = {"reporter": None}


def start(endpoint, *, task_label="local", **kwargs):
  """Starts this process's reporter once (None endpoint: nothing).

  Keyword arguments go to `Reporter`. Returns the reporter, or None.
  """
  if endpoint is None:
    return None
  with _LOCK:
    if _STATE["reporter"] is None:
      _STATE["reporter"] = Reporter(endpoint, task_label=task_label, **kwargs)
    return _STATE["reporter"]


def record_progress(**numbers):
  """`Reporter.record_progress` of the running reporter (else nothing)."""
  reporter = _STATE["reporter"]
  if reporter is not None:
    reporter.record_progress(**numbers)


def record_eval(results):
  """`Reporter.record_eval` of the running reporter (else nothing)."""
  reporter = _STATE["reporter"]
  if reporter is not None:
    reporter.record_eval(results)


def finish(timeout_secs=None):
  """Posts the last status (bounded) and stops the running reporter."""
  with _LOCK:
    reporter, _STATE["reporter"] = _STATE["reporter"], None
  if reporter is not None:
    reporter.finish(timeout_secs)
