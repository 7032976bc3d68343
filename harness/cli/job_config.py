"""`JobConfig`: what one `python -m harness.main` run does, and its facts.

    from harness.cli import job_config

    job = job_config.JobConfig(model_fn="linear", input_fn="constant",
                               max_steps=20, model_dir="/tmp/linear")
    plan = job_plan.plan_job(job)            # harness.cli.plan
    job_config.run_config_kwargs(job, plan)  # the RunConfig arguments

The flags of `harness.cli.flags` are this dataclass's fields (one for one,
`FLAG_NAMES`); `harness.cli.job` runs it. harness's own RunConfig fields
are not written here: they come from `harness.fields` (names, types, the
binary's defaults, their RunConfig arguments). No TensorFlow here: the
flags, `--help` and the dry run need none.
"""

import dataclasses
from typing import Any, Mapping

from harness import errors
from harness import fields
from harness.cluster import strategy_kind

__all__ = [
    "MODES", "STRATEGIES", "VERBOSITIES", "EXPORTERS",
    "JobConfig", "FLAG_NAMES", "JobResult", "DEFAULTS", "run_config_kwargs",
    "spec_kwargs",
]

MODES = ("train_and_evaluate", "train", "evaluate", "predict", "export")
STRATEGIES = tuple(kind.value for kind in strategy_kind.BUILDABLE_KINDS)
VERBOSITIES = ("quiet", "info", "debug")
EXPORTERS = ("latest", "best", "final")


def _with_run_config_fields(cls):
  """`cls` with harness's RunConfig fields (`harness.fields`) added after
  its own, typed and with the binary's defaults; before `dataclass`."""
  annotations = cls.__dict__["__annotations__"]
  for field in fields.FIELDS:
    annotations[field.name] = field.type
    setattr(cls, field.name, field.flag_default)
  return cls


@dataclasses.dataclass(frozen=True, kw_only=True)
@_with_run_config_fields
class JobConfig:
  """Everything one `python -m harness.main` run does; the flags' values.

  Attributes mirror the flags of `harness.cli.flags` one for one (same names,
  same units); see `python -m harness.main --help` for each. The fields of
  `harness.fields` (steps_per_loop, the timeouts, metrics_port, xla, ...)
  follow the ones written below. `params` holds
  only the user's overrides, already coerced to the defaults' types;
  `batch_size` is the GLOBAL batch size (None: the input_fn's default);
  `eval_steps` None evaluates the whole eval input; `model_dir` None means
  TF_CONFIG's model_dir, else a new temporary directory (logged). The
  facts of its process (TF_CONFIG, role, model_dir, ...) are not here but
  in its plan (`harness.plan.TaskPlan`), passed beside it.
  """
  # What to train.
  model_fn: str = "mnist_cnn"
  input_fn: str = "mnist"
  params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  data_dir: str | None = None
  # What to do, where.
  mode: str = "train_and_evaluate"
  model_dir: str | None = None
  # --mode=predict's output (None: harness.cli.preflight.predictions_path).
  predictions_file: str | None = None
  max_predictions: int | None = None  # None: until the input ends.
  # Devices and cluster.
  # A kind `make_strategy` builds; its value (a string) is taken too.
  strategy: strategy_kind.StrategyKind = strategy_kind.StrategyKind.DEFAULT
  num_gpus_per_worker: int = 0
  cpu_stand_in: bool = False
  remote_cluster: Mapping[str, list[str]] | None = None
  # Steps and batches.
  max_steps: int | None = 1000
  eval_steps: int | None = 100
  batch_size: int | None = None
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
  exporters: tuple[str, ...] = ()
  # TensorBoard (port None: not started; 0: a free port).
  tensorboard: int | None = None
  tensorboard_keep: bool = False
  # Run control.
  tf_random_seed: int | None = None
  verbosity: str = "info"
  dry_run: bool = False
  keep_model_dir: bool = False

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
    object.__setattr__(self, "strategy",
                       strategy_kind.StrategyKind(self.strategy))
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


# Every field's default: the flags' defaults and `--help` read them here.
DEFAULTS = JobConfig()

# The fields, each a flag, in declaration order.
FLAG_NAMES = tuple(f.name for f in dataclasses.fields(JobConfig))


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobResult:
  """What a `run_job` call produced.

  `task` is e.g. "worker/1" or "local"; `metrics` the last evaluation's (or
  None); `export_paths` the SavedModel directories this run wrote;
  `predictions_path` the JSON-lines file of mode predict; `model_dir` is
  None for a dry run; `model_dir_removed`: the run's temporary model_dir
  (no --model_dir) was removed at its end.
  """
  mode: str
  task: str
  model_dir: str | None = None
  metrics: Mapping[str, Any] | None = None
  latest_checkpoint: str | None = None
  export_paths: tuple[str, ...] = ()
  predictions_path: str | None = None
  dry_run: bool = False
  model_dir_removed: bool = False  # The temporary one, at the run's end.


def run_config_kwargs(job, plan):
  """The RunConfig arguments that come from `job`'s fields and its `plan`
  (a `harness.plan.TaskPlan`: the knobs, resolved once); no
  strategy, model_dir or session_config. One place, compared with the
  flags' defaults by tests."""
  kwargs = dict(
      tf_random_seed=job.tf_random_seed,
      save_summary_steps=job.save_summary_steps,
      keep_checkpoint_max=job.keep_checkpoint_max,
      log_step_count_steps=job.log_step_count_steps,
      session_creation_timeout_secs=job.session_creation_timeout_secs)
  for field in fields.FIELDS:  # harness's own, as `harness.fields` says.
    value = (plan.knobs[field.name] if field.env is not None else
             getattr(job, field.name))
    convert = field.flag.to_run_config
    kwargs[field.name] = value if convert is None else convert(value)
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
