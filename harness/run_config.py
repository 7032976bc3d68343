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
`max_runs_without_progress`, `stop_timeout_secs`, `input_timeout_secs`,
`metrics_port`, `metrics_bind` and
`environ`), properties, `replace()`
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
import os

from absl import logging

from harness import errors
from harness import run_config_checks as checks
from harness._tf import tf
from harness.cluster import env_knobs
from harness.cluster import tf_config as cluster
from harness.cluster import tf_config_rules
from harness.cluster.strategy_kind import MULTI_WORKER_KINDS
from harness.core import live_metrics
from harness.core import stall
from harness.core import stop_signal
# Re-exported: `harness.run_config.strategy_kind` (the one classifier).
from harness.core.strategy_classifier import strategy_kind
from harness.state import paths
from harness.state import storage

__all__ = [
    "RunConfig", "DistributeConfig", "TaskType", "get_default_session_config",
    "resolve_model_dir", "strategy_kind", "check_supported_config",
]

_USE_DEFAULT = object()


class _FromEnviron:
  """RunConfig's `cluster_info` default: TF_CONFIG is read from `environ`."""

  def __repr__(self):
    return "<TF_CONFIG from environ>"


_FROM_ENVIRON = _FromEnviron()
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
                   "max_runs_without_progress", "stop_timeout_secs",
                   "input_timeout_secs", "metrics_port", "metrics_bind")
_ENV_KNOBS = checks.ENV_KNOBS
_DEFAULT_REPLACEABLE_LIST = list(_CONSTRUCTOR_ARGS) + list(_HARNESS_FIELDS)
# Public constants of RunConfig's values (harness.run_config_checks).
DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS = (
    checks.DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS)
STEPS_PER_LOOP_AUTO = checks.STEPS_PER_LOOP_AUTO
DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS = checks.DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS
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


# The checks' functions under the names the class body uses.
_raise = checks.fail
_validate_properties = checks.validate_properties
_merged_strategy = checks.merged_strategy
_normalize_remote_cluster = checks.normalize_remote_cluster


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
               stop_timeout_secs=stop_signal.DEFAULT_STOP_TIMEOUT_SECS,
               input_timeout_secs=None,
               metrics_port=live_metrics.DEFAULT_METRICS_PORT,
               metrics_bind=live_metrics.DEFAULT_METRICS_BIND,
               environ=None,
               cluster_info=_FROM_ENVIRON):
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
      stop_timeout_secs: after a first SIGTERM/SIGINT, a training process
        whose step does not end within this many seconds (a hung input,
        a blocked session.run) logs the stage it is blocked in and exits,
        without the final checkpoint (seconds > 0).
      input_timeout_secs: a local training run whose first batch has not
        arrived (its first session.run has not returned) after this many
        seconds fails (None: it waits, logging every 10 s).
      metrics_port: each training (and evaluator) task serves live
        Prometheus metrics on this port (`harness.core.live_metrics`); 0
        (default): no endpoint.
      metrics_bind: the address that endpoint listens on; default
        127.0.0.1 (this machine only), "0.0.0.0" for a remote scraper.
      environ: mapping read for TF_CONFIG (and the two variables above)
        instead of `os.environ`, once, here.
      cluster_info: TF_CONFIG already parsed by the caller (a
        `harness.cluster.tf_config.ClusterInfo`, or None for "no
        TF_CONFIG"): TF_CONFIG is then not read again (`harness.main`
        parses it once, at its edge). The two variables above are still
        read from `os.environ`. Not together with `environ`.

    Raises:
      ConfigError: a value breaks 2.15's rules (both save_checkpoints_steps
        and save_checkpoints_secs set, negative counts, ...).
      ClusterConfigError: TF_CONFIG is malformed or inconsistent.
    """
    if cluster_info is not _FROM_ENVIRON and environ is not None:
      _raise("RunConfig takes TF_CONFIG from `environ` or, already parsed, "
             "from `cluster_info`, not both.", "pass one of them (the "
             "variables of `environ` other than TF_CONFIG are read from "
             "os.environ with `cluster_info`).")
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
    if cluster_info not in (None, _FROM_ENVIRON) and not isinstance(
        cluster_info, cluster.ClusterInfo):
      _raise("cluster_info must be a harness.cluster.tf_config.ClusterInfo "
             "or None.", "pass harness.cluster.tf_config.from_environ(...)'s "
             "result.", cluster_info)
    environ = os.environ if environ is None else environ
    info = cluster_info
    if cluster_info is _FROM_ENVIRON:
      info = cluster.from_environ(environ)
    if info is not None:
      logging.info("TF_CONFIG environment variable: %s",
                   checks.tf_config_summary(info))
      logging.debug("TF_CONFIG environment variable (full): %s",
                    info.to_json())
    arguments = locals()  # Every constructor argument, defaults resolved.
    self._cluster_info = info
    self._values = {k: arguments[k] for k in _CONSTRUCTOR_ARGS}
    # The one model_dir rule (harness.state.paths), RunConfig's half.
    self._values["model_dir"], _ = paths.merge_model_dirs(
        run_config=model_dir, tf_config=info.model_dir if info else None)
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
    self._values["stop_timeout_secs"] = stop_timeout_secs
    self._values["input_timeout_secs"] = input_timeout_secs
    self._values["metrics_port"] = metrics_port
    self._values["metrics_bind"] = metrics_bind
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
    `remote_claim_timeout_secs`, `max_runs_without_progress`,
    `stop_timeout_secs`, `input_timeout_secs`, `metrics_port`,
    `metrics_bind`).
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
  stop_timeout_secs = property(
      lambda self: self._values["stop_timeout_secs"])
  input_timeout_secs = property(
      lambda self: self._values["input_timeout_secs"])
  metrics_port = property(lambda self: self._values["metrics_port"])
  metrics_bind = property(lambda self: self._values["metrics_bind"])

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
  """The Estimator's model_dir and config: 2.15's merge, decided once.

  Args:
    constructor_model_dir: the Estimator's `model_dir` (str, PathLike,
      None); `harness.main` passes `--model_dir` here.
    config: a `RunConfig` or None (a default one is made).

  Returns:
    (model_dir, config): model_dir from `harness.state.storage.
    resolve_model_dir` (the constructor's, else the RunConfig's, else
    TF_CONFIG's, else a new temporary folder; one log line says which);
    config has that model_dir and, if it had none, the default
    session_config.

  Raises:
    ConfigError: config is not a RunConfig, or the model_dirs differ.
  """
  if config is None:
    config = RunConfig()
    logging.info("Using default config.")
  if not isinstance(config, RunConfig):
    _raise(f"config must be an instance of `RunConfig`, but provided {config}.",
           "pass tf.estimator.RunConfig(...) (harness.RunConfig).")
  if config.session_config is None:
    config = config.replace(session_config=get_default_session_config())
  info = None if config.remote_cluster else config.cluster_info
  in_tf_config = info.model_dir if info is not None else None
  configured = config.model_dir
  if paths.normalize_model_dir(configured) == paths.normalize_model_dir(
      in_tf_config):
    configured = None  # TF_CONFIG's, merged in by RunConfig: say so.
  model_dir = storage.resolve_model_dir(
      argument=constructor_model_dir, run_config=configured,
      tf_config=in_tf_config)
  if config.model_dir != model_dir:
    config = config.replace(model_dir=model_dir)
  return model_dir, config


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
