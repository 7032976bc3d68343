"""RunConfig, as tf.estimator 2.15 had it.

Usage::

    config = harness.RunConfig(model_dir="/tmp/m", save_checkpoints_steps=500,
                               train_distribute=strategy, steps_per_loop=10)
    config.is_chief, config.num_worker_replicas, config.cluster_spec
    config = config.replace(keep_checkpoint_max=10)

`RunConfig` keeps 2.15's constructor (plus keyword-only harness fields,
each declared once in `harness.fields` with its default, check and docs,
and where TF_CONFIG comes from: `environ` or a `plan`), properties (and
`restart_attempt`), `replace()` allow-list and messages.
It is a thin shell over data: the user's values (`run_config.checks`), the
`ClusterInfo` read once from TF_CONFIG (`harness.cluster.tf_config`), and
facts derived from both (`harness.run_config.distribution`). Unlike 2.15:

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

import copy
import os
import textwrap

from absl import logging

from harness import cluster
from harness import errors
from harness import fields
from harness import plan as plan_lib
from harness.cluster import env_knobs
from harness.cluster import restart_attempt as restart_attempt_lib
from harness.run_config import checks
from harness.run_config import distribution
from harness.state import paths

__all__ = ["RunConfig", "CONSTRUCTOR_ARGS"]

_USE_DEFAULT = env_knobs.NotGiven.CHECKPOINT_DEFAULT
CONSTRUCTOR_ARGS = (
    "model_dir", "tf_random_seed", "save_summary_steps",
    "save_checkpoints_steps", "save_checkpoints_secs", "session_config",
    "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
    "log_step_count_steps", "train_distribute", "device_fn", "protocol",
    "eval_distribute", "experimental_distribute",
    "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
    "checkpoint_save_graph_def")
# 2.15's list (everything the constructor takes) plus harness's own fields.
_HARNESS_FIELDS = fields.NAMES
_DEFAULT_REPLACEABLE_LIST = list(CONSTRUCTOR_ARGS) + list(_HARNESS_FIELDS)
_D = fields.default  # The keyword-only defaults below are the table's.


def _read_cluster_info(environ, plan):
  """The ClusterInfo of this run: the `plan`'s, or TF_CONFIG of `environ`
  read now (None: no TF_CONFIG); logged in one short line."""
  if plan is not None and not isinstance(plan, plan_lib.TaskPlan):
    checks.fail("plan must be a harness.plan.TaskPlan or None.",
                "pass harness.plan.plan_task(...)'s result.", plan)
  info = cluster.from_environ(environ) if plan is None else plan.cluster_info
  if info is not None:
    logging.info("TF_CONFIG environment variable: %s",
                 checks.tf_config_summary(info))
    logging.debug("TF_CONFIG environment variable (full): %s",
                  info.to_json())
  return info


def _value(name):
  """A read-only RunConfig property: the user's value `name`."""
  return property(lambda self: self._values[name])


def _derived(name):
  """A read-only RunConfig property: field `name` of `distribution.Derived`."""
  return property(lambda self: getattr(self._derived, name))


def _fact(name):
  """A read-only RunConfig property: this task's `name` from TF_CONFIG (a
  field of `harness.cluster.derive`'s facts)."""
  return property(lambda self: getattr(self._derived.facts, name))


class RunConfig:
  """Configuration of an `Estimator` run (tf.estimator 2.15's RunConfig).

  Distributed properties come from TF_CONFIG (read from `environ`, default
  `os.environ`, once, at construction); see `harness.cluster.tf_config`.

  Harness additions: `strategy_kind`, the `StrategyKind` of
  `train_distribute` (None without one), classified once; `plan`, this
  process's `harness.plan.TaskPlan`, which the task properties read.
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
               # harness.fields, in its order (tests/test_fields.py).
               steps_per_loop=_D("steps_per_loop"),
               remote_connect_timeout_secs=_D("remote_connect_timeout_secs"),
               eval_poll_secs=_D("eval_poll_secs"),
               eval_idle_timeout_secs=_D("eval_idle_timeout_secs"),
               peer_timeout_secs=_D("peer_timeout_secs"),
               restart_wait_secs=_D("restart_wait_secs"),
               force_takeover=_D("force_takeover"),
               bind_address=_D("bind_address"),
               remote_claim_timeout_secs=_D("remote_claim_timeout_secs"),
               max_runs_without_progress=_D("max_runs_without_progress"),
               stop_timeout_secs=_D("stop_timeout_secs"),
               input_timeout_secs=_D("input_timeout_secs"),
               input_report_secs=_D("input_report_secs"),
               metrics_port=_D("metrics_port"),
               metrics_bind=_D("metrics_bind"),
               input_pipeline=_D("input_pipeline"),
               ps_placement=_D("ps_placement"),
               xla=_D("xla"),
               # Where TF_CONFIG comes from: one of them.
               environ=None,
               plan=None):
    """Constructs a RunConfig; arguments as tf.estimator 2.15's, plus:

    Args (harness additions, keyword-only; from `harness.fields`):
{harness_args}
      environ: mapping read for TF_CONFIG, the knobs' variables (above)
        and $JOBSET_RESTART_ATTEMPT instead of `os.environ`, once, here.
      plan: the caller's `harness.plan.TaskPlan` (`harness.main`'s): its
        TF_CONFIG, model_dir and knobs are taken as decided, nothing is
        read or planned again. Not with `model_dir` or `environ`.

    Raises:
      ConfigError: a value breaks 2.15's rules (both save_checkpoints_steps
        and save_checkpoints_secs set, negative counts, ...).
      ClusterConfigError: TF_CONFIG is malformed or inconsistent.
    """
    if plan is not None:  # Decided by the caller: nothing read again.
      if model_dir is not None:
        checks.fail("RunConfig takes model_dir from `plan` or from "
                    "`model_dir`, not both.", "pass the plan alone.")
      if environ is not None:
        checks.fail("RunConfig takes TF_CONFIG from `environ` or, already "
                    "planned, from `plan`, not both.", "pass one of them "
                    "(the plan read its variables when it was made).")
    save_checkpoints_steps, save_checkpoints_secs = checks.checkpoint_cadence(
        save_checkpoints_steps, save_checkpoints_secs, unset=_USE_DEFAULT)
    environ = os.environ if environ is None else environ
    info = _read_cluster_info(environ, plan)
    arguments = locals()  # Every constructor argument, defaults resolved.
    self._cluster_info = info
    self._run_check = distribution.RunCheck()
    self._values = {k: arguments[k]
                    for k in CONSTRUCTOR_ARGS + _HARNESS_FIELDS}
    # The model_dir is the plan's: RunConfig's merged with TF_CONFIG's by
    # `harness.plan.plan_task` (in `_derive`), or the given plan's.
    self._values["model_dir"], self._model_dir_source = (
        (plan.model_dir, plan.model_dir_source) if plan is not None else
        (model_dir, None))
    # The fallback variables, read once here (the edge); the plan resolves
    # them (a bad one fails now, in `_derive`, not mid-training).
    self._plan_environ = {
        name: environ[name] for name in (
            *(k.env for k in checks.ENV_KNOBS),
            restart_attempt_lib.RESTART_ATTEMPT_ENV) if name in environ}
    checks.validate_properties(self._values)
    self._given_plan = plan
    self._derive()
    self._values["model_dir"] = self.plan.model_dir  # Carried from now on.
    self._model_dir_source = self.plan.model_dir_source

  def _derive(self):
    """Computes strategies, cluster facts and session_config from values
    (`distribution.derive`); the TPU RunConfig extends it."""
    derived = distribution.derive(
        self._values, self._cluster_info,
        previous=getattr(self, "_derived", None), plan=self._given_plan,
        environ=self._plan_environ, model_dir_source=self._model_dir_source)
    self._derived = derived
    # Own attributes: the TPU RunConfig sets them from its cluster resolver.
    self._cluster_spec = derived.cluster_spec
    self._session_config = derived.session_config

  def replace(self, **kwargs):
    """Returns a new RunConfig with the given properties replaced.

    Allowed: the constructor's arguments (2.15's list) and harness's
    keyword-only fields (`harness.fields.NAMES`).
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
    values = checks.replaced_checkpoint_cadence(self._values, kwargs)
    if isinstance(values.get("model_dir"), os.PathLike):
      values["model_dir"] = os.fspath(values["model_dir"])
    checks.validate_properties(values)
    new = copy.copy(self)
    new._values = values  # pylint: disable=protected-access
    if "model_dir" in kwargs:  # The plan names where it came from.
      new._model_dir_source = paths.FROM_RUN_CONFIG  # pylint: disable=protected-access
    new._run_check = distribution.RunCheck()  # pylint: disable=protected-access
    new._derive()  # pylint: disable=protected-access
    return new

  def __deepcopy__(self, memo):
    # Strategies hold threads and devices: share them, copy plain data. The
    # same values have the same derived facts: the copy carries them (the
    # plan, the cluster; `Estimator.config` copies on each read) instead of
    # deriving them again; its session config is its own, as in 2.15.
    new = copy.copy(self)
    shared = ("train_distribute", "eval_distribute", "experimental_distribute",
              "device_fn")
    new._values = {k: v if k in shared else copy.deepcopy(v, memo)  # pylint: disable=protected-access
                   for k, v in self._values.items()}
    new._session_config = copy.deepcopy(self._session_config, memo)  # pylint: disable=protected-access
    return new  # Shares `_derived` and `_run_check` (copy.copy).

  # The user's values.
  model_dir = _value("model_dir")
  tf_random_seed = _value("tf_random_seed")
  save_summary_steps = _value("save_summary_steps")
  save_checkpoints_steps = _value("save_checkpoints_steps")
  save_checkpoints_secs = _value("save_checkpoints_secs")
  keep_checkpoint_max = _value("keep_checkpoint_max")
  keep_checkpoint_every_n_hours = _value("keep_checkpoint_every_n_hours")
  log_step_count_steps = _value("log_step_count_steps")
  device_fn = _value("device_fn")
  protocol = _value("protocol")
  experimental_distribute = _value("experimental_distribute")
  experimental_max_worker_delay_secs = _value(
      "experimental_max_worker_delay_secs")
  session_creation_timeout_secs = _value("session_creation_timeout_secs")
  checkpoint_save_graph_def = _value("checkpoint_save_graph_def")
  # harness's fields: one property each, set below from `harness.fields`.
  restart_attempt = property(lambda self: self.plan.restart_attempt)

  # Derived from the values and TF_CONFIG (`distribution.derive`).
  train_distribute = _derived("train_distribute")
  strategy_kind = _derived("strategy_kind")
  eval_distribute = _derived("eval_distribute")
  session_config = property(lambda self: self._session_config)
  cluster_spec = property(lambda self: self._cluster_spec)
  task_type = _fact("task_type")
  task_id = _fact("task_id")
  master = _fact("master")
  evaluation_master = _fact("evaluation_master")
  is_chief = _fact("is_chief")
  num_ps_replicas = _fact("num_ps_replicas")
  num_worker_replicas = _fact("num_worker_replicas")
  global_id_in_cluster = _fact("global_id_in_cluster")

  @property
  def service(self):
    """The platform-defined TF_CONFIG "service" dict, or None."""
    info = self._cluster_info
    return None if info is None or self.remote_cluster else info.service

  @property
  def cluster_info(self):
    """The `harness.cluster.tf_config.ClusterInfo` read from TF_CONFIG, or None."""
    return self._cluster_info

  @property
  def plan(self):
    """This process's `harness.plan.TaskPlan` (harness addition)."""
    return self._derived.plan

  @property
  def task_label(self):
    """This process in logs and markers (harness addition): "worker/1";
    "client" driving a remote cluster; "local" outside any cluster."""
    return self._derived.plan.task_label

  @property
  def remote_cluster(self):
    """{job: [addresses]} of a standalone-client run, or None."""
    return self._derived.remote_cluster

  @property
  def coordinator_mode(self):
    """"independent_worker", "standalone_client", or None (as 2.15's)."""
    return self._derived.coordinator_mode

  def __repr__(self):
    shown = {k: v for k, v in self._values.items() if k != "session_config"}
    return (f"RunConfig({shown}, task={self.task_type}/{self.task_id}, "
            f"is_chief={self.is_chief}, cluster={self._derived.facts.cluster})")


def _field_property(field):
  """RunConfig's property of a `harness.fields` field: the user's value, or
  for a field with an environment fallback, the seconds its plan resolved."""
  if field.env is None:
    return _value(field.name)
  return property(lambda self: self.plan.knobs[field.name])


def _args_doc():
  """The `Args:` entries of harness's fields, from `harness.fields`."""
  return "\n".join(textwrap.fill(
      f"{field.name}: {field.doc}", 76, initial_indent=" " * 6,
      subsequent_indent=" " * 8) for field in fields.FIELDS)


for _field in fields.FIELDS:
  setattr(RunConfig, _field.name, _field_property(_field))
del _field
if RunConfig.__init__.__doc__:  # None under python -OO.
  RunConfig.__init__.__doc__ = RunConfig.__init__.__doc__.replace(
      "{harness_args}", _args_doc())
