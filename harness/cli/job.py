"""`run_job`: one training job described by a `JobConfig`, no flags read.

The library entry point behind `python -m harness.main`::

    from harness.cli import job

    result = job.run_job(
        job.JobConfig(model_fn="linear", input_fn="constant", max_steps=20,
                      eval_steps=2, model_dir="/tmp/linear",
                      exporters=("latest",), throttle_secs=0),
        environ=os.environ)
    result.metrics["loss"], result.latest_checkpoint, result.export_paths

`run_job` checks the job against its cluster, then (`harness.cli.
mode_runners`) builds the RunConfig, Estimator, input_fns (global batch
size) and exporters and does what `mode` says. It prints one start-up
banner, the evaluation results as a table and a final summary to `out`;
progress lines come from the Estimator's `ProgressLoggerHook`. `JobConfig`
and the facts of a job live in `harness.cli.job_config` (re-exported here).
Only running imports TensorFlow: importing this module and `dry_run` need
none.
"""

import contextlib
import dataclasses
import json
import os
import sys

from absl import logging

from harness import cluster as cluster_lib
from harness import errors
from harness.cli import job_config
from harness.cli import preflight
from harness.cli import results_text
from harness.cli import tensorboard_server
from harness.cluster import tf_config_rules
from harness.state import paths

__all__ = ["run_job", "check_environment", "describe",
           "serving_input_receiver_fn"]



# --------------------------------------------------------- facts, no TF


def check_environment(job, info, *, gpu_count, skip=()):
  """What stops `job` from running here, found before any server starts.

  Args:
    job: a `job_config.JobConfig`; info: TF_CONFIG's `ClusterInfo`, or None.
    gpu_count: callable returning the GPUs this machine has.
    skip: fields already reported bad (their checks are skipped).

  Returns:
    Problems as `flag --name=value: why. Fix: ...` strings ([]: it fits).
  """
  return (_cluster_problems(job, info, skip) +
          _device_problems(job, info, gpu_count, skip))


def _cluster_problems(job, info, skip):
  """TF_CONFIG against the flags: strategy, model_dir, remote cluster."""
  problems = []
  if info is not None and "strategy" not in skip:
    has_strategy = job.strategy != "default"
    try:
      cluster_lib.validate(info, has_strategy=has_strategy,
                           strategy_kind=job.strategy if has_strategy else None,
                           require_cluster_for_task=True)
    except errors.ClusterConfigError as e:
      problems.append(str(e))
  clustered = info is not None and info.has_cluster
  tf_dir = info.model_dir if info else None
  try:  # The one model_dir rule (harness.state.paths).
    model_dir, _ = paths.merge_model_dirs(argument=job.model_dir,
                                          tf_config=tf_dir)
  except errors.ConfigError:
    problems.append(
        f"flag --model_dir={job.model_dir}: TF_CONFIG's model_dir is "
        f"{paths.normalize_model_dir(tf_dir)!r}. Fix: drop one of them, or "
        "make them equal.")
    model_dir = job.model_dir
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
  if not (clustered or job.remote_cluster):  # The ps rule, no cluster.
    try:
      tf_config_rules.check_strategy_jobs(
          job.strategy, {}, source=f"flag --strategy={job.strategy}:")
    except errors.ClusterConfigError as e:
      problems.append(str(e))
  return problems


def _device_problems(job, info, gpu_count, skip):
  """The GPUs the flags ask for, and the batch over the replicas."""
  problems = []
  gpus = job.num_gpus_per_worker
  if job.device_type == "GPU" and "num_gpus_per_worker" not in skip and (
      gpu_count() < gpus):
    problems.append(
        f"flag --num_gpus_per_worker={gpus}: this machine has {gpu_count()} "
        f"visible GPU(s). Fix: pass --cpu_stand_in to run {gpus} CPU "
        "devices in their place, or lower --num_gpus_per_worker.")
  replicas = job_config.num_replicas(job, info)
  if job.batch_size is not None and job.batch_size % replicas and not (
      {"batch_size", "strategy", "num_gpus_per_worker"} & set(skip)):
    problems.append(
        f"flag --batch_size={job.batch_size}: the global batch does not "
        f"divide evenly over {replicas} replicas ({job.strategy}). Fix: use "
        f"a multiple of {replicas}, e.g. --batch_size="
        f"{max(replicas, job.batch_size // replicas * replicas)}.")
  return problems


def _role_text(info, remote_cluster):
  if remote_cluster:
    jobs = ", ".join(f"{j}: {len(a)}" for j, a in remote_cluster.items())
    return f"client of remote cluster {{{jobs}}} (--remote_cluster)"
  if info is None or not info.has_cluster:
    return "local (no TF_CONFIG cluster)"
  jobs = ", ".join(f"{j}: {len(a)}" for j, a in info.cluster.items())
  return f"{job_config.task_label(info)} of cluster {{{jobs}}} (TF_CONFIG)"


def describe(job, info, *, model_dir=None, full=False):
  """The start-up banner; with `full`, also every field (the dry run).

  `info` is TF_CONFIG's `ClusterInfo` or None; `model_dir` the resolved one
  (None: job.model_dir, else TF_CONFIG's, else "a new temporary directory").
  """
  model_dir = (model_dir or preflight.model_dir_of(job, info)
               or "(a new temporary directory)")
  params = json.dumps(job.params, sort_keys=True) if job.params else "defaults"
  replicas = job_config.num_replicas(job, info)
  devices = job.num_devices_per_worker
  stand_in = " standing in for GPUs" if job.cpu_stand_in and (
      job.num_gpus_per_worker) else ""
  in_sync = "a worker, async" if job.strategy == "parameter_server" else (
      "in sync")
  batch = "the input_fn's default" if job.batch_size is None else (
      f"global {job.batch_size}, per replica {job.batch_size // replicas}")
  role = _role_text(info, job.remote_cluster)
  label = job_config.run_label(job, info)
  if info is not None and info.task_type == cluster_lib.PS and not full:
    # A ps serves the trainers' variables: no model, input or batch here.
    return "\n".join([f"harness.main | {label} | serves variables",
                      f"  {'task:':<11} {role}",
                      f"  {'model_dir:':<11} {model_dir}"])
  rows = [
      ("task", role),
      ("strategy", f"{job.strategy}, {replicas} replica(s) {in_sync}, "
       f"{devices} {job.device_type} device(s) per worker{stand_in}"),
      ("model_fn", f"{job.model_fn} (params: {params})"),
      ("input_fn", job.input_fn + (f" (data_dir {job.data_dir})"
                                   if job.data_dir else "")),
      ("model_dir", model_dir),
      ("batch", batch),
  ]
  lines = [f"harness.main | {label} | {job.mode}"]
  lines += [f"  {key + ':':<11} {value}" for key, value in rows]
  if full:
    lines.append("  resolved configuration:")
    width = max(len(name) for name in job_config.FLAG_NAMES)
    lines += [f"    {name:<{width}}  {_show(getattr(job, name))}"
              for name in job_config.FLAG_NAMES]
  return "\n".join(lines)


def _show(value):
  if value is None:
    return "-"
  if isinstance(value, bool):
    return str(value).lower()
  if isinstance(value, (dict, list, tuple)):
    return json.dumps(value if not isinstance(value, tuple) else list(value),
                      sort_keys=True)
  return value




# ----------------------------------------------------------------- running


def run_job(job, *, environ=None, out=None):
  """Runs `job`: trains, evaluates, predicts or exports as `job.mode` says.

  Args:
    job: a `job_config.JobConfig` (from `harness.cli.flags.parse`, or built
      directly).
    environ: mapping read for TF_CONFIG unless `job.cluster_info` holds it
      already (`flags.parse` sets it), and for the variables of
      `harness.cluster.env_knobs` (default `os.environ`).
    out: text stream for the banner, results and summary (default stdout).

  Returns:
    A `job_config.JobResult`.

  Raises:
    HarnessError: a problem the user can fix (bad TF_CONFIG, GPUs that
      TensorFlow cannot see, a model_fn or input_fn error, ...).
  """
  environ = os.environ if environ is None else environ
  out = sys.stdout if out is None else out
  info = job_config.cluster_info_of(job, environ)
  label = job_config.run_label(job, info)
  _check_unless_parsed(job, info)
  if job.dry_run:
    _emit(out, describe(job, info, full=True))
    _emit(out, f"dry run | {label} | TF_CONFIG role: "
          f"{_role_text(info, job.remote_cluster)}; nothing was run.")
    return job_config.JobResult(mode=job.mode, task=label, dry_run=True)
  from harness.cli import mode_runners  # lazy: TF-free dry run
  from harness.state import storage  # lazy: TF-free dry run (it imports TF)
  estimator = mode_runners.build_estimator(job, environ, info)
  if job.verbosity != "quiet":
    _emit(out, describe(job, info, model_dir=estimator.model_dir))
  # No --model_dir: the run's own temporary one goes at its end (storage).
  temporary = (not job.model_dir and not (info and info.model_dir)
               and storage.is_temporary_model_dir(estimator.model_dir))
  try:
    with _tensorboard(job, info, estimator.model_dir, out):
      metrics, export_paths, predictions_path = mode_runners.MODE_RUNNERS[
          job.mode](estimator, job, info)
  except BaseException:
    if temporary:
      storage.finish_temporary_model_dir(estimator.model_dir,
                                         succeeded=False, keep=None)
    raise
  result = job_config.JobResult(
      mode=job.mode, task=label, model_dir=estimator.model_dir,
      metrics=dict(metrics) if metrics else None,
      latest_checkpoint=estimator.latest_checkpoint(),
      export_paths=tuple(export_paths), predictions_path=predictions_path)
  if temporary:  # Predictions are what the run made: they stay.
    keep = ("--keep_model_dir" if job.keep_model_dir else
            "it holds the predictions" if predictions_path else None)
    result = dataclasses.replace(result, model_dir_removed=(
        storage.finish_temporary_model_dir(estimator.model_dir,
                                           succeeded=True, keep=keep)))
  if result.metrics:
    _emit(out, results_text.format_metrics(result.metrics, label))
  _emit(out, results_text.summary(result, job))
  return result


def _check_unless_parsed(job, info):
  """Raises ConfigError for a job built in code that does not fit here.

  `flags.parse` checked the jobs it made (with the GPUs counted); a job
  built in code is checked here, its GPUs counted by TensorFlow as it runs.
  """
  if job.environment_checked:
    return
  problems = check_environment(
      job, info, gpu_count=lambda: job.num_gpus_per_worker)
  if problems:
    raise errors.ConfigError(
        "The job does not fit this machine or cluster:\n  " +
        "\n  ".join(problems))


def _tensorboard(job, info, model_dir, out):
  """TensorBoard for `model_dir` while the job runs (`--tensorboard`).

  Started once per cluster: by the chief (or the local process / client).
  """
  if job.tensorboard is None:
    return contextlib.nullcontext()
  if not job.remote_cluster and not (
      cluster_lib.is_chief(info, job.strategy != "default") and
      not job_config.is_task(info, cluster_lib.EVALUATOR)):
    logging.info("tensorboard | %s | not started here: the chief serves it",
                 job_config.task_label(info))
    return contextlib.nullcontext()
  return tensorboard_server.serving(model_dir, port=job.tensorboard,
                                    keep=job.tensorboard_keep, out=out)


def _emit(out, text):
  print(text, file=out, flush=True)


def serving_input_receiver_fn(job, params):
  """The input module's `serving_input_receiver_fn`, else a raw receiver
  (`harness.cli.mode_runners.serving_input_receiver_fn`)."""
  from harness.cli import mode_runners  # lazy: TF-free import
  return mode_runners.serving_input_receiver_fn(job, params)
