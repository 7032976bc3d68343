"""What `harness.cli.job.run_job` does once it runs: the Estimator and modes.

    from harness.cli import mode_runners

    estimator = mode_runners.build_estimator(job, plan)
    metrics, export_paths, predictions_path = mode_runners.MODE_RUNNERS[
        job.mode](estimator, job, plan)

`build_estimator` makes the RunConfig (strategy, checkpoints, and the
job's `harness.plan.TaskPlan` carried as it is: TF_CONFIG as parsed
once, the knobs, the model_dir) and the Estimator (the plan's
model_dir, logged with its source); each runner
builds the input_fns (global batch size) and exporters of its mode.
evaluate / predict / export are one-process jobs: in a TF_CONFIG cluster
the chief runs them in-process, as a local job, and every other task
exits; the plan decides both (`harness.plan.one_process`). This module imports
TensorFlow at its top; `harness.cli.job` imports it only when a job runs,
so the dry run and `--help` stay TensorFlow-free.
"""

import inspect
import json
import os
import time

from absl import logging

from harness import errors
from harness import estimator as estimator_lib
from harness import export
from harness import plan as plan_lib
from harness import run_config as run_config_lib
from harness import training
from harness._tf import tf
from harness.cli import job_config
from harness.cli import preflight
from harness.cli import registry
from harness.distribute import evaluator_guard
from harness.distribute import roles
from harness.distribute import strategies
from harness.export import exporter
from harness.guard import stop_signal

__all__ = ["build_estimator", "check_gpus_visible", "input_fn_for",
           "serving_input_receiver_fn", "exporters_for", "export_paths",
           "ONE_PROCESS_MODES", "MODE_RUNNERS", "write_predictions"]

# Modes that are one process's job: in a TF_CONFIG cluster the chief does
# them (`harness.plan.runs_one_process_job`) and every other task exits.
ONE_PROCESS_MODES = ("evaluate", "predict", "export")
# Seconds between two progress lines of --mode=predict.
PREDICT_REPORT_SECS = 10.0


def _in_process(job, plan):
  """The plan a one-process mode runs with (`harness.plan.in_process`):
  a local job, no server, no strategy; logged by the task that runs it."""
  if plan_lib.runs_one_process_job(plan):  # The others: `_exits_here`.
    logging.info("%s | %s | --mode=%s is a one-process job: it runs here, "
                 "in-process, as a local job (no server, no distribution "
                 "strategy); the other tasks exit", job.mode,
                 plan.task_label, job.mode)
  return plan_lib.in_process(plan)


def _exits_here(job, plan):
  """True (after one log line) on a task that leaves a one-process job."""
  if plan_lib.runs_one_process_job(plan):
    return False
  logging.info("%s | %s | --mode=%s is a one-process job run by %s: this "
               "task has nothing to do and exits", job.mode, plan.task_label,
               job.mode, plan_lib.one_process_task(plan))
  return True


def build_estimator(job, plan):
  """RunConfig (strategy, cluster, checkpoints) and Estimator for `job`,
  from its `plan` (`harness.plan.TaskPlan`), which the RunConfig carries
  on (a one-process job's: its local plan)."""
  if plan.role == plan_lib.Role.EVALUATOR:
    evaluator_guard.install(None, cluster_info=plan.cluster_info)
  elif plan.role != plan_lib.Role.PS:
    check_gpus_visible(job)
  one_process = plan.role.in_cluster and job.mode in ONE_PROCESS_MODES
  if one_process:  # Every task: only the chief runs, none trains.
    plan = _in_process(job, plan)
  model_fn = registry.resolve_model_fn(job.model_fn)
  params = registry.merged_params(job)
  kwargs = job_config.run_config_kwargs(job, plan)
  # Built unconfigured (the plan checked it against its cluster): a local
  # strategy is configured by the runner that trains with it
  # (`Estimator.train`), a cluster task's by its role, once.
  strategy = None if one_process else strategies.make_strategy(
      plan.strategy, num_devices_per_worker=job.num_devices_per_worker,
      device_type=job.device_type)
  if job.remote_cluster:
    kwargs["experimental_distribute"] = run_config_lib.DistributeConfig(
        train_distribute=strategy, remote_cluster=dict(job.remote_cluster))
  else:
    kwargs["train_distribute"] = strategy
  # The job's plan (a one-process job's local one), passed on: its
  # TF_CONFIG, model_dir and its source (the Estimator's one log line
  # names it; with none, the Estimator makes the temporary one).
  config = run_config_lib.RunConfig(plan=plan, **kwargs)
  return estimator_lib.Estimator(model_fn, config=config, params=params)


def check_gpus_visible(job):
  """Refuses --num_gpus_per_worker beyond the GPUs TensorFlow sees."""
  if job.device_type != "GPU":
    return
  found = len(tf.config.list_physical_devices("GPU"))
  if found < job.num_gpus_per_worker:
    raise errors.FlagError(
        f"flag --num_gpus_per_worker={job.num_gpus_per_worker}: TensorFlow "
        f"sees {found} GPU(s) on this machine (is it a CPU-only TensorFlow "
        "build, or are CUDA libraries missing?). Fix: pass --cpu_stand_in to "
        f"run {job.num_gpus_per_worker} CPU devices in their place, lower "
        "--num_gpus_per_worker, or install tensorflow[and-cuda].")


def input_fn_for(job, mode, params, lazy=False):
  """The input_fn of `mode` from the registry's factory, global batch size."""
  make = registry.resolve_input_fn(job.input_fn)

  def build():
    return make(mode, data_dir=job.data_dir, batch_size=job.batch_size,
                params=params)

  if not lazy:
    return build()

  def input_fn(input_context=None):  # Built on first use (ps tasks never do).
    return build()(input_context)

  return input_fn


def serving_input_receiver_fn(job, params):
  """The input module's `serving_input_receiver_fn`, else a raw receiver.

  The raw receiver feeds placeholders shaped like the PREDICT dataset's
  features (any batch size).
  """
  module = inspect.getmodule(registry.resolve_input_fn(job.input_fn))
  provided = getattr(module, "serving_input_receiver_fn", None)
  if callable(provided):
    return provided
  with tf.Graph().as_default():
    spec = input_fn_for(job, "infer", params)().element_spec
  features = spec[0] if isinstance(spec, tuple) else spec
  if isinstance(features, dict):
    return export.build_raw_serving_input_receiver_fn(features)

  def tensor_receiver_fn():  # One feature Tensor, served under "input".
    shape = tf.TensorShape([None]).concatenate(features.shape[1:])
    placeholder = tf.compat.v1.placeholder(features.dtype, shape, name="input")
    return export.TensorServingInputReceiver(placeholder,
                                             {"input": placeholder})

  return tensor_receiver_fn


def exporters_for(job, params):
  """The `--exporters` of `job`, made with its serving receiver."""
  if not job.exporters:
    return []
  receiver_fn = serving_input_receiver_fn(job, params)
  makers = {
      "latest": lambda: exporter.LatestExporter("latest", receiver_fn),
      "best": lambda: exporter.BestExporter(
          name="best", serving_input_receiver_fn=receiver_fn),
      "final": lambda: exporter.FinalExporter("final", receiver_fn),
  }
  return [makers[name]() for name in job.exporters]


def export_paths(results):
  """The SavedModel paths among `train_and_evaluate`'s export results."""
  return [os.fsdecode(r) for r in results or () if isinstance(
      r, (str, bytes, os.PathLike))]


def _train_and_evaluate(estimator, job, plan):
  params = estimator.params
  lazy = plan.role == plan_lib.Role.PS
  train_kwargs, eval_kwargs = job_config.spec_kwargs(job)
  train_spec = training.TrainSpec(
      input_fn_for(job, "train", params, lazy), **train_kwargs)
  eval_spec = training.EvalSpec(
      input_fn_for(job, "eval", params, lazy),
      exporters=[] if lazy else exporters_for(job, params), **eval_kwargs)
  # The evaluator's poll and idle timeout travel in the RunConfig.
  metrics, exports = training.train_and_evaluate(
      estimator, train_spec, eval_spec)
  return metrics, export_paths(exports), None


def _train(estimator, job, plan):
  if plan.role == plan_lib.Role.PS:
    # Estimator.train refuses a ps task (as 2.15): serve the trainers'
    # variables until they finish, as train_and_evaluate's ps does.
    metrics, exports = roles.run_ps(estimator)
    return metrics, exports, None
  if plan.role == plan_lib.Role.EVALUATOR:
    logging.warning("train | %s | --mode=train evaluates nothing: this task "
                    "exits (--mode=train_and_evaluate evaluates the "
                    "checkpoints as they come)", plan.task_label)
    return None, [], None
  estimator.train(input_fn_for(job, "train", estimator.params),
                  max_steps=job.max_steps)
  return None, [], None


def _evaluate(estimator, job, plan):
  if _exits_here(job, plan):
    return None, [], None
  return estimator.evaluate(input_fn_for(job, "eval", estimator.params),
                            steps=job.eval_steps), [], None


def _jsonable(value):
  if isinstance(value, bytes):
    return value.decode("utf-8", "replace")
  if hasattr(value, "tolist"):  # numpy arrays and scalars.
    return value.tolist()
  raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _predict(estimator, job, plan):
  if _exits_here(job, plan):
    return None, [], None
  path = preflight.predictions_path(job, estimator.model_dir)
  if os.path.dirname(path):
    tf.io.gfile.makedirs(os.path.dirname(path))
  predictions = estimator.predict(input_fn_for(job, "infer", estimator.params))
  try:
    with tf.io.gfile.GFile(path, "w") as f:
      count = write_predictions(predictions, f, path=path,
                                limit=job.max_predictions,
                                task_label=plan.task_label)
  finally:
    predictions.close()  # Ends its session (early at --max_predictions).
  logging.info("predict | wrote %d predictions to %s%s", count, path,
               "" if os.path.dirname(path) == os.fsdecode(estimator.model_dir)
               else " (not in model_dir)")
  return None, [], path


def write_predictions(predictions, f, *, path, limit, task_label,
                      clock=time.monotonic):
  """Writes one JSON line per prediction to the open file `f` (at `path`)
  until the input ends (as 2.15's Estimator.predict) or `limit` lines (None:
  no limit), with a progress line every PREDICT_REPORT_SECS of `clock`.

  Returns:
    The number of lines written.

  Raises:
    PredictionInterruptedError: SIGINT / SIGTERM; it says what was written.
  """
  count = 0
  next_report = clock() + PREDICT_REPORT_SECS
  try:
    for prediction in predictions:
      f.write(json.dumps(prediction, default=_jsonable) + "\n")
      count += 1
      if count == limit:
        break
      if clock() >= next_report:
        next_report = clock() + PREDICT_REPORT_SECS
        logging.info(
            "predict | %s | %d predictions written to %s; the input has not "
            "ended (%s)", task_label, count, path,
            f"stops at --max_predictions={limit}" if limit else
            "no --max_predictions: until it ends; Ctrl-C keeps the lines")
  except (KeyboardInterrupt, stop_signal.Terminated) as e:
    error = errors.PredictionInterruptedError(
        f"predict | {task_label} | interrupted after {count} predictions; "
        f"{path} holds them, one complete JSON line each. Fix: nothing is "
        "lost; pass --max_predictions=N to stop after N predictions.")
    error.signal_name = ("SIGINT" if isinstance(e, KeyboardInterrupt)
                         else "SIGTERM")
    raise error from None
  return count


def _export(estimator, job, plan):
  if _exits_here(job, plan):
    return None, [], None
  path = estimator.export_saved_model(
      os.path.join(estimator.model_dir, "export", "saved_model"),
      serving_input_receiver_fn(job, estimator.params))
  return None, [os.fsdecode(path)], None


# Dispatch is explicit: mode -> runner(estimator, job, plan) returning
# (metrics or None, export paths, predictions path or None).
MODE_RUNNERS = {
    "train_and_evaluate": _train_and_evaluate,
    "train": _train,
    "evaluate": _evaluate,
    "predict": _predict,
    "export": _export,
}

