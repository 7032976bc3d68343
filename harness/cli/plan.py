"""The binary's plan: `harness.plan` plus the flags' own problems.

    from harness.cli import plan as job_plan

    plan = job_plan.plan_job(job, environ=os.environ)  # ConfigError: all
    plan.role, plan.task_label, plan.model_dir, plan.replicas

`harness.cli.flags.parse` plans the job it parsed (its problems listed
with the flags'); `harness.cli.job.run_job` plans a `JobConfig` built in
code the same way. The facts and the cluster rules are
`harness.plan.plan_task`'s, the function RunConfig plans with; this
module adds what only a command line has: --model_dir against TF_CONFIG's
in the flags' words, the strategy on --remote_cluster, the GPUs of this
machine and the global batch over the replicas. Every problem is reported
together. No TensorFlow.
"""

import json
import os

from harness import cluster as cluster_lib
from harness import errors
from harness import plan as plan_lib
from harness.cluster import tf_config_checks
from harness.cluster.strategy_kind import StrategyKind
from harness.plan import knobs
from harness.state import paths

__all__ = ["plan_job", "plan_with_problems"]


def plan_job(job, *, environ=None, gpu_count=None):
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
  plan = plan_lib.plan_task(
      info, environ=environ, strategy=job.strategy,
      remote_cluster=job.remote_cluster,
      num_devices_per_worker=job.num_devices_per_worker,
      estimator_model_dir=job.model_dir,
      knob_values={name: getattr(job, name) for name in knobs.NAMES},
      require_cluster_for_task=True)
  model_dir_problems = _model_dir_problems(job, plan)
  problems = (_device_problems(job, plan.replicas, gpu_count, skip) +
              _strategy_problems(job, plan, skip) + model_dir_problems)
  problems += [str(p.error) for p in plan.problems
               if p.rule not in _IN_FLAG_WORDS]
  return plan, problems


# The plan's problems reported in the flags' words (below).
_IN_FLAG_WORDS = (plan_lib.RUN_CONFIG_RULES, plan_lib.CLUSTER_RULES,
                  plan_lib.MODEL_DIR, plan_lib.ONE_MACHINE)


def _model_dir_problems(job, plan):
  """--model_dir against TF_CONFIG's (the plan merged them), beside
  --remote_cluster, and a cluster without a shared model_dir."""
  info = plan.cluster_info
  has_cluster = info is not None and info.has_cluster
  problems = []
  if any(p.rule == plan_lib.MODEL_DIR for p in plan.problems):
    problems.append(
        f"flag --model_dir={job.model_dir}: TF_CONFIG's model_dir is "
        f"{paths.normalize_model_dir(info.model_dir)!r}. Fix: drop one of "
        "them, or make them equal.")
  if has_cluster and job.remote_cluster:
    problems.append(
        f"flag --remote_cluster={json.dumps(job.remote_cluster)}: TF_CONFIG "
        f"also names a cluster ({sorted(info.cluster)}). Fix: unset "
        "TF_CONFIG in the client, or drop --remote_cluster.")
  if has_cluster and not plan.model_dir:
    problems.append(
        "flag --model_dir: not given, and TF_CONFIG names a cluster: every "
        "task needs the same directory (a temporary one would differ). Fix: "
        "pass --model_dir=<shared path>.")
  return problems


def _strategy_problems(job, plan, skip):
  """TF_CONFIG's rules with --strategy (the plan's), and the strategy on
  its cluster or --remote_cluster."""
  if "strategy" in skip:
    return []
  if job.remote_cluster and StrategyKind(job.strategy).no_op:
    return [f"flags remote_cluster={_remote_text(job.remote_cluster)}, "
            "strategy=default: a remote cluster is driven through a "
            "strategy. Fix: add --strategy=parameter_server or "
            "--strategy=collective."]
  problems = [str(p.error) for p in plan.problems
              if p.rule == plan_lib.CLUSTER_RULES]
  info = plan.cluster_info
  source = (f"flag --remote_cluster={json.dumps(job.remote_cluster)}:"
            if job.remote_cluster else f"flag --strategy={job.strategy}:")
  if not (info is not None and info.has_cluster):
    try:  # validate applied the jobs rules to TF_CONFIG's.
      tf_config_checks.check_strategy_jobs(
          job.strategy, job.remote_cluster or {}, source=source)
    except errors.ClusterConfigError as e:
      return problems + [str(e)]
  # The plan's one-machine rule (after the jobs rules, as reported before).
  return problems + [str(p.error) for p in plan.problems
                     if p.rule == plan_lib.ONE_MACHINE]


def _remote_text(remote_cluster):
  """--remote_cluster's text: "worker=a:1,b:2;ps=c:3"."""
  return ";".join(f"{j}={','.join(a)}" for j, a in remote_cluster.items())


def _device_problems(job, replicas, gpu_count, skip):
  """The GPUs the flags ask for, and the batch over the `replicas`."""
  problems = []
  gpus = job.num_gpus_per_worker
  if gpus > 1 and StrategyKind(job.strategy).single_device and not (
      {"strategy", "num_gpus_per_worker"} & set(skip)):
    return [f"flags strategy={job.strategy}, num_gpus_per_worker={gpus}: the "
            f"{job.strategy} strategy trains on one device. Fix: "
            "--strategy=mirrored (one machine) or collective (several) to "
            f"use {gpus} devices, or --num_gpus_per_worker=1."]
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
