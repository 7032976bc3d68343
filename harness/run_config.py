"""RunConfig and DistributeConfig, as tf.estimator 2.15 had them.

Usage::

    config = harness.RunConfig(model_dir="/tmp/m", save_checkpoints_steps=500,
                               train_distribute=strategy, steps_per_loop=10)
    config.is_chief, config.num_worker_replicas, config.cluster_spec
    config = config.replace(keep_checkpoint_max=10)

`RunConfig` keeps 2.15's constructor (plus keyword-only `steps_per_loop`,
`remote_connect_timeout_secs`, the evaluator's `eval_poll_secs` and
`eval_idle_timeout_secs`, `peer_timeout_secs`, `restart_wait_secs`,
`force_takeover`, `bind_address`, `remote_claim_timeout_secs`,
`max_runs_without_progress` and `environ`), properties, `replace()`
allow-list and messages. It is a thin shell over data: the user's values,
the `ClusterInfo` read once from TF_CONFIG (`harness.cluster.tf_config`), and facts
derived from both. Unlike 2.15:

* a bad TF_CONFIG raises `ClusterConfigError` (also the exception type 2.15
  raised: ValueError, TypeError or JSONDecodeError) with 2.15's sentence
  first; RunConfig refuses only what 2.15's did, the rest is checked before
  training (`check_supported_config`);
* with a `train_distribute` strategy and a cluster, the task properties
  (`is_chief`, `master`, `task_type`, ...) are the values 2.15's distribute
  coordinator set inside each worker, i.e. what `model_fn` saw, right away;
* `replace()` re-derives whatever depends on the replaced values (2.15 only
  set the attribute), and shares strategy objects instead of deep-copying
  them (a running collective strategy cannot be deep-copied).
"""

import collections
import copy
import json
import numbers
import os

from absl import logging

from harness import errors
from harness._tf import tf
from harness.cluster import env_knobs
from harness.cluster import listen
from harness.cluster import tf_config as cluster
from harness.cluster import tf_config_rules
from harness.cluster.strategy_kind import MULTI_WORKER_KINDS
from harness.core import stall
# Re-exported: `harness.run_config.strategy_kind` (the one classifier).
from harness.core.strategy_classifier import strategy_kind
from harness.spec import fn_args
from harness.state import paths

__all__ = [
    "RunConfig", "DistributeConfig", "TaskType", "get_default_session_config",
    "resolve_model_dir", "strategy_kind", "check_supported_config",
]

_USE_DEFAULT = object()
_CONSTRUCTOR_ARGS = (
    "model_dir", "tf_random_seed", "save_summary_steps",
    "save_checkpoints_steps", "save_checkpoints_secs", "session_config",
    "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
    "log_step_count_steps", "train_distribute", "device_fn", "protocol",
    "eval_distribute", "experimental_distribute",
    "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
    "checkpoint_save_graph_def")
# 2.15's list (everything the constructor takes) plus harness's own fields.
_HARNESS_FIELDS = ("steps_per_loop", "remote_connect_timeout_secs",
                   "eval_poll_secs", "eval_idle_timeout_secs",
                   "peer_timeout_secs", "restart_wait_secs",
                   "force_takeover", "bind_address",
                   "remote_claim_timeout_secs",
                   "max_runs_without_progress")
# Knobs whose None falls back to an environment variable, then a default.
_ENV_KNOBS = (env_knobs.PEER_TIMEOUT, env_knobs.RESTART_WAIT)
_DEFAULT_REPLACEABLE_LIST = list(_CONSTRUCTOR_ARGS) + list(_HARNESS_FIELDS)
# Bound of each start-up check of a remote_cluster's servers (seconds).
DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS = 30.0
# steps_per_loop's value for "choose K from the first steps' timing"
# (harness/core/auto_loop.py).
STEPS_PER_LOOP_AUTO = "auto"
# How long a standalone client's claim of its servers outlives its last
# renewal (seconds); see harness.distribute.server_claim.
DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS = 15.0
_SAVE_CKPT_ERR = (
    "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set.")
INDEPENDENT_WORKER = "independent_worker"
STANDALONE_CLIENT = "standalone_client"


class TaskType:
  MASTER = cluster.MASTER
  PS = cluster.PS
  WORKER = cluster.WORKER
  CHIEF = cluster.CHIEF
  EVALUATOR = cluster.EVALUATOR


class DistributeConfig(
    collections.namedtuple(
        "DistributeConfig",
        ["train_distribute", "eval_distribute", "remote_cluster"])):
  """Strategies for training and evaluation, and an optional remote cluster.

  Attributes:
    train_distribute: a `tf.distribute.Strategy` for training.
    eval_distribute: an optional `tf.distribute.Strategy` for evaluation.
    remote_cluster: a dict, `tf.train.ClusterSpec` or `ClusterDef`; if given,
      training runs as a standalone client that drives that cluster.
  """

  def __new__(cls, train_distribute=None, eval_distribute=None,
              remote_cluster=None):
    return super().__new__(cls, train_distribute, eval_distribute,
                           remote_cluster)


def get_default_session_config():
  """A `ConfigProto` with soft placement and one meta-optimizer pass."""
  graph_options = tf.compat.v1.GraphOptions()
  rewrite = graph_options.rewrite_options
  rewrite.meta_optimizer_iterations = rewrite.ONE
  return tf.compat.v1.ConfigProto(
      allow_soft_placement=True, graph_options=graph_options)


def _distributed_session_config(filters):
  config = get_default_session_config()
  config.device_filters.extend(filters)
  return config


def _normalize_remote_cluster(remote_cluster):
  """dict / ClusterSpec / ClusterDef -> {job: [addresses]}, checked."""
  if isinstance(remote_cluster, tf.train.ClusterSpec):
    remote_cluster = remote_cluster.as_dict()
  elif isinstance(remote_cluster, tf.train.ClusterDef):
    remote_cluster = tf.train.ClusterSpec(remote_cluster).as_dict()
  if not isinstance(remote_cluster, dict):
    raise errors.ClusterConfigError(
        f"experimental_distribute.remote_cluster is {remote_cluster!r}: it "
        "must be a dict, tf.train.ClusterSpec or ClusterDef. Fix: pass "
        '{"worker": ["host:port", ...]}.')
  text = json.dumps(remote_cluster, default=repr)
  return cluster.parse_remote_cluster(
      text, source="experimental_distribute.remote_cluster")


def _raise(message, fix, value=None):
  given = "" if value is None else f" Given: {value!r}."
  message = message if message.endswith((".", " ")) else message + "."
  raise errors.ConfigError(f"{message}{given} Fix: {fix}")


def _validate_properties(values):
  """2.15's per-property checks, with 2.15's message first."""
  checks = (
      ("model_dir", lambda d: d, "model_dir should be non-empty",
       "pass a directory path or None."),
      ("save_summary_steps", lambda s: s >= 0,
       "save_summary_steps should be >= 0", "use 0 to disable summaries."),
      ("save_checkpoints_steps", lambda s: s >= 0,
       "save_checkpoints_steps should be >= 0", "use None to disable."),
      ("save_checkpoints_secs", lambda s: s >= 0,
       "save_checkpoints_secs should be >= 0", "use None to disable."),
      ("session_config",
       lambda c: isinstance(c, tf.compat.v1.ConfigProto),
       "session_config must be instance of ConfigProto",
       "pass tf.compat.v1.ConfigProto(...) or None."),
      ("keep_checkpoint_max", lambda k: k >= 0,
       "keep_checkpoint_max should be >= 0", "use 0 or None to keep all."),
      ("keep_checkpoint_every_n_hours", lambda h: h > 0,
       "keep_checkpoint_every_n_hours should be > 0",
       "use a positive number of hours (10000 disables the feature)."),
      ("log_step_count_steps", lambda s: s > 0,
       "log_step_count_steps should be > 0", "use a positive step count."),
      ("tf_random_seed", lambda s: isinstance(s, numbers.Integral),
       "tf_random_seed must be integer.", "pass an int or None."),
      ("experimental_max_worker_delay_secs",
       lambda d: isinstance(d, numbers.Integral),
       "experimental_max_worker_delay_secs must be an integer if set.",
       "pass an int number of seconds or None."),
      ("session_creation_timeout_secs", lambda t: t > 0,
       "session_creation_timeout_secs should be > 0",
       "use a positive number of seconds."),
      ("device_fn", lambda f: callable(f) and set(fn_args(f)) == {"op"},
       'device_fn must be callable with exactly one argument "op".',
       "define it as `def device_fn(op): return device_string`."),
      ("protocol", lambda p: p in (None, "grpc", "grpc+verbs"),
       "protocol should be grpc or grpc+verbs", 'use "grpc" or None.'),
  )
  for name, condition, message, fix in checks:
    value = values[name]
    if value is not None and not condition(value):
      _raise(message, fix, value)
  steps = values["steps_per_loop"]
  if steps != STEPS_PER_LOOP_AUTO and (
      isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or
      steps < 1):
    _raise("steps_per_loop must be an integer >= 1 (training steps run "
           f"inside one session.run) or {STEPS_PER_LOOP_AUTO!r} (harness "
           "picks K from the first steps' timing).",
           "use 1 for one step per run.", steps)
  timeout = values["remote_connect_timeout_secs"]
  if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or (
      not timeout > 0):
    _raise("remote_connect_timeout_secs must be a number of seconds > 0 (how "
           "long the servers of remote_cluster may take to answer).",
           f"use e.g. {DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS:g}.", timeout)
  env_knobs.check_secs("eval_poll_secs", values["eval_poll_secs"],
                       example=env_knobs.EVAL_POLL_SECS)
  env_knobs.check_secs("eval_idle_timeout_secs",
                       values["eval_idle_timeout_secs"], allow_none=True,
                       example=600)
  for knob in _ENV_KNOBS:
    env_knobs.check_secs(knob.name, values[knob.name], allow_none=True,
                         example=knob.default)
  if not isinstance(values["force_takeover"], bool):
    _raise("force_takeover must be True or False (take over model_dir's "
           "lease from a live trainer).", "use False unless the other "
           "trainer is gone.", values["force_takeover"])
  listen.check_bind_address(values["bind_address"])
  claim = values["remote_claim_timeout_secs"]
  if isinstance(claim, bool) or not isinstance(claim, numbers.Real) or (
      not claim > 0):
    _raise("remote_claim_timeout_secs must be a number of seconds > 0 (how "
           "long a standalone client's claim of its servers outlives its "
           "last renewal).",
           f"use e.g. {DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS:g}.", claim)
  stall.check_max_runs(values["max_runs_without_progress"])


def _merged_strategy(values, name):
  """`name` from the constructor or from experimental_distribute, not both."""
  nested = getattr(values["experimental_distribute"], name, None)
  if nested is None:
    return values[name]
  if values[name] is not None:
    _raise(f"Either `{name}` or `experimental_distribute.{name}` can be set.",
           "pass the strategy in one place only.")
  return nested


def _model_dir_from(info, model_dir):
  """2.15's merge of the constructor's model_dir and TF_CONFIG's."""
  if model_dir == "":
    _raise("model_dir should be non-empty.", "pass a path or None.")
  in_tf_config = info.model_dir if info is not None else None
  if in_tf_config:
    if model_dir and model_dir != in_tf_config:
      raise errors.ClusterConfigError(
          "`model_dir` provided in RunConfig construct, if set, must have the "
          "same value as the model_dir in TF_CONFIG. model_dir: "
          f'{model_dir}\nTF_CONFIG["model_dir"]: {in_tf_config}.\nFix: drop '
          "one of them, or make them equal.")
    logging.info("Using model_dir in TF_CONFIG: %s", in_tf_config)
  return model_dir or in_tf_config


class RunConfig:
  """Configuration of an `Estimator` run (tf.estimator 2.15's RunConfig).

  Distributed properties come from TF_CONFIG (read from `environ`, default
  `os.environ`, once, at construction); see `harness.cluster.tf_config`.

  Harness addition: `strategy_kind`, the read-only `StrategyKind` of
  `train_distribute` (None without one; a str enum, so it equals
  "collective", "mirrored", ...), classified once at construction (and
  again by `replace()`); code holding a RunConfig reads it instead of
  classifying the strategy again.
  """

  def __init__(self,
               model_dir=None,
               tf_random_seed=None,
               save_summary_steps=100,
               save_checkpoints_steps=_USE_DEFAULT,
               save_checkpoints_secs=_USE_DEFAULT,
               session_config=None,
               keep_checkpoint_max=5,
               keep_checkpoint_every_n_hours=10000,
               log_step_count_steps=100,
               train_distribute=None,
               device_fn=None,
               protocol=None,
               eval_distribute=None,
               experimental_distribute=None,
               experimental_max_worker_delay_secs=None,
               session_creation_timeout_secs=7200,
               checkpoint_save_graph_def=True,
               *,
               steps_per_loop=1,
               remote_connect_timeout_secs=DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS,
               eval_poll_secs=env_knobs.EVAL_POLL_SECS,
               eval_idle_timeout_secs=None,
               peer_timeout_secs=None,
               restart_wait_secs=None,
               force_takeover=False,
               bind_address=None,
               remote_claim_timeout_secs=DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS,
               max_runs_without_progress=(
                   stall.DEFAULT_MAX_RUNS_WITHOUT_PROGRESS),
               environ=None):
    """Constructs a RunConfig; arguments as tf.estimator 2.15's, plus:

    Args (harness additions, keyword-only):
      steps_per_loop: training steps run inside one `session.run` (>= 1),
        or "auto": K from the measured time of the first steps, bounded by
        the summary, logging and checkpoint cadence (harness.core.auto_loop).
        Default 1: one step per run, tf.estimator's exact semantics.
      remote_connect_timeout_secs: with `remote_cluster`, how long each
        server may take to accept a connection and answer (seconds, > 0).
      eval_poll_secs: how often the evaluator task looks for a new
        checkpoint (seconds, > 0); `EvalSpec.throttle_secs` only spaces
        evaluations.
      eval_idle_timeout_secs: the evaluator task gives up after this many
        seconds without a new checkpoint (None: waits while training may
        resume).
      peer_timeout_secs: a step of a multi-task job fails after this many
        seconds without its peers (None: $HARNESS_PEER_TIMEOUT_SECS, else
        60).
      restart_wait_secs: how long the evaluator and ps tasks wait for a
        preempted or failed chief (None: $HARNESS_RESTART_WAIT_SECS, else
        600).
      force_takeover: a trainer takes over model_dir's lease even while
        another live trainer holds it (see `harness.state.lease`).
      bind_address: where this task's in-process TF server listens: None
        (the host of its cluster address; TensorFlow 2.21 listens on every
        interface instead, and a warning says so) or "*" (all interfaces,
        acknowledged). One host raises NotSupportedError (`harness.cluster.listen`).
      remote_claim_timeout_secs: with `remote_cluster`, the client's claim
        of the servers expires this long after its last renewal (renewed
        every quarter of it); the servers then restart in place, releasing
        what a killed client left (`harness.distribute.server_claim`), seconds > 0.
      max_runs_without_progress: training stops with `TrainingStalledError`
        after this many `session.run` calls leave the global step where it
        was (a train_op that never advances it); None never stops.
      environ: mapping read for TF_CONFIG (and the two variables above)
        instead of `os.environ`, once, here.

    Raises:
      ConfigError: a value breaks 2.15's rules (both save_checkpoints_steps
        and save_checkpoints_secs set, negative counts, ...).
      ClusterConfigError: TF_CONFIG is malformed or inconsistent.
    """
    steps_default = save_checkpoints_steps is _USE_DEFAULT
    secs_default = save_checkpoints_secs is _USE_DEFAULT
    if steps_default and secs_default:
      save_checkpoints_steps, save_checkpoints_secs = None, 600
    elif secs_default:
      save_checkpoints_secs = None
    elif steps_default:
      save_checkpoints_steps = None
    elif save_checkpoints_steps is not None and (
        save_checkpoints_secs is not None):
      _raise(_SAVE_CKPT_ERR, "pass only one of them (the other None).",
             (save_checkpoints_steps, save_checkpoints_secs))
    environ = os.environ if environ is None else environ
    info = cluster.from_environ(environ)
    if info is not None:
      logging.info("TF_CONFIG environment variable: %s", info.to_json())
    if model_dir is not None:
      model_dir = os.fspath(model_dir)
    arguments = locals()  # Every constructor argument, defaults resolved.
    self._cluster_info = info
    self._values = {k: arguments[k] for k in _CONSTRUCTOR_ARGS}
    self._values["model_dir"] = _model_dir_from(info, model_dir)
    self._values["steps_per_loop"] = steps_per_loop
    self._values["remote_connect_timeout_secs"] = remote_connect_timeout_secs
    self._values["eval_poll_secs"] = eval_poll_secs
    self._values["eval_idle_timeout_secs"] = eval_idle_timeout_secs
    self._values["peer_timeout_secs"] = peer_timeout_secs
    self._values["restart_wait_secs"] = restart_wait_secs
    # The fallback variables, read once here (the edge).
    self._env_knobs = {knob.name: environ.get(knob.env, "")
                       for knob in _ENV_KNOBS}
    self._values["force_takeover"] = force_takeover
    self._values["bind_address"] = bind_address
    self._values["remote_claim_timeout_secs"] = remote_claim_timeout_secs
    self._values["max_runs_without_progress"] = max_runs_without_progress
    _validate_properties(self._values)
    for knob in _ENV_KNOBS:  # A bad variable fails now, not mid-training.
      self._knob_secs(knob)
    self._derive()

  def _derive(self):
    """Computes strategies, cluster facts and session_config from values."""
    values, info = self._values, self._cluster_info
    experimental = values["experimental_distribute"]
    train = _merged_strategy(values, "train_distribute")
    evaluate = _merged_strategy(values, "eval_distribute")
    for strategy in (train, evaluate):
      if type(strategy) is tf.distribute.experimental.ParameterServerStrategy:
        _raise("Please use `tf.compat.v1.distribute.experimental.Parameter"
               "ServerStrategy` for parameter server strategy with estimator.",
               "the TF2 ParameterServerStrategy needs ClusterCoordinator, "
               "which Estimator-style training does not use.")
    # The one classification of the run's strategies (`self.strategy_kind`):
    # replace() and deepcopy share the strategy objects, so they reuse it.
    previous = getattr(self, "_classified", None)  # (train, eval, kind)
    if previous and previous[0] is train and previous[1] is evaluate:
      kind = previous[2]
    else:
      kind = strategy_kind(train)
      strategy_kind(evaluate)  # Raises for a non-strategy.
    remote = getattr(experimental, "remote_cluster", None)
    self._remote_cluster = None
    if remote is not None:
      if train is None:
        _raise("experimental_distribute.remote_cluster needs a "
               "train_distribute strategy (2.15 ignored it without one).",
               "set DistributeConfig(train_distribute=...), or drop "
               "remote_cluster.")
      if info is not None and info.has_cluster:
        raise errors.ClusterConfigError(
            'Cannot set both "cluster_spec" of TF_CONFIG and '
            f"`experimental_distribute.remote_cluster`: TF_CONFIG has cluster "
            f"{info.cluster}. Fix: unset TF_CONFIG's cluster in the client "
            "process, or drop remote_cluster.")
      self._remote_cluster = _normalize_remote_cluster(remote)
      facts = cluster.derive(None, has_strategy=True)
      self._coordinator_mode = STANDALONE_CLIENT
      self._cluster_spec = tf.train.ClusterSpec(self._remote_cluster)
    else:
      # Only what 2.15's RunConfig refused; the rest is checked before
      # training (check_supported_config), where it matters.
      cluster.validate_run_config(info, has_strategy=train is not None)
      facts = cluster.derive(info, has_strategy=train is not None)
      self._coordinator_mode = (
          INDEPENDENT_WORKER if train is not None and info is not None and
          info.has_cluster and cluster.MASTER not in info.cluster else None)
      self._cluster_spec = tf.train.ClusterSpec(facts.cluster)
    self._facts = facts
    self._strategy_kind = kind
    self._classified = (train, evaluate, kind)
    self._train_distribute, self._eval_distribute = train, evaluate
    self._session_config = values["session_config"]
    if (self._session_config is None and self._coordinator_mode is None and
        facts.cluster and facts.device_filters):
      self._session_config = _distributed_session_config(facts.device_filters)

  def replace(self, **kwargs):
    """Returns a new RunConfig with the given properties replaced.

    Allowed: the constructor's arguments (2.15's list) and harness's
    keyword-only fields (`steps_per_loop`, `remote_connect_timeout_secs`,
    `eval_poll_secs`, `eval_idle_timeout_secs`, `peer_timeout_secs`,
    `restart_wait_secs`, `force_takeover`, `bind_address`,
    `remote_claim_timeout_secs`, `max_runs_without_progress`).
    Setting one of `save_checkpoints_steps` / `save_checkpoints_secs` to a
    value clears the other. TF_CONFIG is not read again.

    Raises:
      ConfigError: a key is not allowed, or a value breaks a rule.
    """
    for key in kwargs:
      if key not in _DEFAULT_REPLACEABLE_LIST:
        raise errors.ConfigError(
            f"Replacing {key} is not supported. Allowed properties are "
            f"{_DEFAULT_REPLACEABLE_LIST}. Fix: replace only those; the "
            "task properties (task_type, is_chief, ...) come from TF_CONFIG, "
            "so set it before building the RunConfig.")
    values = dict(self._values, **kwargs)
    steps, secs = values["save_checkpoints_steps"], values[
        "save_checkpoints_secs"]
    if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs:
      if steps is not None and secs is not None:
        _raise(_SAVE_CKPT_ERR, "pass only one of them (the other None).",
               (steps, secs))
    elif "save_checkpoints_steps" in kwargs and steps is not None:
      values["save_checkpoints_secs"] = None
    elif "save_checkpoints_secs" in kwargs and secs is not None:
      values["save_checkpoints_steps"] = None
    if isinstance(values.get("model_dir"), os.PathLike):
      values["model_dir"] = os.fspath(values["model_dir"])
    _validate_properties(values)
    new = copy.copy(self)
    new._values = values  # pylint: disable=protected-access
    new._derive()  # pylint: disable=protected-access
    return new

  def __deepcopy__(self, memo):
    # Strategies hold threads and devices: share them, copy plain data.
    new = copy.copy(self)
    shared = ("train_distribute", "eval_distribute", "experimental_distribute",
              "device_fn")
    new._values = {k: v if k in shared else copy.deepcopy(v, memo)  # pylint: disable=protected-access
                   for k, v in self._values.items()}
    new._derive()  # pylint: disable=protected-access
    return new

  # The user's values.
  model_dir = property(lambda self: self._values["model_dir"])
  tf_random_seed = property(lambda self: self._values["tf_random_seed"])
  save_summary_steps = property(
      lambda self: self._values["save_summary_steps"])
  save_checkpoints_steps = property(
      lambda self: self._values["save_checkpoints_steps"])
  save_checkpoints_secs = property(
      lambda self: self._values["save_checkpoints_secs"])
  keep_checkpoint_max = property(
      lambda self: self._values["keep_checkpoint_max"])
  keep_checkpoint_every_n_hours = property(
      lambda self: self._values["keep_checkpoint_every_n_hours"])
  log_step_count_steps = property(
      lambda self: self._values["log_step_count_steps"])
  device_fn = property(lambda self: self._values["device_fn"])
  protocol = property(lambda self: self._values["protocol"])
  experimental_distribute = property(
      lambda self: self._values["experimental_distribute"])
  experimental_max_worker_delay_secs = property(
      lambda self: self._values["experimental_max_worker_delay_secs"])
  session_creation_timeout_secs = property(
      lambda self: self._values["session_creation_timeout_secs"])
  checkpoint_save_graph_def = property(
      lambda self: self._values["checkpoint_save_graph_def"])
  steps_per_loop = property(lambda self: self._values["steps_per_loop"])
  remote_connect_timeout_secs = property(
      lambda self: self._values["remote_connect_timeout_secs"])
  eval_poll_secs = property(lambda self: self._values["eval_poll_secs"])
  eval_idle_timeout_secs = property(
      lambda self: self._values["eval_idle_timeout_secs"])
  peer_timeout_secs = property(
      lambda self: self._knob_secs(env_knobs.PEER_TIMEOUT))
  restart_wait_secs = property(
      lambda self: self._knob_secs(env_knobs.RESTART_WAIT))

  def _knob_secs(self, knob):
    """The field's value, else its variable (read at construction), else
    its default."""
    return env_knobs.resolve_secs(self._values[knob.name], knob,
                                  {knob.env: self._env_knobs[knob.name]})
  force_takeover = property(lambda self: self._values["force_takeover"])
  bind_address = property(lambda self: self._values["bind_address"])
  remote_claim_timeout_secs = property(
      lambda self: self._values["remote_claim_timeout_secs"])
  max_runs_without_progress = property(
      lambda self: self._values["max_runs_without_progress"])

  # Derived from the values and TF_CONFIG.
  train_distribute = property(lambda self: self._train_distribute)
  strategy_kind = property(lambda self: self._strategy_kind)
  eval_distribute = property(lambda self: self._eval_distribute)
  session_config = property(lambda self: self._session_config)
  cluster_spec = property(lambda self: self._cluster_spec)
  task_type = property(lambda self: self._facts.task_type)
  task_id = property(lambda self: self._facts.task_id)
  master = property(lambda self: self._facts.master)
  evaluation_master = property(lambda self: self._facts.evaluation_master)
  is_chief = property(lambda self: self._facts.is_chief)
  num_ps_replicas = property(lambda self: self._facts.num_ps_replicas)
  num_worker_replicas = property(lambda self: self._facts.num_worker_replicas)
  global_id_in_cluster = property(
      lambda self: self._facts.global_id_in_cluster)

  @property
  def service(self):
    """The platform-defined TF_CONFIG "service" dict, or None."""
    info = self._cluster_info
    return None if info is None or self._remote_cluster else info.service

  @property
  def cluster_info(self):
    """The `harness.cluster.tf_config.ClusterInfo` read from TF_CONFIG, or None."""
    return self._cluster_info

  @property
  def remote_cluster(self):
    """{job: [addresses]} of a standalone-client run, or None."""
    return self._remote_cluster

  @property
  def coordinator_mode(self):
    """"independent_worker", "standalone_client", or None (as 2.15's)."""
    return self._coordinator_mode

  def __repr__(self):
    shown = {k: v for k, v in self._values.items() if k != "session_config"}
    return (f"RunConfig({shown}, task={self.task_type}/{self.task_id}, "
            f"is_chief={self.is_chief}, cluster={self._facts.cluster})")


def resolve_model_dir(constructor_model_dir, config):
  """2.15's merge of `Estimator(model_dir=...)` with `config.model_dir`.

  Args:
    constructor_model_dir: the Estimator's `model_dir` (str, PathLike, None).
    config: a `RunConfig` or None (a default one is made).

  Returns:
    (model_dir, config): model_dir is None when neither names one (the
    Estimator then makes a temporary directory and replaces it in); config
    has the model_dir and, if it had none, the default session_config.

  Raises:
    ConfigError: config is not a RunConfig, or the two model_dirs differ.
  """
  if config is None:
    config = RunConfig()
    logging.info("Using default config.")
  if not isinstance(config, RunConfig):
    _raise(f"config must be an instance of `RunConfig`, but provided {config}.",
           "pass harness.RunConfig(...) (tf.estimator.RunConfig objects are "
           "not accepted).")
  if config.session_config is None:
    config = config.replace(session_config=get_default_session_config())
  # The library's edge: model_dir is normalised here, once (`~` expanded,
  # relative local paths made absolute, URLs unchanged).
  model_dir = paths.normalize_model_dir(constructor_model_dir)
  if config.model_dir:
    normal = paths.normalize_model_dir(config.model_dir)
    if normal != config.model_dir:
      config = config.replace(model_dir=normal)
  if model_dir is not None and config.model_dir is not None and (
      config.model_dir != model_dir):
    _raise("`model_dir` are set both in constructor and `RunConfig`, but with "
           f"different values. In constructor: '{model_dir}', in "
           f"`RunConfig`: '{config.model_dir}' ",
           "set model_dir in one place only, or to the same value.")
  if model_dir:
    config = config.replace(model_dir=model_dir)
  return config.model_dir, config


def check_supported_config(config):
  """Refuses a RunConfig harness cannot train with, before anything starts.

  Raises:
    ClusterConfigError: TF_CONFIG breaks a rule that matters for a run
      (addresses, one evaluator, strategy and cluster agreeing; see
      `harness.cluster.tf_config.validate`), which RunConfig, like 2.15's, accepted.
    NotSupportedError: remote_cluster with a single-machine strategy.
    ClusterConfigError: a remote_cluster that breaks the collective /
      parameter-server job rules (`tf_config_rules.check_strategy_jobs`).
  """
  if config.remote_cluster is None:
    cluster.validate(config.cluster_info,
                     has_strategy=config.train_distribute is not None,
                     strategy_kind=config.strategy_kind)
  if config.remote_cluster is not None and (
      config.strategy_kind not in MULTI_WORKER_KINDS):
    raise errors.NotSupportedError(
        "Standalone-client mode (DistributeConfig(remote_cluster=...)) "
        "drives a cluster through a multi-worker strategy, but "
        f"train_distribute is {type(config.train_distribute).__name__}. Fix: "
        "use tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy"
        " (collective) or ParameterServerStrategy (with a \"ps\" job).")
  if config.remote_cluster is not None:
    tf_config_rules.check_strategy_jobs(
        config.strategy_kind, config.remote_cluster,
        source="experimental_distribute.remote_cluster")
