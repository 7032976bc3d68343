"""What `harness.cli.job.run_job` does once it runs: the Estimator and modes.

    from harness.cli import mode_runners

    estimator = mode_runners.build_estimator(job, environ, info)
    metrics, export_paths, predictions_path = mode_runners.MODE_RUNNERS[
        job.mode](estimator, job, info)

`build_estimator` makes the RunConfig (strategy, the TF_CONFIG `info`
parsed once by `harness.cli.flags.parse`, checkpoints) and the Estimator
(`--model_dir` as its model_dir: the one model_dir decision); each runner
builds the input_fns (global batch size) and exporters of its mode. This
module imports TensorFlow at its top; `harness.cli.job` imports it only
when a job runs, so the dry run and `--help` stay TensorFlow-free.
"""

import inspect
import json
import os

from absl import logging

from harness import errors
from harness import estimator as estimator_lib
from harness import export
from harness import run_config as run_config_lib
from harness import training
from harness._tf import tf
from harness.cli import job_config
from harness.cli import registry
from harness.cluster import env_knobs
from harness.cluster import tf_config as cluster_lib
from harness.distribute import roles
from harness.distribute import strategies
from harness.export import exporter

__all__ = ["build_estimator", "check_gpus_visible", "input_fn_for",
           "serving_input_receiver_fn", "exporters_for", "export_paths",
           "MODE_RUNNERS"]


def build_estimator(job, environ, info):
  """RunConfig (strategy, cluster, checkpoints) and Estimator for `job`."""
  if job_config.is_task(info, cluster_lib.EVALUATOR):
    strategies.install_evaluator_guard(environ, cluster_info=info)
  elif not job_config.is_task(info, cluster_lib.PS):
    check_gpus_visible(job)
  local = not job.remote_cluster and (info is None or not info.has_cluster)
  strategy = strategies.make_strategy(
      job.strategy, num_devices_per_worker=job.num_devices_per_worker,
      device_type=job.device_type,
      cluster=job.remote_cluster or (info.cluster if info else None))
  session_config = None
  if local and strategy is not None:
    session_config = strategies.configure_for_task(
        strategy, cluster=None, task_type=cluster_lib.WORKER, task_id=0,
        num_devices_per_worker=job.num_devices_per_worker,
        device_type=job.device_type)
  kwargs = job_config.run_config_kwargs(job)
  for knob in (env_knobs.PEER_TIMEOUT, env_knobs.RESTART_WAIT):
    # RunConfig reads no environ when given cluster_info: resolved here.
    kwargs[knob.name] = env_knobs.resolve_secs(kwargs[knob.name], knob,
                                               environ)
  if job.remote_cluster:
    kwargs["experimental_distribute"] = run_config_lib.DistributeConfig(
        train_distribute=strategy, remote_cluster=dict(job.remote_cluster))
  else:
    kwargs["train_distribute"] = strategy
  config = run_config_lib.RunConfig(
      session_config=session_config, cluster_info=info, **kwargs)
  # --model_dir is the Estimator's model_dir: the Estimator decides it
  # (with RunConfig's and TF_CONFIG's, else a temporary folder), once.
  return estimator_lib.Estimator(
      registry.resolve_model_fn(job.model_fn), model_dir=job.model_dir,
      config=config, params=job_config.merged_params(job))


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


def _train_and_evaluate(estimator, job, info):
  params = estimator.params
  lazy = job_config.is_task(info, cluster_lib.PS)
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


def _train(estimator, job, info):
  if job_config.is_task(info, cluster_lib.PS):
    # Estimator.train refuses a ps task (as 2.15): serve the trainers'
    # variables until they finish, as train_and_evaluate's ps does.
    metrics, exports = roles.run_ps(estimator, None, None)
    return metrics, exports, None
  if job_config.is_task(info, cluster_lib.EVALUATOR):
    logging.warning("train | %s | --mode=train evaluates nothing: this task "
                    "exits (--mode=train_and_evaluate evaluates the "
                    "checkpoints as they come)", job_config.task_label(info))
    return None, [], None
  estimator.train(input_fn_for(job, "train", estimator.params),
                  max_steps=job.max_steps)
  return None, [], None


def _evaluate(estimator, job, info):
  del info
  return estimator.evaluate(input_fn_for(job, "eval", estimator.params),
                            steps=job.eval_steps), [], None


def _jsonable(value):
  if isinstance(value, bytes):
    return value.decode("utf-8", "replace")
  if hasattr(value, "tolist"):  # numpy arrays and scalars.
    return value.tolist()
  raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _predict(estimator, job, info):
  del info
  path = os.path.join(estimator.model_dir, "predictions.jsonl")
  tf.io.gfile.makedirs(estimator.model_dir)
  count = 0
  with tf.io.gfile.GFile(path, "w") as f:
    for prediction in estimator.predict(
        input_fn_for(job, "infer", estimator.params)):
      f.write(json.dumps(prediction, default=_jsonable) + "\n")
      count += 1
  logging.info("predict | wrote %d predictions to %s", count, path)
  return None, [], path


def _export(estimator, job, info):
  del info
  path = estimator.export_saved_model(
      os.path.join(estimator.model_dir, "export", "saved_model"),
      serving_input_receiver_fn(job, estimator.params))
  return None, [os.fsdecode(path)], None


# Dispatch is explicit: mode -> runner(estimator, job, info) returning
# (metrics or None, export paths, predictions path or None).
MODE_RUNNERS = {
    "train_and_evaluate": _train_and_evaluate,
    "train": _train,
    "evaluate": _evaluate,
    "predict": _predict,
    "export": _export,
}

