"""`TaskPlan`: what this process is in its job, decided once at the door.

    from harness.cli import plan as plan_lib

    plan = plan_lib.plan_task(job, environ=os.environ)  # ConfigError: all
    plan.role, plan.task_label, plan.model_dir, plan.replicas

`harness.cli.flags.parse` makes the plan of the job it parsed (its problems
listed with the flags'); `harness.cli.job.run_job` makes one for a
`JobConfig` built in code. Either way every rule that crosses the flags,
TF_CONFIG and this machine runs here, once, and reports every problem
together. Below the door nothing re-derives these facts: the banner, the
preflight, the RunConfig (cluster facts, waiting knobs, model_dir) and the
mode runners read the plan. No TensorFlow.
"""

import dataclasses
import enum
import json
import os

from absl import logging

from harness import cluster as cluster_lib
from harness import errors
from harness.cluster import env_knobs
from harness.cluster import restart_attempt
from harness.cluster import tf_config_checks
from harness.cluster.strategy_kind import StrategyKind
from harness.core import trainer_status
from harness.state import paths

__all__ = ["Role", "TaskPlan", "plan_task", "plan_with_problems"]


class Role(str, enum.Enum):
  """What this process does in its job (str() is the bare value)."""
  __str__ = str.__str__
  __format__ = str.__format__

  LOCAL = cluster_lib.LOCAL_LABEL  # No cluster: trains (evaluates ...) alone.
  CLIENT = cluster_lib.CLIENT_LABEL  # Drives --remote_cluster's servers.
  TRAINER = "trainer"  # A chief, worker or master task of TF_CONFIG.
  PS = cluster_lib.PS  # Serves the trainers' variables.
  EVALUATOR = cluster_lib.EVALUATOR  # Evaluates checkpoints as they come.


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskPlan:
  """The facts of one process of a job, resolved once.

  Attributes:
    cluster_info: TF_CONFIG as parsed once (`harness.cluster.ClusterInfo`),
      None without TF_CONFIG.
    remote_cluster: --remote_cluster's {job: [address]}, or None.
    role: a `Role`.
    task_label: "chief/0", "worker/1", "local" or "client": the one label.
    model_dir: the run's model_dir (--model_dir, else TF_CONFIG's), None:
      the run makes a temporary one.
    model_dir_source: where it came from (a `harness.state.paths.FROM_*`).
    strategy: the `StrategyKind` of --strategy.
    replicas: `num_replicas_in_sync` of that strategy on this cluster.
    peer_timeout_secs, restart_wait_secs: the flag, else the variable of
      `harness.cluster.env_knobs`, else its default (seconds).
    eval_poll_secs: how often an evaluator looks for a new checkpoint.
    restart_attempt: $JOBSET_RESTART_ATTEMPT (`harness.cluster.
      restart_attempt`), None outside a JobSet.
    trainer_status_endpoint: the Kubeflow Trainer status endpoint of the
      pod's variables (`harness.core.trainer_status.Endpoint`), None without.
  """
  cluster_info: cluster_lib.ClusterInfo | None
  remote_cluster: dict[str, list[str]] | None
  role: Role
  task_label: str
  model_dir: str | None
  model_dir_source: str
  strategy: StrategyKind
  replicas: int
  peer_timeout_secs: float
  restart_wait_secs: float
  eval_poll_secs: float
  restart_attempt: int | None = None
  trainer_status_endpoint: trainer_status.Endpoint | None = None

  @property
  def clustered(self):
    """True in a task of a TF_CONFIG cluster."""
    return self.role in (Role.TRAINER, Role.PS, Role.EVALUATOR)


def plan_task(job, *, environ=None, gpu_count=None):
  """The `TaskPlan` of `job` in this process, or ConfigError.

  Args:
    job: a `harness.cli.job_config.JobConfig`.
    environ: mapping read for TF_CONFIG and the waiting knobs' variables
      (default `os.environ`).
    gpu_count: callable returning the GPUs this machine has (default: the
      GPUs the job asks for; TensorFlow counts them when the job runs).

  Raises:
    ConfigError: listing every problem found, one a line.
  """
  environ = os.environ if environ is None else environ
  info = cluster_lib.from_environ(environ)
  plan, problems = plan_with_problems(
      job, info, environ=environ,
      gpu_count=gpu_count or (lambda: job.num_gpus_per_worker))
  if problems:
    raise errors.ConfigError(
        "The job does not fit this machine or cluster:\n  " +
        "\n  ".join(problems))
  return plan


def plan_with_problems(job, info, *, environ, gpu_count, skip=()):
  """(the `TaskPlan`, every problem found) for `job` under `info`.

  Args:
    job: a `JobConfig`; info: TF_CONFIG's `ClusterInfo`, or None.
    environ: mapping read for the waiting knobs' variables.
    gpu_count: callable returning the GPUs this machine has.
    skip: fields already reported bad (their checks are skipped).

  Returns:
    (plan, problems): problems as `flag --name=value: why. Fix: ...`
    strings ([]: the plan holds); the plan is what the job would run with.
  """
  role = _role(job, info)
  replicas = _replicas(job, info)
  problems = _device_problems(job, replicas, gpu_count, skip)
  model_dir, source, more = _cluster_facts(job, info, skip)
  problems += more
  knobs = {}
  for knob in (env_knobs.PEER_TIMEOUT, env_knobs.RESTART_WAIT):
    try:
      knobs[knob.name] = env_knobs.resolve_secs(
          getattr(job, knob.name), knob, environ)
    except errors.ConfigError as e:
      problems.append(str(e))
      knobs[knob.name] = knob.default
  try:
    attempt = restart_attempt.from_environ(environ)
  except errors.ConfigError as e:
    problems.append(str(e))
    attempt = None
  plan = TaskPlan(
      cluster_info=info, remote_cluster=job.remote_cluster, role=role,
      task_label=(cluster_lib.CLIENT_LABEL if role == Role.CLIENT else
                  cluster_lib.LOCAL_LABEL if info is None else
                  info.task_label),
      model_dir=model_dir, model_dir_source=source,
      strategy=StrategyKind(job.strategy), replicas=replicas,
      eval_poll_secs=float(job.eval_poll_secs), restart_attempt=attempt,
      trainer_status_endpoint=_trainer_status_endpoint(environ), **knobs)
  return plan, problems


def _trainer_status_endpoint(environ):
  """The status endpoint of `environ`; a bad one is a warning, not an
  error (reporting progress never stops training)."""
  try:
    return trainer_status.endpoint_from_environ(environ)
  except errors.ConfigError as e:
    logging.warning("trainer status | not reporting progress: %s", e)
    return None


def _role(job, info):
  if job.remote_cluster:
    return Role.CLIENT
  if info is None or info.task_label == cluster_lib.LOCAL_LABEL:
    return Role.LOCAL
  if info.task_type == cluster_lib.PS:
    return Role.PS
  if info.task_type == cluster_lib.EVALUATOR:
    return Role.EVALUATOR
  return Role.TRAINER


def _replicas(job, info):
  """`num_replicas_in_sync`: 1 on a single device, devices per worker times
  the training tasks in lockstep (collective), else the devices per worker
  (a parameter server's workers update on their own)."""
  kind = StrategyKind(job.strategy)
  if kind.single_device:
    return 1
  if not kind.lockstep:
    return job.num_devices_per_worker
  if job.remote_cluster:
    cluster = job.remote_cluster
  elif info is not None and info.has_cluster:
    cluster = info.cluster
  else:
    cluster = {}
  trainers = cluster_lib.num_trainers(cluster)
  return job.num_devices_per_worker * max(1, trainers)


def _cluster_facts(job, info, skip):
  """TF_CONFIG against the flags: (model_dir, its source, problems).

  The problems: TF_CONFIG's own rules with the strategy, the strategy on
  its cluster, the remote cluster, a cluster without a shared model_dir.
  The model_dir is --model_dir merged with TF_CONFIG's (the one rule,
  `harness.state.paths.merge_model_dirs`).
  """
  clustered = info is not None and info.has_cluster
  problems = [] if "strategy" in skip else _strategy_problems(
      job, info, clustered)
  tf_dir = info.model_dir if info else None
  try:
    model_dir, source = paths.merge_model_dirs(argument=job.model_dir,
                                               tf_config=tf_dir)
  except errors.ConfigError:
    problems.append(
        f"flag --model_dir={job.model_dir}: TF_CONFIG's model_dir is "
        f"{paths.normalize_model_dir(tf_dir)!r}. Fix: drop one of them, or "
        "make them equal.")
    model_dir, source = job.model_dir, paths.FROM_ARGUMENT
  if clustered and job.remote_cluster:
    problems.append(
        f"flag --remote_cluster={json.dumps(job.remote_cluster)}: TF_CONFIG "
        f"also names a cluster ({sorted(info.cluster)}). Fix: unset "
        "TF_CONFIG in the client, or drop --remote_cluster.")
  if clustered and not model_dir:
    problems.append(
        "flag --model_dir: not given, and TF_CONFIG names a cluster: every "
        "task needs the same directory (a temporary one would differ). Fix: "
        "pass --model_dir=<shared path>.")
  return model_dir, source, problems


def _strategy_problems(job, info, clustered):
  """TF_CONFIG's rules with --strategy, and the strategy on its cluster."""
  problems = []
  has_strategy = job.strategy != StrategyKind.DEFAULT
  try:
    cluster_lib.validate(info, has_strategy=has_strategy,
                         strategy_kind=job.strategy if has_strategy else None,
                         require_cluster_for_task=True)
  except errors.ClusterConfigError as e:
    problems.append(str(e))
  jobs = info.training_cluster if clustered else job.remote_cluster or {}
  source = (f"flag --remote_cluster={json.dumps(job.remote_cluster)}:"
            if job.remote_cluster else f"flag --strategy={job.strategy}:")
  try:
    if not clustered:  # validate applied the jobs rules to TF_CONFIG's.
      tf_config_checks.check_strategy_jobs(job.strategy, jobs, source=source)
    tf_config_checks.check_one_machine_strategy(job.strategy, jobs)
  except (errors.ClusterConfigError, errors.NotSupportedError) as e:
    problems.append(str(e))
  return problems


def _device_problems(job, replicas, gpu_count, skip):
  """The GPUs the flags ask for, and the batch over the `replicas`."""
  problems = []
  gpus = job.num_gpus_per_worker
  if job.device_type == "GPU" and "num_gpus_per_worker" not in skip and (
      gpu_count() < gpus):
    problems.append(
        f"flag --num_gpus_per_worker={gpus}: this machine has {gpu_count()} "
        f"visible GPU(s). Fix: pass --cpu_stand_in to run {gpus} CPU "
        "devices in their place, or lower --num_gpus_per_worker.")
  if job.batch_size is not None and job.batch_size % replicas and not (
      {"batch_size", "strategy", "num_gpus_per_worker"} & set(skip)):
    problems.append(
        f"flag --batch_size={job.batch_size}: the global batch does not "
        f"divide evenly over {replicas} replicas ({job.strategy}). Fix: use "
        f"a multiple of {replicas}, e.g. --batch_size="
        f"{max(replicas, job.batch_size // replicas * replicas)}.")
  return problems
