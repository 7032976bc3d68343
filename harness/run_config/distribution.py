"""RunConfig's distributed side: strategies and TF_CONFIG -> task facts.

    derived = distribution.derive(values, cluster_info)
    derived.facts.is_chief, derived.coordinator_mode, derived.session_config
    distribution.check_supported_config(config)   # before training; once
                                                  # per RunConfig

`derive` is what `RunConfig` computes from its values and the TF_CONFIG it
read: the train / eval strategies (given in one place, classified once),
a standalone client's `remote_cluster`, the cluster facts of this task
(`harness.cluster.derive`), 2.15's coordinator mode and the session
config with the task's device filters. `check_supported_config` refuses,
before a run starts, what RunConfig (like 2.15's) accepted but harness
cannot train with. Also here: 2.15's `DistributeConfig`, `TaskType` and
`get_default_session_config`.
"""

import collections
import copy
import dataclasses
import os

from absl import logging

from harness import cluster
from harness import errors
from harness import plan as plan_lib
from harness._tf import tf
from harness.cluster import tf_config_checks
from harness.cluster.strategy_kind import MULTI_WORKER_KINDS
from harness.core.strategy_classifier import strategy_kind
from harness.plan import knobs as plan_knobs
from harness.run_config import checks

__all__ = [
    "TaskType", "DistributeConfig", "get_default_session_config", "Derived",
    "derive", "check_supported_config", "INDEPENDENT_WORKER",
    "STANDALONE_CLIENT",
]

# 2.15's coordinator modes (`RunConfig.coordinator_mode`).
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


_XLA_CPU_FLAG = "--tf_xla_cpu_global_jit"


def with_xla(session_config):
  """A copy of `session_config` (None: the default) with XLA
  auto-clustering on (`global_jit_level` ON_1).

  On CPU, TensorFlow clusters only with `--tf_xla_cpu_global_jit` in
  TF_XLA_FLAGS, read once, at the process's first session: it is added
  here (and logged), so `RunConfig(xla=True)` built before any session
  compiles on CPU too.
  """
  config = copy.deepcopy(session_config or get_default_session_config())
  config.graph_options.optimizer_options.global_jit_level = (
      tf.compat.v1.OptimizerOptions.ON_1)
  flags = os.environ.get("TF_XLA_FLAGS", "")
  if _XLA_CPU_FLAG not in flags.split():
    os.environ["TF_XLA_FLAGS"] = f"{flags} {_XLA_CPU_FLAG}".strip()
    logging.info("config | xla=True: global_jit_level ON_1; TF_XLA_FLAGS=%s "
                 "(CPU clustering; read at the process's first session).",
                 os.environ["TF_XLA_FLAGS"])
  return config


def _distributed_session_config(filters):
  config = get_default_session_config()
  config.device_filters.extend(filters)
  return config


# What RunConfig derives from its values and TF_CONFIG (see `derive`).
Derived = collections.namedtuple("Derived", [
    "train_distribute", "eval_distribute", "strategy_kind", "remote_cluster",
    "coordinator_mode", "cluster_spec", "facts", "session_config", "plan",
    "plan_inputs"])


def derive(values, info, previous=None, *, plan=None, environ=None,
           model_dir_source=None):
  """Strategies, cluster facts and session_config from RunConfig's values.

  Args:
    values: RunConfig's dict of values (constructor and harness fields).
    info: the `harness.cluster.ClusterInfo` read from TF_CONFIG, or None.
    previous: the `Derived` of the RunConfig this one was copied from, or
      None; its strategy kind is reused when the strategies are the same
      objects (replace() and deepcopy share them), so a strategy is
      classified once.
    plan: the caller's `harness.plan.TaskPlan`, taken as it is (its
      model_dir aside), or None: planned here.
    environ: the variables the plan reads (the knobs',
      $JOBSET_RESTART_ATTEMPT), as RunConfig read them.
    model_dir_source: where `values["model_dir"]` came from; None: it is
      RunConfig's argument, which the first plan merges with TF_CONFIG's.

  Returns:
    A `Derived`.

  Raises:
    ConfigError: a strategy given twice, the TF2 ParameterServerStrategy,
      a non-strategy, or remote_cluster without train_distribute.
    ClusterConfigError: TF_CONFIG breaks a rule 2.15's RunConfig enforced,
      or has a cluster besides remote_cluster.
  """
  train, evaluate, kind = _strategies(values, previous)
  remote = getattr(values["experimental_distribute"], "remote_cluster", None)
  remote_cluster = None
  if remote is not None:
    remote_cluster, _, mode = _standalone_client(remote, train, info)
  inputs = dict(
      environ=environ or {}, strategy=kind, has_strategy=(
          train is not None), remote_cluster=remote_cluster,
      num_devices_per_worker=_devices_per_worker(train),
      knob_values={name: values[name] for name in plan_knobs.NAMES})
  plan = _plan(info, inputs, previous or plan, values["model_dir"],
               model_dir_source)
  # Only what 2.15's RunConfig refused (and the knobs); the rest
  # is raised before training (check_supported_config), where it matters.
  plan_lib.raise_problem(plan, plan_lib.Stage.RUN_CONFIG)
  facts = plan.facts
  if remote is not None:
    spec = tf.train.ClusterSpec(remote_cluster)
  else:
    mode = (INDEPENDENT_WORKER if train is not None and info is not None and
            info.has_cluster and cluster.MASTER not in info.cluster else None)
    spec = tf.train.ClusterSpec(facts.cluster)
  session_config = values["session_config"]
  if (session_config is None and mode is None and facts.cluster and
      facts.device_filters):
    session_config = _distributed_session_config(facts.device_filters)
  if values["xla"]:
    session_config = with_xla(session_config)
  return Derived(train, evaluate, kind, remote_cluster, mode, spec, facts,
                 session_config, plan, (info, inputs))


def _plan(info, inputs, previous, model_dir, model_dir_source):
  """The plan of `info` and `inputs`: `previous` if it is a `TaskPlan`
  (the caller's); a copy's (replace()) is its original's, whose model_dir
  only may differ: planned once. The first plan (no `model_dir_source`)
  merges `model_dir` with TF_CONFIG's; later ones carry it, as decided
  then or replaced (2.15's replace() checked nothing)."""
  if isinstance(previous, plan_lib.TaskPlan):
    given = previous
  elif previous is not None and previous.plan_inputs == (info, inputs):
    given = previous.plan
  elif model_dir_source is None:
    return plan_lib.plan_task(info, run_config_model_dir=model_dir, **inputs)
  else:
    given = plan_lib.plan_task(info, **inputs)
  return dataclasses.replace(given, model_dir=model_dir,
                             model_dir_source=model_dir_source)


def _devices_per_worker(strategy):
  """The devices `strategy` replicates over on each worker (1 without)."""
  try:
    return max(1, len(strategy.extended.worker_devices))
  except (AttributeError, RuntimeError, ValueError):
    return 1


def _strategies(values, previous):
  """(train, eval, kind of train): given once each, classified once."""
  train = checks.merged_strategy(values, "train_distribute")
  evaluate = checks.merged_strategy(values, "eval_distribute")
  for strategy in (train, evaluate):
    if type(strategy) is tf.distribute.experimental.ParameterServerStrategy:
      checks.fail("Please use `tf.compat.v1.distribute.experimental.Parameter"
                  "ServerStrategy` for parameter server strategy with "
                  "estimator.", "the TF2 ParameterServerStrategy needs "
                  "ClusterCoordinator, which Estimator-style training does "
                  "not use.")
  if (previous is not None and previous.train_distribute is train and
      previous.eval_distribute is evaluate):
    return train, evaluate, previous.strategy_kind
  kind = strategy_kind(train)
  strategy_kind(evaluate)  # Raises for a non-strategy.
  return train, evaluate, kind


def _standalone_client(remote, train, info):
  """(remote_cluster, facts, coordinator mode) of a standalone client."""
  if train is None:
    checks.fail("experimental_distribute.remote_cluster needs a "
                "train_distribute strategy (2.15 ignored it without one).",
                "set DistributeConfig(train_distribute=...), or drop "
                "remote_cluster.")
  if info is not None and info.has_cluster:
    raise errors.ClusterConfigError(
        'Cannot set both "cluster_spec" of TF_CONFIG and '
        f"`experimental_distribute.remote_cluster`: TF_CONFIG has cluster "
        f"{info.cluster}. Fix: unset TF_CONFIG's cluster in the client "
        "process, or drop remote_cluster.")
  remote_cluster = checks.normalize_remote_cluster(remote)
  return (remote_cluster, cluster.derive(None, has_strategy=True),
          STANDALONE_CLIENT)


class RunCheck:
  """Whether a RunConfig's values passed `check_supported_config`: one per
  RunConfig and its deep copies (`Estimator.config` hands out copies; a
  chief's train_and_evaluate checks one, its Estimator.train then finds
  the check passed); `replace()` starts a new one."""

  def __init__(self):
    self.passed = False


def check_supported_config(config):
  """Refuses a RunConfig harness cannot train with, before anything starts.

  Raises:
    ClusterConfigError: TF_CONFIG breaks a rule that matters for a run
      (addresses, one evaluator, strategy and cluster agreeing; see
      `harness.cluster.validate`), which RunConfig, like 2.15's, accepted.
    NotSupportedError: remote_cluster with a single-machine strategy.
    ClusterConfigError: a remote_cluster that breaks the collective /
      parameter-server job rules (`tf_config_checks.check_strategy_jobs`).
  """
  run_check = config._run_check  # pylint: disable=protected-access
  if run_check.passed:
    return  # These very values passed (replace() makes a new RunConfig).
  if config.remote_cluster is None:  # The plan ran every TF_CONFIG rule.
    plan_lib.raise_problem(config.plan, plan_lib.Stage.TRAIN)
  if config.remote_cluster is not None and (
      config.strategy_kind not in MULTI_WORKER_KINDS):
    raise errors.NotSupportedError(
        "Standalone-client mode (DistributeConfig(remote_cluster=...)) "
        "drives a cluster through a multi-worker strategy, but "
        f"train_distribute is {type(config.train_distribute).__name__}. Fix: "
        "use tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy"
        " (collective) or ParameterServerStrategy (with a \"ps\" job).")
  if config.remote_cluster is not None:
    tf_config_checks.check_strategy_jobs(
        config.strategy_kind, config.remote_cluster,
        source="experimental_distribute.remote_cluster")
  run_check.passed = True
