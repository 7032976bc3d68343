"""`run_job`: one training job described by a `JobConfig`, no flags read.

The library entry point behind `python -m harness.main`::

    from harness.cli import job, job_config

    result = job.run_job(
        job_config.JobConfig(model_fn="linear", input_fn="constant",
                             max_steps=20, eval_steps=2,
                             model_dir="/tmp/linear", exporters=("latest",),
                             throttle_secs=0),
        environ=os.environ)
    result.metrics["loss"], result.latest_checkpoint, result.export_paths

`run_job` plans the job (`harness.cli.plan`) unless given its plan (as
`flags.parse` returns it), reads the Kubeflow Trainer status endpoint
beside it (`trainer_status_endpoint`, the binary's alone), then
(`harness.cli.mode_runners`) builds the RunConfig, Estimator, input_fns
(global batch size) and exporters and does what `mode` says. It prints
one start-up banner, the evaluation results as a table and a final summary to `out`;
progress lines come from the Estimator's `ProgressLoggerHook`. `JobConfig`
lives in `harness.cli.job_config`, the facts of its process in the plan.
Only running imports TensorFlow: importing this module and `dry_run` need
none.
"""

import contextlib
import dataclasses
import json
import os
import sys

from absl import logging

from harness import errors
from harness import plan as plan_lib
from harness.cli import job_config
from harness.cli import plan as job_plan
from harness.cli import results_text
from harness.cli import tensorboard_server
from harness.cluster import restart_attempt
from harness.telemetry import trainer_status

# RunConfig's checkpoint interval when neither save_checkpoints_steps nor
# _secs is given (harness/run_config/checks.py, 2.15's rule; importing it
# here would load TensorFlow; tests/test_k8s_admission.py pins the two).
_DEFAULT_SAVE_CHECKPOINTS_SECS = 600

__all__ = ["run_job", "describe", "trainer_status_endpoint"]


# --------------------------------------------------------- facts, no TF


def _role_text(plan):
  if plan.role == plan_lib.Role.CLIENT:
    jobs = ", ".join(f"{j}: {len(a)}" for j, a in plan.remote_cluster.items())
    return f"client of remote cluster {{{jobs}}} (--remote_cluster)"
  if plan.role == plan_lib.Role.LOCAL:
    return "local (no TF_CONFIG cluster)"
  jobs = ", ".join(f"{j}: {len(a)}"
                   for j, a in plan.cluster_info.cluster.items())
  return f"{plan.task_label} of cluster {{{jobs}}} (TF_CONFIG)"


def describe(job, plan, *, model_dir=None, full=False):
  """The start-up banner; with `full`, also every field (the dry run).

  `plan` is the job's `harness.plan.TaskPlan`; `model_dir` the resolved
  one (None: the plan's, else "a new temporary directory").
  """
  model_dir = model_dir or plan.model_dir or "(a new temporary directory)"
  params = json.dumps(job.params, sort_keys=True) if job.params else "defaults"
  replicas = plan.replicas
  devices = job.num_devices_per_worker
  stand_in = " standing in for GPUs" if job.cpu_stand_in and (
      job.num_gpus_per_worker) else ""
  in_sync = "a worker, async" if plan.strategy.asynchronous else "in sync"
  batch = "the input_fn's default" if job.batch_size is None else (
      f"global {job.batch_size}, per replica {job.batch_size // replicas}")
  role = _role_text(plan)
  label = restart_attempt.label(plan.task_label, plan.restart_attempt)
  if plan.role == plan_lib.Role.PS and not full:
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
    lines += [f"    {name:<{width}}  {_show(_effective(job, plan, name))}"
              for name in job_config.FLAG_NAMES]
  return "\n".join(lines)


def _effective(job, plan, name):
  """The value the job runs with: a knob left unset shows what it falls
  back to (the plan resolved the variable or default), not `-`."""
  value = getattr(job, name)
  if value is None and name in plan.knobs:
    return plan.knobs[name]
  if name == "save_checkpoints_secs" and value is None and (
      job.save_checkpoints_steps is None):
    return _DEFAULT_SAVE_CHECKPOINTS_SECS
  return value


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


def run_job(job, *, plan=None, environ=None, out=None):
  """Runs `job`: trains, evaluates, predicts or exports as `job.mode` says.

  Args:
    job: a `job_config.JobConfig` (from `harness.cli.flags.parse`, or built
      directly).
    plan: the job's `harness.plan.TaskPlan` as `flags.parse` returned
      it; None plans `job` here from `environ` (the same rules).
    environ: mapping read for the Kubeflow Trainer status variables, and
      for TF_CONFIG and the knobs' variables when `plan` is None (default
      `os.environ`).
    out: text stream for the banner, results and summary (default stdout).

  Returns:
    A `job_config.JobResult`.

  Raises:
    HarnessError: a problem the user can fix (bad TF_CONFIG, GPUs that
      TensorFlow cannot see, a model_fn or input_fn error, ...).
  """
  out = sys.stdout if out is None else out
  # The job's plan: flags.parse made it; a job built in code is planned
  # here, its GPUs counted by TensorFlow as it runs.
  plan = plan or job_plan.plan_job(job, environ=environ)
  label = plan.task_label
  if job.dry_run:
    _emit(out, describe(job, plan, full=True))
    _emit(out, f"dry run | {label} | TF_CONFIG role: {_role_text(plan)}; "
          "nothing was run.")
    return job_config.JobResult(mode=job.mode, task=label, dry_run=True)
  from harness.cli import mode_runners  # lazy: TF-free dry run
  from harness.state import storage  # lazy: TF-free dry run (it imports TF)
  estimator = mode_runners.build_estimator(job, plan)
  if job.verbosity != "quiet":
    _emit(out, describe(job, plan, model_dir=estimator.model_dir))
  # No --model_dir: the run's own temporary one goes at its end (storage).
  temporary = (not plan.model_dir
               and storage.is_temporary_model_dir(estimator.model_dir))
  try:
    with _tensorboard(job, plan, estimator.model_dir, out), \
        _trainer_status(plan, trainer_status_endpoint(environ)):
      metrics, export_paths, predictions_path = mode_runners.MODE_RUNNERS[
          job.mode](estimator, job, plan)
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


def _is_cluster_voice(plan):
  """The one process of a job that speaks for it: the chief (or worker 0
  without one), the local process, or the client of a remote cluster."""
  return plan.role == plan_lib.Role.CLIENT or (
      plan.is_chief and plan.role != plan_lib.Role.EVALUATOR)


def trainer_status_endpoint(environ=None):
  """The Kubeflow Trainer status endpoint of `environ` (default
  `os.environ`), or None; a bad one is a warning, not an error
  (reporting progress never stops training). Read beside the plan."""
  try:
    return trainer_status.endpoint_from_environ(
        os.environ if environ is None else environ)
  except errors.ConfigError as e:
    logging.warning("trainer status | not reporting progress: %s", e)
    return None


@contextlib.contextmanager
def _trainer_status(plan, endpoint):
  """Progress posted to the TrainJob while the job runs (Kubeflow Trainer's
  variables set, `endpoint`; `harness.telemetry.trainer_status`), by the
  chief alone; the last status is posted (bounded) when the job ends,
  unless it failed."""
  if endpoint is None or not _is_cluster_voice(plan):
    yield
    return
  trainer_status.start(endpoint, task_label=plan.task_label)
  try:
    yield
  except BaseException:
    trainer_status.finish(timeout_secs=0)  # A failing task exits now.
    raise
  trainer_status.finish()


def _tensorboard(job, plan, model_dir, out):
  """TensorBoard for `model_dir` while the job runs (`--tensorboard`).

  Started once per cluster: by the chief (or the local process / client).
  """
  if job.tensorboard is None:
    return contextlib.nullcontext()
  if not _is_cluster_voice(plan):
    logging.info("tensorboard | %s | not started here: the chief serves it",
                 plan.task_label)
    return contextlib.nullcontext()
  return tensorboard_server.serving(model_dir, port=job.tensorboard,
                                    keep=job.tensorboard_keep, out=out)


def _emit(out, text):
  print(text, file=out, flush=True)
