"""`run_job`: one training job described by a `JobConfig`, no flags read.

The library entry point behind `python -m harness.main`::

    from harness.cli import job

    result = job.run_job(
        job.JobConfig(model_fn="linear", input_fn="constant", max_steps=20,
                      eval_steps=2, model_dir="/tmp/linear",
                      exporters=("latest",), throttle_secs=0),
        environ=os.environ)
    result.metrics["loss"], result.latest_checkpoint, result.export_paths

`run_job` builds the RunConfig, Estimator, input_fns (global batch size) and
exporters, then does what `mode` says. It prints one start-up banner, the
evaluation results as a table and a final summary to `out`; progress lines
come from the Estimator's `ProgressLoggerHook`. Only running imports
TensorFlow: importing this module and `dry_run` need none.
"""

import contextlib
import dataclasses
import inspect
import json
import os
import sys
from typing import Any, Mapping

from absl import logging

from harness import errors
from harness.cli import results_text
from harness.cluster import env_knobs
from harness.cluster import tf_config as cluster_lib
from harness.cluster import tf_config_rules
from harness.core import stall
from harness.state import paths

__all__ = [
    "MODES", "STRATEGIES", "VERBOSITIES", "EXPORTERS",
    "JobConfig", "JobResult", "run_job",
    "check_environment", "num_replicas", "task_label",
    "describe", "format_metrics", "merged_params", "serving_input_receiver_fn",
    "run_config_kwargs", "spec_kwargs",
]

MODES = ("train_and_evaluate", "train", "evaluate", "predict", "export")
STRATEGIES = ("default", "mirrored", "collective", "parameter_server",
              "central_storage", "one_device")
VERBOSITIES = ("quiet", "info", "debug")
EXPORTERS = ("latest", "best", "final")


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobConfig:
  """Everything one `python -m harness.main` run does; the flags' values.

  Attributes mirror the flags of `harness.cli.flags` one for one (same names,
  same units); see `python -m harness.main --help` for each. `params` holds
  only the user's overrides, already coerced to the defaults' types;
  `batch_size` is the GLOBAL batch size (None: the input_fn's default);
  `eval_steps` None evaluates the whole eval input; `model_dir` None means
  TF_CONFIG's model_dir, else a new temporary directory (logged).
  """
  # What to train.
  model_fn: str = "mnist_cnn"
  input_fn: str = "mnist"
  params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  data_dir: str | None = None
  # What to do, where.
  mode: str = "train_and_evaluate"
  model_dir: str | None = None
  # Devices and cluster.
  strategy: str = "default"
  num_gpus_per_worker: int = 0
  cpu_stand_in: bool = False
  remote_cluster: Mapping[str, list[str]] | None = None
  remote_connect_timeout_secs: int = 30
  force_takeover: bool = False
  bind_address: str | None = None
  remote_claim_timeout_secs: int = 15
  # Steps and batches.
  max_steps: int | None = 1000
  eval_steps: int | None = 100
  batch_size: int | None = None
  steps_per_loop: int | str = "auto"  # The binary's default: fast.
  max_runs_without_progress: int = stall.DEFAULT_MAX_RUNS_WITHOUT_PROGRESS
  # RunConfig's (tf.estimator's) default; tests/test_failures.py pins them.
  session_creation_timeout_secs: int = 7200
  # Checkpoints and summaries.
  save_checkpoints_steps: int | None = None
  save_checkpoints_secs: int | None = None
  keep_checkpoint_max: int = 5
  save_summary_steps: int = 100
  log_step_count_steps: int = 100
  # Evaluation and export.
  throttle_secs: int = 600
  start_delay_secs: int = 0
  eval_idle_timeout_secs: int | None = None
  eval_poll_secs: float = env_knobs.EVAL_POLL_SECS
  exporters: tuple[str, ...] = ()
  # Waiting for peers (None: the variable named in harness.cluster.env_knobs, else
  # its default).
  peer_timeout_secs: float | None = None
  restart_wait_secs: float | None = None
  # TensorBoard (port None: not started; 0: a free port).
  tensorboard: int | None = None
  tensorboard_keep: bool = False
  # Run control.
  tf_random_seed: int | None = None
  verbosity: str = "info"
  dry_run: bool = False

  def __post_init__(self):
    for name, values, valid in (("mode", [self.mode], MODES),
                                ("strategy", [self.strategy], STRATEGIES),
                                ("verbosity", [self.verbosity], VERBOSITIES),
                                ("exporters", self.exporters, EXPORTERS)):
      if set(values) - set(valid):
        raise errors.ConfigError(
            f"JobConfig `{name}` is {getattr(self, name)!r}; valid values "
            f"are {list(valid)}. Fix: use those (harness.cli.flags.parse also "
            "accepts other spellings of a strategy).")
    object.__setattr__(self, "params", dict(self.params))
    object.__setattr__(self, "exporters", tuple(self.exporters))
    if self.remote_cluster is not None:
      object.__setattr__(self, "remote_cluster", {
          job: list(a) for job, a in self.remote_cluster.items()})

  @property
  def device_type(self):
    """"GPU" when GPUs are asked for and not stood in for, else "CPU"."""
    return "GPU" if self.num_gpus_per_worker and not self.cpu_stand_in else (
        "CPU")

  @property
  def num_devices_per_worker(self):
    """Replicas on each machine: the GPUs asked for, at least 1."""
    return max(1, self.num_gpus_per_worker)


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobResult:
  """What a `run_job` call produced.

  `task` is e.g. "worker/1" or "local"; `metrics` the last evaluation's (or
  None); `export_paths` the SavedModel directories this run wrote;
  `predictions_path` the JSON-lines file of mode predict; `model_dir` is
  None for a dry run.
  """
  mode: str
  task: str
  model_dir: str | None = None
  metrics: Mapping[str, Any] | None = None
  latest_checkpoint: str | None = None
  export_paths: tuple[str, ...] = ()
  predictions_path: str | None = None
  dry_run: bool = False


# --------------------------------------------------------- facts, no TF


def task_label(info):
  """"chief/0", "worker/1", ... from a `ClusterInfo`; "local" without one."""
  return cluster_lib.LOCAL_LABEL if info is None else info.task_label


def _trainers(job, info):
  if job.remote_cluster:
    cluster = job.remote_cluster
  elif info is not None and info.has_cluster:
    cluster = info.cluster
  else:
    return 1
  return max(1, sum(len(cluster.get(j, ())) for j in cluster_lib.TRAINER_JOBS))


def num_replicas(job, info):
  """`num_replicas_in_sync` of `job` under `info` (TF_CONFIG or None).

  Devices per worker for mirrored, central_storage and parameter_server
  (whose workers update asynchronously), times the training tasks for
  collective, 1 for default and one_device.
  """
  if job.strategy in ("default", "one_device"):
    return 1
  if job.strategy == "collective":
    return job.num_devices_per_worker * _trainers(job, info)
  return job.num_devices_per_worker


def check_environment(job, info, *, gpu_count, skip=()):
  """What stops `job` from running here, found before any server starts.

  Args:
    job: a `JobConfig`; info: TF_CONFIG's `ClusterInfo`, or None.
    gpu_count: callable returning the GPUs this machine has.
    skip: fields already reported bad (their checks are skipped).

  Returns:
    Problems as `flag --name=value: why. Fix: ...` strings ([]: it fits).
  """
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
  tf_dir = paths.normalize_model_dir(info.model_dir if info else None)
  if clustered and job.remote_cluster:
    problems.append(
        f"flag --remote_cluster={json.dumps(job.remote_cluster)}: TF_CONFIG "
        f"also names a cluster ({sorted(info.cluster)}). Fix: unset "
        "TF_CONFIG in the client, or drop --remote_cluster.")
  if job.model_dir and tf_dir and job.model_dir != tf_dir:
    problems.append(
        f"flag --model_dir={job.model_dir}: TF_CONFIG's model_dir is "
        f"{tf_dir!r}. Fix: drop one of them, or make them equal.")
  if clustered and not job.model_dir and not tf_dir:
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
  gpus = job.num_gpus_per_worker
  if job.device_type == "GPU" and "num_gpus_per_worker" not in skip and (
      gpu_count() < gpus):
    problems.append(
        f"flag --num_gpus_per_worker={gpus}: this machine has {gpu_count()} "
        f"visible GPU(s). Fix: pass --cpu_stand_in to run {gpus} CPU "
        "devices in their place, or lower --num_gpus_per_worker.")
  replicas = num_replicas(job, info)
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
  return f"{task_label(info)} of cluster {{{jobs}}} (TF_CONFIG)"


def describe(job, info, *, model_dir=None, full=False):
  """The start-up banner; with `full`, also every field (the dry run).

  `info` is TF_CONFIG's `ClusterInfo` or None; `model_dir` the resolved one
  (None: job.model_dir, else TF_CONFIG's, else "a new temporary directory").
  """
  model_dir = model_dir or job.model_dir or (
      info.model_dir if info is not None and info.model_dir else
      "(a new temporary directory)")
  params = json.dumps(job.params, sort_keys=True) if job.params else "defaults"
  replicas, devices = num_replicas(job, info), job.num_devices_per_worker
  stand_in = " standing in for GPUs" if job.cpu_stand_in and (
      job.num_gpus_per_worker) else ""
  in_sync = "a worker, async" if job.strategy == "parameter_server" else (
      "in sync")
  batch = "the input_fn's default" if job.batch_size is None else (
      f"global {job.batch_size}, per replica {job.batch_size // replicas}")
  rows = [
      ("task", _role_text(info, job.remote_cluster)),
      ("strategy", f"{job.strategy}, {replicas} replica(s) {in_sync}, "
       f"{devices} {job.device_type} device(s) per worker{stand_in}"),
      ("model_fn", f"{job.model_fn} (params: {params})"),
      ("input_fn", job.input_fn + (f" (data_dir {job.data_dir})"
                                   if job.data_dir else "")),
      ("model_dir", model_dir),
      ("batch", batch),
  ]
  lines = [f"harness.main | {task_label(info)} | {job.mode}"]
  lines += [f"  {key + ':':<11} {value}" for key, value in rows]
  if full:
    lines.append("  resolved configuration:")
    width = max(len(f.name) for f in dataclasses.fields(job))
    lines += [f"    {f.name:<{width}}  {_show(getattr(job, f.name))}"
              for f in dataclasses.fields(job)]
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


format_metrics = results_text.format_metrics  # Part of this module's API.


# ----------------------------------------------------------------- running


def run_job(job, *, environ=None, out=None):
  """Runs `job`: trains, evaluates, predicts or exports as `job.mode` says.

  Args:
    job: a `JobConfig` (from `harness.cli.flags.parse`, or built directly).
    environ: mapping read for TF_CONFIG (default `os.environ`).
    out: text stream for the banner, results and summary (default stdout).

  Returns:
    A `JobResult`.

  Raises:
    HarnessError: a problem the user can fix (bad TF_CONFIG, GPUs that
      TensorFlow cannot see, a model_fn or input_fn error, ...).
  """
  environ = os.environ if environ is None else environ
  out = sys.stdout if out is None else out
  info = cluster_lib.from_environ(environ)
  label = "client" if job.remote_cluster else task_label(info)
  # GPUs are counted by TensorFlow itself below, when the job runs.
  problems = check_environment(
      job, info, gpu_count=lambda: job.num_gpus_per_worker)
  if problems:
    raise errors.ConfigError(
        "The job does not fit this machine or cluster:\n  " +
        "\n  ".join(problems))
  if job.dry_run:
    _emit(out, describe(job, info, full=True))
    _emit(out, f"dry run | {label} | TF_CONFIG role: "
          f"{_role_text(info, job.remote_cluster)}; nothing was run.")
    return JobResult(mode=job.mode, task=label, dry_run=True)
  estimator = _build_estimator(job, environ, info)
  if job.verbosity != "quiet":
    _emit(out, describe(job, info, model_dir=estimator.model_dir))
  with _tensorboard(job, info, estimator.model_dir, out):
    metrics, export_paths, predictions_path = _MODE_RUNNERS[job.mode](
        estimator, job, info)
  result = JobResult(
      mode=job.mode, task=label, model_dir=estimator.model_dir,
      metrics=dict(metrics) if metrics else None,
      latest_checkpoint=estimator.latest_checkpoint(),
      export_paths=tuple(export_paths), predictions_path=predictions_path)
  if result.metrics:
    _emit(out, results_text.format_metrics(result.metrics, label))
  _emit(out, results_text.summary(result, job))
  return result


def _tensorboard(job, info, model_dir, out):
  """TensorBoard for `model_dir` while the job runs (`--tensorboard`).

  Started once per cluster: by the chief (or the local process / client).
  """
  from harness.cli import tensorboard_server  # pylint: disable=g-import-not-at-top
  if job.tensorboard is None:
    return contextlib.nullcontext()
  if not job.remote_cluster and not (
      cluster_lib.is_chief(info, job.strategy != "default") and
      not _is_task(info, cluster_lib.EVALUATOR)):
    logging.info("tensorboard | %s | not started here: the chief serves it",
                 task_label(info))
    return contextlib.nullcontext()
  return tensorboard_server.serving(model_dir, port=job.tensorboard,
                                    keep=job.tensorboard_keep, out=out)


def _emit(out, text):
  print(text, file=out, flush=True)


def _is_task(info, task_type):
  return info is not None and info.has_cluster and info.task_type == task_type


def _build_estimator(job, environ, info):
  """RunConfig (strategy, cluster, checkpoints) and Estimator for `job`."""
  # Imported here so that the dry run and `import harness.cli.job` need no
  # TensorFlow. pylint: disable=g-import-not-at-top
  from harness import estimator as estimator_lib
  from harness.cli import registry
  from harness import run_config as run_config_lib
  from harness.distribute import strategies
  from harness.state import storage
  # pylint: enable=g-import-not-at-top
  if _is_task(info, cluster_lib.EVALUATOR):
    strategies.install_evaluator_guard(environ)
  elif not _is_task(info, cluster_lib.PS):
    _check_gpus_visible(job)
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
  model_dir = job.model_dir
  if model_dir is None and not (info is not None and info.model_dir):
    model_dir = storage.temporary_model_dir()
  kwargs = run_config_kwargs(job)
  if job.remote_cluster:
    kwargs["experimental_distribute"] = run_config_lib.DistributeConfig(
        train_distribute=strategy, remote_cluster=dict(job.remote_cluster))
  else:
    kwargs["train_distribute"] = strategy
  config = run_config_lib.RunConfig(
      model_dir=model_dir, session_config=session_config, environ=environ,
      **kwargs)
  return estimator_lib.Estimator(
      registry.resolve_model_fn(job.model_fn), config=config,
      params=merged_params(job))


def run_config_kwargs(job):
  """The RunConfig arguments that come from `job`'s fields (no strategy,
  model_dir or session_config): one place, compared with the flags'
  defaults by tests."""
  kwargs = dict(
      tf_random_seed=job.tf_random_seed,
      save_summary_steps=job.save_summary_steps,
      keep_checkpoint_max=job.keep_checkpoint_max,
      log_step_count_steps=job.log_step_count_steps,
      steps_per_loop=job.steps_per_loop,
      remote_connect_timeout_secs=float(job.remote_connect_timeout_secs),
      eval_poll_secs=float(job.eval_poll_secs),
      eval_idle_timeout_secs=job.eval_idle_timeout_secs,
      peer_timeout_secs=job.peer_timeout_secs,
      restart_wait_secs=job.restart_wait_secs,
      force_takeover=job.force_takeover,
      bind_address=job.bind_address,
      remote_claim_timeout_secs=float(job.remote_claim_timeout_secs),
      max_runs_without_progress=job.max_runs_without_progress,
      session_creation_timeout_secs=job.session_creation_timeout_secs)
  if job.save_checkpoints_steps is not None:
    kwargs["save_checkpoints_steps"] = job.save_checkpoints_steps
  elif job.save_checkpoints_secs is not None:
    kwargs["save_checkpoints_secs"] = job.save_checkpoints_secs
  return kwargs


def spec_kwargs(job):
  """(TrainSpec, EvalSpec) arguments from `job`'s fields, input_fns and
  exporters aside."""
  return (dict(max_steps=job.max_steps),
          dict(steps=job.eval_steps, start_delay_secs=job.start_delay_secs,
               throttle_secs=job.throttle_secs))


def merged_params(job):
  """The model's and the input's DEFAULT_PARAMS, then the job's overrides."""
  from harness.cli import registry  # pylint: disable=g-import-not-at-top
  params = registry.input_default_params(job.input_fn)
  params.update(registry.model_default_params(job.model_fn))
  params.update(job.params)
  return params


def _check_gpus_visible(job):
  if job.device_type != "GPU":
    return
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  found = len(tf.config.list_physical_devices("GPU"))
  if found < job.num_gpus_per_worker:
    raise errors.FlagError(
        f"flag --num_gpus_per_worker={job.num_gpus_per_worker}: TensorFlow "
        f"sees {found} GPU(s) on this machine (is it a CPU-only TensorFlow "
        "build, or are CUDA libraries missing?). Fix: pass --cpu_stand_in to "
        f"run {job.num_gpus_per_worker} CPU devices in their place, lower "
        "--num_gpus_per_worker, or install tensorflow[and-cuda].")


def _input_fn(job, mode, params, lazy=False):
  """The input_fn of `mode` from the registry's factory, global batch size."""
  from harness.cli import registry  # pylint: disable=g-import-not-at-top
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
  # pylint: disable=g-import-not-at-top
  from harness import export
  from harness.cli import registry
  from harness._tf import tf
  # pylint: enable=g-import-not-at-top
  module = inspect.getmodule(registry.resolve_input_fn(job.input_fn))
  provided = getattr(module, "serving_input_receiver_fn", None)
  if callable(provided):
    return provided
  with tf.Graph().as_default():
    spec = _input_fn(job, "infer", params)().element_spec
  features = spec[0] if isinstance(spec, tuple) else spec
  if isinstance(features, dict):
    return export.build_raw_serving_input_receiver_fn(features)

  def tensor_receiver_fn():  # One feature Tensor, served under "input".
    shape = tf.TensorShape([None]).concatenate(features.shape[1:])
    placeholder = tf.compat.v1.placeholder(features.dtype, shape, name="input")
    return export.TensorServingInputReceiver(placeholder,
                                             {"input": placeholder})

  return tensor_receiver_fn


def _exporters(job, params):
  from harness.export import exporter  # pylint: disable=g-import-not-at-top
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


def _paths(results):
  return [os.fsdecode(r) for r in results or () if isinstance(
      r, (str, bytes, os.PathLike))]


def _train_and_evaluate(estimator, job, info):
  from harness import training  # pylint: disable=g-import-not-at-top
  params = estimator.params
  lazy = _is_task(info, cluster_lib.PS)
  train_kwargs, eval_kwargs = spec_kwargs(job)
  train_spec = training.TrainSpec(
      _input_fn(job, "train", params, lazy), **train_kwargs)
  eval_spec = training.EvalSpec(
      _input_fn(job, "eval", params, lazy),
      exporters=[] if lazy else _exporters(job, params), **eval_kwargs)
  # The evaluator's poll and idle timeout travel in the RunConfig.
  metrics, exports = training.train_and_evaluate(
      estimator, train_spec, eval_spec)
  return metrics, _paths(exports), None


def _train(estimator, job, info):
  del info
  estimator.train(_input_fn(job, "train", estimator.params),
                  max_steps=job.max_steps)
  return None, [], None


def _evaluate(estimator, job, info):
  del info
  return estimator.evaluate(_input_fn(job, "eval", estimator.params),
                            steps=job.eval_steps), [], None


def _jsonable(value):
  if isinstance(value, bytes):
    return value.decode("utf-8", "replace")
  if hasattr(value, "tolist"):  # numpy arrays and scalars.
    return value.tolist()
  raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _predict(estimator, job, info):
  del info
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  path = os.path.join(estimator.model_dir, "predictions.jsonl")
  tf.io.gfile.makedirs(estimator.model_dir)
  count = 0
  with tf.io.gfile.GFile(path, "w") as f:
    for prediction in estimator.predict(
        _input_fn(job, "infer", estimator.params)):
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
_MODE_RUNNERS = {
    "train_and_evaluate": _train_and_evaluate,
    "train": _train,
    "evaluate": _evaluate,
    "predict": _predict,
    "export": _export,
}
