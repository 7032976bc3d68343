"""TF_CONFIG text -> cluster and task facts, checked the way tf.estimator did.

Usage::

    info = cluster.from_environ(os.environ)   # None when TF_CONFIG is unset
    if info is not None:
      cluster.validate(info, has_strategy=True, strategy_kind="collective")
    facts = cluster.derive(info, has_strategy=True)
    facts.is_chief, facts.master, facts.global_id_in_cluster

Three levels of checks, so that `RunConfig` accepts every TF_CONFIG that
tf.estimator 2.15's RunConfig accepted (placeholder addresses such as
`host0:0` included) and the other checks run where they matter:

* `parse_tf_config`: JSON syntax and value types only;
* `validate_run_config`: exactly the rules 2.15's RunConfig enforced (a
  strategy with a cluster deferred them to training), each error containing
  2.15's sentence verbatim, then harness's explanation and fix;
* `validate`: everything a run needs (addresses, one evaluator, strategy and
  cluster agreeing, the distribute coordinator's rules, typo'd keys), called
  by `Estimator.train` / `train_and_evaluate`, server start, `harness.main`'s
  preflight (which also refuses a task without a cluster) and the launcher.

Every error is a `ClusterConfigError` (a ValueError; `ClusterConfigTypeError`
where 2.15 raised TypeError) naming the value, the rule, where it came from
and the fix. No TensorFlow here.
"""

import dataclasses
import json
import re
from typing import Mapping

from harness import errors
from harness.cluster import jobset_env
from harness.cluster.jobs import CHIEF
from harness.cluster.jobs import EVALUATOR
from harness.cluster.jobs import LOCAL_LABEL
from harness.cluster.jobs import TRAINER_JOBS
from harness.cluster.jobs import WORKER
from harness.cluster.jobs import task_label
from harness.cluster.tf_config_checks import check_addresses
from harness.cluster.tf_config_checks import check_job_counts
from harness.cluster.tf_config_checks import check_job_names
from harness.cluster.tf_config_checks import fail
from harness.cluster.tf_config_checks import fail_215
from harness.cluster.tf_config_checks import task_json

__all__ = ["TF_CONFIG_ENV", "ClusterInfo", "TFConfigJSONError",
           "parse_tf_config", "from_environ", "parse_remote_cluster"]

TF_CONFIG_ENV = "TF_CONFIG"

_KNOWN_KEYS = ("cluster", "task", "rpc_layer", "environment", "model_dir",
               "service", "session_master", "eval_session_master")


class TFConfigJSONError(errors.ClusterConfigError, json.JSONDecodeError):
  """TF_CONFIG is not JSON: a ClusterConfigError that is also the
  `json.JSONDecodeError` tf.estimator 2.15 let escape."""

  def __init__(self, message, decode_error):
    json.JSONDecodeError.__init__(self, decode_error.msg, decode_error.doc,
                                  decode_error.pos)
    self.args = (message,)

  def __str__(self):
    return self.args[0]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClusterInfo:
  """What a TF_CONFIG says: the cluster, this task, and the extra keys.

  Attributes:
    cluster: job name -> task addresses ("host:port"); {} when TF_CONFIG has
      no cluster. May list an "evaluator" job, which is not part of training.
    task_type: this task's job ("chief", "worker", "ps", "evaluator",
      "master", ...), or None when TF_CONFIG names no task.
    task_id: this task's index in its job.
    rpc_layer: protocol of the cluster's servers ("grpc").
    environment: TF_CONFIG "environment" (e.g. "cloud", "google"), or None.
    model_dir: TF_CONFIG "model_dir", or None.
    service: TF_CONFIG "service" (a platform-defined dict), or None.
    session_master: TF_CONFIG "session_master" (overrides the derived
      master), or None.
    eval_session_master: TF_CONFIG "eval_session_master", or None.
    source: where the value came from, used in error messages ("TF_CONFIG",
      "--tf_config flag"); not compared.
    from_pod_place: built by harness from a JobSet pod's place (no
      TF_CONFIG was set), so TensorFlow's own readers have yet to see it;
      not compared.
  """
  cluster: dict[str, list[str]] = dataclasses.field(default_factory=dict)
  task_type: str | None = None
  task_id: int = 0
  rpc_layer: str = "grpc"
  environment: str | None = None
  model_dir: str | None = None
  service: dict | None = None
  session_master: str | None = None
  eval_session_master: str | None = None
  source: str = dataclasses.field(default=TF_CONFIG_ENV, compare=False)
  from_pod_place: bool = dataclasses.field(default=False, compare=False)
  # Facts of the raw text that only `validate` needs.
  has_index: bool = dataclasses.field(default=True, compare=False)
  unknown_keys: tuple = dataclasses.field(default=(), compare=False)

  def num_tasks(self, job):
    """Number of addresses listed for `job` (0 when it is absent)."""
    return len(self.cluster.get(job, ()))

  def address(self, job, index):
    """The address of task `index` of `job`; ClusterConfigError if none."""
    addresses = self.cluster.get(job, ())
    if not 0 <= index < len(addresses):
      fail(self.source, f"has no task {task_json(job, index)}: "
            f"cluster[{job!r}] has {len(addresses)} addresses.",
            "ask for a task listed in the cluster.")
    return addresses[index]

  @property
  def has_cluster(self):
    return bool(self.cluster)

  @property
  def task_label(self):
    """"chief/0", "worker/1", ...; "local" without a cluster or task."""
    if not self.has_cluster or self.task_type is None:
      return LOCAL_LABEL
    return task_label(self.task_type, self.task_id)

  @property
  def task_address(self):
    """This task's address, or None (no task, or an unlisted evaluator)."""
    if self.task_type is None or self.num_tasks(self.task_type) <= self.task_id:
      return None
    return self.cluster[self.task_type][self.task_id]

  @property
  def worker_jobs(self):
    """The jobs that run training steps, of ("chief", "master", "worker")."""
    return tuple(j for j in TRAINER_JOBS if j in self.cluster)

  @property
  def training_cluster(self):
    """The cluster without its "evaluator" job (which does not train)."""
    return {j: list(a) for j, a in self.cluster.items() if j != EVALUATOR}

  def to_json(self):
    """TF_CONFIG text that `parse_tf_config` turns back into this object."""
    config = {}
    if self.cluster:
      config["cluster"] = {j: list(a) for j, a in self.cluster.items()}
    if self.task_type is not None or self.task_id:
      config["task"] = {"type": self.task_type, "index": self.task_id}
    if self.rpc_layer != "grpc":
      config["rpc_layer"] = self.rpc_layer
    for key in ("environment", "model_dir", "service", "session_master",
                "eval_session_master"):
      if getattr(self, key) is not None:
        config[key] = getattr(self, key)
    return json.dumps(config, sort_keys=True)


# ----------------------------------------------------------------- parsing


def _reject_duplicate_keys(pairs):
  result = {}
  for key, value in pairs:
    if key in result:
      raise ValueError(f"duplicate key {key!r}")
    result[key] = value
  return result


def _load_json(text, source, what):
  """Parses JSON text, or fails saying where and showing the text."""
  try:
    return json.loads(text, object_pairs_hook=_reject_duplicate_keys)
  except json.JSONDecodeError as e:
    line = text.splitlines()[e.lineno - 1] if text.splitlines() else text
    hint = ""
    if "'" in text and '"' not in text:
      hint = (" It looks like a Python dict (single quotes); JSON needs double"
              " quotes: build it with json.dumps(...).")
    raise TFConfigJSONError(
        f"{e}\n{source} is not valid JSON: {e.msg} at line {e.lineno}, "
        f"column {e.colno}:\n  {line[:300]}\n  "
        f"{' ' * min(e.colno - 1, 300)}^\n{what} must be a JSON object.{hint}"
        " Fix: correct the text (check shell quoting).", e) from None
  except ValueError as e:  # From _reject_duplicate_keys.
    raise errors.ClusterConfigError(
        f"{source} has a {e} in one JSON object: {text[:300]}. Fix: list each "
        "key once (merge the two entries).") from None
  except RecursionError:
    raise errors.ClusterConfigError(
        f"{source} nests its JSON deeper than Python's parser allows "
        f"({len(text)} characters, starting {text[:60]!r}). {what} must be a "
        'JSON object such as {"cluster": {...}, "task": {...}}. Fix: '
        "correct the text.") from None


def _json_type(value):
  """The JSON name of a decoded value's type ("number", "array", ...)."""
  for kind, name in ((bool, "boolean"), ((int, float), "number"),
                     (str, "string"), (Mapping, "object"),
                     ((list, tuple), "array")):
    if isinstance(value, kind):
      return name
  return type(value).__name__


def _parse_index(value, source, task_type):
  if isinstance(value, bool) or not isinstance(value, (int, str)) or (
      isinstance(value, str) and not re.fullmatch(r"-?\d+", value.strip())):
    fail(source, f"task index {value!r} (for type {task_type!r}) is not an "
          "integer.", 'give "index" as a non-negative integer, e.g. '
          '{"type": "worker", "index": 0}.')
  return int(value)


def _parse_cluster(cluster, source):
  """Checks the JSON shape of a cluster; returns {job: [addresses]}."""
  if not isinstance(cluster, Mapping):
    fail(source, f"cluster {cluster!r} is not an object.",
          'give "cluster" as {"job": ["host:port", ...]}.')
  result = {}
  for job, addresses in cluster.items():
    if isinstance(addresses, Mapping):
      keys = sorted(addresses, key=lambda k: int(k) if str(k).isdigit()
                    else -1)
      if [str(k) for k in keys] != [str(i) for i in range(len(keys))]:
        fail(source, f'cluster["{job}"] is an object ({addresses!r}) whose '
              "keys are not the task indices 0..n-1; harness needs every "
              "task's address.", f'write cluster["{job}"] as ["host:port", '
              "...] in task-index order.", errors.ClusterConfigTypeError)
      addresses = [addresses[k] for k in keys]
    if isinstance(addresses, str) or not isinstance(addresses, (list, tuple)):
      fail_215(source, f"The tasks for job {job!r} must be a list or a "
                "dictionary from integers to strings.",
                f'cluster["{job}"] is {addresses!r}, not a list of '
                "addresses.", f'write cluster["{job}"] as ["host:port", ...].',
                errors.ClusterConfigTypeError)
    result[job] = list(addresses)
  return result


def parse_tf_config(text_or_mapping, *, source=TF_CONFIG_ENV):
  """Parses TF_CONFIG (JSON text or an already-decoded mapping).

  Args:
    text_or_mapping: the TF_CONFIG text (str or bytes), or a mapping.
    source: where the value came from, for messages ("TF_CONFIG",
      "--tf_config flag").

  Returns:
    A `ClusterInfo`, or None when the text is empty or the object is {}
    (tf.estimator treated both as "no TF_CONFIG": local training).

  Raises:
    ClusterConfigError: malformed JSON, wrong types, bad addresses, or a task
      that is not in the cluster (see `validate` for the strategy rules).
  """
  if isinstance(text_or_mapping, bytes):
    text_or_mapping = text_or_mapping.decode("utf-8")
  if text_or_mapping is None or (isinstance(text_or_mapping, str) and
                                 not text_or_mapping.strip()):
    return None
  config = (_load_json(text_or_mapping, source, source)
            if isinstance(text_or_mapping, str) else text_or_mapping)
  if not isinstance(config, Mapping):
    fail(source, f"is {config!r}, not a JSON object.",
          'give an object such as {"cluster": {...}, "task": {"type": '
          '"worker", "index": 0}}.')
  if not config:
    return None
  task = config.get("task") or {}
  if not isinstance(task, Mapping):
    fail(source, f'"task" is {task!r}, not an object.',
          'give "task" as {"type": "worker", "index": 0}.')
  task_type = task.get("type")
  if task_type is not None and not isinstance(task_type, str):
    fail(source, f"task type {task_type!r} is not a string.",
          'give "type" as the job name, e.g. "worker".')
  task_id = _parse_index(task.get("index", 0), source, task_type)
  model_dir = config.get("model_dir")
  if model_dir is not None and not isinstance(model_dir, str):
    fail(source, f'"model_dir" is {json.dumps(model_dir)} (a JSON '
          f"{_json_type(model_dir)}): it must be a string (a directory "
          "path).", 'write it as "model_dir": "/path/to/dir", or leave it out'
          " and pass --model_dir.", errors.ClusterConfigTypeError)
  if model_dir == "":
    fail_215(source, "model_dir in TF_CONFIG should be non-empty.",
              '"model_dir" is "".', 'set "model_dir" to a directory or leave '
              "it out.")
  service = config.get("service")
  if service is not None and not isinstance(service, Mapping):
    fail_215(source, 'If "service" is set in TF_CONFIG, it must be a dict. '
              f"Given {type(service)}", f'"service" is {service!r}.',
              'give "service" as an object or leave it out.',
              errors.ClusterConfigTypeError)
  return ClusterInfo(
      cluster=_parse_cluster(config.get("cluster") or {}, source),
      task_type=task_type or None, task_id=task_id,
      rpc_layer=config.get("rpc_layer") or "grpc",
      environment=config.get("environment"),
      model_dir=config.get("model_dir"),
      service=dict(service) if service is not None else None,
      session_master=config.get("session_master"),
      eval_session_master=config.get("eval_session_master"),
      source=source, has_index="index" in task,
      unknown_keys=tuple(k for k in config if k not in _KNOWN_KEYS))


def from_environ(environ):
  """`parse_tf_config(environ["TF_CONFIG"])`: None when unset or empty.

  Without TF_CONFIG, a JobSet pod's TF_CONFIG is built from its place
  (`cluster/jobset_env.py`); an explicit TF_CONFIG always wins.
  `environ` is a mapping such as `os.environ` (tests pass a dict).
  """
  text = environ.get(TF_CONFIG_ENV)
  if not (text or "").strip() and jobset_env.in_jobset_pod(environ):
    return dataclasses.replace(
        parse_tf_config(jobset_env.tf_config_dict(environ),
                        source=jobset_env.SOURCE), from_pod_place=True)
  return parse_tf_config(text, source=TF_CONFIG_ENV)


def parse_remote_cluster(text, *, source="--remote_cluster"):
  """Parses a cluster given as a flag: `worker=h1:p,h2:p;ps=h3:p`, or JSON.

  Args:
    text: "job=host:port,host:port;job=..." or '{"worker": ["h:p"]}'.
    source: the flag's name, for messages.

  Returns:
    {job: [addresses]}, checked like a TF_CONFIG cluster.

  Raises:
    ClusterConfigError: empty text, bad syntax, bad or duplicate addresses.
  """
  text = (text or "").strip()
  if not text:
    fail(source, "is empty: a remote cluster needs at least one job.",
          'give it as "worker=host:port,host:port;ps=host:port".')
  if text.startswith("{"):
    cluster = _parse_cluster(_load_json(text, source, "The cluster"), source)
  else:
    cluster = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
      job, sep, addresses = part.partition("=")
      job = job.strip()
      if not sep:
        fail(source, f"part {part!r} has no '=': expected job=host:port,...",
              'write it as "worker=h1:2222,h2:2222;ps=h3:2222".')
      if job in cluster:
        fail(source, f"lists job {job!r} twice.",
              "give all of a job's addresses in one job=a,b part.")
      cluster[job] = [a.strip() for a in addresses.split(",") if a.strip()]
    cluster = _parse_cluster(cluster, source)
  check_job_names(cluster, source)
  check_addresses(cluster, source)
  check_job_counts(cluster, source)
  if CHIEF not in cluster and WORKER not in cluster:
    fail(source, f"{text!r} has neither a 'chief' nor a 'worker' job: "
          "nothing would train.", "add worker=host:port,... .")
  return cluster


