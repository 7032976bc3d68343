"""Every flag of `python -m harness.main`, with its validators.

    from harness.cli import flag_definitions

    flag_definitions.FLAG_VALUES["max_steps"].default   # JobConfig's 1000

The flags live in a private `absl.flags.FlagValues` (`FLAG_VALUES`), so
they never clash with `absl.flags.FLAGS`; each default is `JobConfig`'s
(`harness.cli.job_config`), and `job_config.FLAG_NAMES` are its flag fields,
one for one. Validators report in absl's `flag --x=y: why` form;
`harness.cli.flags.parse` runs them and collects every problem. No
TensorFlow.
"""

from absl import flags

from harness import fields
from harness.cli import flag_parsers
from harness.cli import job_config
from harness.cli import tensorboard_server
from harness.cluster import listen
from harness.fields import field as field_lib

__all__ = ["FLAG_VALUES", "BARE_VALUES"]

FLAG_VALUES = flags.FlagValues()
_FLAGS = FLAG_VALUES  # The name every definition below passes.
_D = job_config.DEFAULTS  # Each flag's default is JobConfig's.
# Flags whose value may be left out: the value a bare --name stands for.
BARE_VALUES = {"tensorboard": str(tensorboard_server.DEFAULT_PORT)}

# ------------------------------------------------------------------ flags
# Grouped as JobConfig's fields; each flag's default is JobConfig's.


def _check(condition, message):
  if not condition:
    raise flags.ValidationError(message)
  return True


def _int(name, minimum, fix, help_text):
  """DEFINE_integer plus its `>= minimum` validator (None passes)."""
  holder = flags.DEFINE_integer(name, getattr(_D, name), help_text,
                                flag_values=_FLAGS)

  @flags.validator(name, flag_values=_FLAGS)
  def _validate(value):
    return value is None or _check(value >= minimum,
                                   f"must be >= {minimum}. Fix: {fix}")

  del _validate  # Registered with _FLAGS.
  return holder


# What to train.
_MODEL_FN = flags.DEFINE_string(
    "model_fn", _D.model_fn, "A registered model_fn name (e.g. linear, "
    "mnist_cnn, mnist_mlp) or package.module:function.", flag_values=_FLAGS)
_INPUT_FN = flags.DEFINE_string(
    "input_fn", _D.input_fn, "A registered input_fn factory name (e.g. "
    "constant, mnist, mnist_idx, synthetic) or package.module:function.",
    flag_values=_FLAGS)
_PARAMS = flags.DEFINE(
    flag_parsers.ParamsParser(), "params", "", "Overrides of the model's and input's "
    "DEFAULT_PARAMS: key=value,... or a JSON object; values take the "
    "defaults' types.", flag_values=_FLAGS)
_DATA_DIR = flags.DEFINE_string(
    "data_dir", _D.data_dir, "Where the input_fn reads its data.",
    flag_values=_FLAGS)
# What to do, where.
_MODE = flags.DEFINE_enum(
    "mode", _D.mode, job_config.MODES, "What to run.", flag_values=_FLAGS)
_MODEL_DIR = flags.DEFINE_string(
    "model_dir", _D.model_dir, "Checkpoints, summaries and exports. Default: "
    "TF_CONFIG's model_dir, else a new temporary directory (logged).",
    flag_values=_FLAGS)
_PREDICTIONS_FILE = flags.DEFINE_string(
    "predictions_file", _D.predictions_file, "--mode=predict writes one JSON "
    "line per example here. Default: <model_dir>/predictions.jsonl, or "
    "./predictions.jsonl when model_dir is read-only (logged).",
    flag_values=_FLAGS)
_MAX_PREDICTIONS = _int(
    "max_predictions", 1, "a positive count, or leave it out to predict "
    "until the input ends.", "--mode=predict stops after this many "
    "predictions. Default: when the input ends, as Estimator.predict (an "
    "input that repeats runs until Ctrl-C, which keeps the lines written).")
# Devices and cluster.
_STRATEGY = flags.DEFINE(
    flag_parsers.StrategyParser(), "strategy", _D.strategy, "Distribution strategy: "
    + "|".join(job_config.STRATEGIES) + " (spellings such as "
    "MultiWorkerMirroredStrategy or ps are accepted). More collective "
    "workers train faster only when a step computes for several times the "
    "all-reduce of its gradients (README, 'What more workers buy': the "
    "measured speed-ups).", flag_values=_FLAGS)
_NUM_GPUS_PER_WORKER = _int(
    "num_gpus_per_worker", 0, "0 for CPU, or the GPUs per worker.",
    "GPUs (replicas) per worker; 0 trains on one CPU device.")
_CPU_STAND_IN = flags.DEFINE_bool(
    "cpu_stand_in", _D.cpu_stand_in, "Run --num_gpus_per_worker CPU devices "
    "in place of GPUs (for machines without GPUs).", flag_values=_FLAGS)
_REMOTE_CLUSTER = flags.DEFINE(
    flag_parsers.RemoteClusterParser(), "remote_cluster", None, "Train as a client of "
    "these servers: worker=h:p,h:p;ps=h:p or JSON.", flag_values=_FLAGS)
# Steps and batches.
_MAX_STEPS = _int(
    "max_steps", 1, "a global step to stop at, e.g. --max_steps=1000 "
    "(training also ends when a finite input ends first; the built-in "
    "input_fns repeat forever, so there is no 'until the input ends' value).",
    "Train up to this global step (or until a finite train input ends).")
_EVAL_STEPS = _int(
    "eval_steps", 0, "a number of batches, or 0 for the whole input.",
    "Batches per evaluation; 0: the whole eval input.")
_BATCH_SIZE = _int(
    "batch_size", 1, "a positive global batch size.", "GLOBAL batch size, "
    "split over the replicas (default: the input_fn's).")
_SESSION_CREATION_TIMEOUT_SECS = _int(
    "session_creation_timeout_secs", 1, "a positive number of seconds.",
    "A trainer waits this long for the cluster tasks it needs (logging "
    "which, every 10 s), then fails naming them.")
# Checkpoints and summaries.
_SAVE_CHECKPOINTS_STEPS = _int(
    "save_checkpoints_steps", 1, "a positive step count.", "Save a "
    "checkpoint every this many steps (excludes --save_checkpoints_secs).")
_SAVE_CHECKPOINTS_SECS = _int(
    "save_checkpoints_secs", 1, "a positive number of seconds.", "Save a "
    "checkpoint every this many seconds (default 600 when neither is given).")
_KEEP_CHECKPOINT_MAX = _int(
    "keep_checkpoint_max", 0, "0 keeps every checkpoint.",
    "Checkpoints kept; 0 keeps all.")
_SAVE_SUMMARY_STEPS = _int(
    "save_summary_steps", 0, "0 disables summaries.",
    "Write summaries every this many steps; 0 disables.")
_LOG_STEP_COUNT_STEPS = _int(
    "log_step_count_steps", 1, "a positive step count.",
    "Log a progress line every this many steps.")
# Evaluation and export.
_THROTTLE_SECS = _int(
    "throttle_secs", 0, "0 evaluates after every checkpoint.",
    "At least this many seconds between two evaluations.")
_START_DELAY_SECS = _int(
    "start_delay_secs", 0, "0 starts evaluating at once.",
    "The evaluator task waits this long before its first evaluation.")
# harness's RunConfig fields: below, each flag as `harness.fields`
# declares it.
_EXPORTERS = flags.DEFINE_list(
    "exporters", list(_D.exporters), "SavedModel exporters to run after "
    "evaluations: comma list of " + ",".join(job_config.EXPORTERS) + ".",
    flag_values=_FLAGS)
# TensorBoard (harness.cli.tensorboard_server).
_TENSORBOARD = flags.DEFINE_integer(
    "tensorboard", _D.tensorboard, "--tensorboard[=PORT]: serve model_dir "
    "with TensorBoard on 127.0.0.1:PORT while the job runs and print its URL"
    f"; a bare --tensorboard is port {tensorboard_server.DEFAULT_PORT}, 0 "
    "picks a free port. Under a cluster, the chief starts it.",
    flag_values=_FLAGS)
_TENSORBOARD_KEEP = flags.DEFINE_bool(
    "tensorboard_keep", _D.tensorboard_keep, "Leave --tensorboard's server "
    "running after the job ends (prints its pid).", flag_values=_FLAGS)
# Run control.
_TF_RANDOM_SEED = flags.DEFINE_integer(
    "tf_random_seed", _D.tf_random_seed, "Graph-level random seed.",
    flag_values=_FLAGS)
_VERBOSITY = flags.DEFINE_enum(
    "verbosity", _D.verbosity, job_config.VERBOSITIES, "quiet: results only; "
    "info: progress lines (prefix: level, time); debug: TensorFlow's own "
    "logs, tracebacks and absl's full log prefix (date, thread, file:line).",
    flag_values=_FLAGS)
_DRY_RUN = flags.DEFINE_bool(
    "dry_run", _D.dry_run, "Print the resolved configuration and the "
    "TF_CONFIG role, then exit 0.", flag_values=_FLAGS)
_KEEP_MODEL_DIR = flags.DEFINE_bool(
    "keep_model_dir", _D.keep_model_dir, "Keep the temporary model_dir of a "
    "run without --model_dir (removed at the end of a successful run, and "
    "when empty).", flag_values=_FLAGS)



def _secs(name, help_text, fallback=None):
  """DEFINE_float of seconds > 0 (None passes: the `fallback` applies)."""
  holder = flags.DEFINE_float(
      name, getattr(_D, name), help_text + (
          f" (default: ${fallback.env}, else {fallback.default:g})"
          if fallback else ""), flag_values=_FLAGS)
  flags.register_validator(
      name, lambda value: value is None or _check(
          value > 0, "must be > 0 seconds. Fix: give a positive number, or "
          "leave the flag out for its default."), flag_values=_FLAGS)
  return holder


# One definer a `harness.fields.field` flag kind: field -> FlagHolder.
_DEFINERS = {
    field_lib.INT: lambda f: _int(f.name, f.flag.minimum, f.flag.fix,
                                  f.flag.help),
    field_lib.SECS: lambda f: _secs(f.name, f.flag.help, f.env),
    field_lib.BOOL: lambda f: flags.DEFINE_bool(
        f.name, getattr(_D, f.name), f.flag.help, flag_values=_FLAGS),
    field_lib.STRING: lambda f: flags.DEFINE_string(
        f.name, getattr(_D, f.name), f.flag.help, flag_values=_FLAGS),
    field_lib.ENUM: lambda f: flags.DEFINE_enum(
        f.name, getattr(_D, f.name), f.flag.choices, f.flag.help,
        flag_values=_FLAGS),
    field_lib.PORT: lambda f: flags.DEFINE_integer(
        f.name, getattr(_D, f.name), f.flag.help, lower_bound=0,
        upper_bound=65535, flag_values=_FLAGS),
    field_lib.STEPS_PER_LOOP: lambda f: flags.DEFINE(
        flag_parsers.StepsPerLoopParser(), f.name, getattr(_D, f.name),
        f.flag.help, flag_values=_FLAGS),
}
_FIELD_FLAGS = {field.name: _DEFINERS[field.flag.kind](field)
                for field in fields.FIELDS}
# The flags' own wording of two fields' rules (RunConfig's is the table's).
flags.register_validator(
    "bind_address", lambda value: value in (None, "", "*", "0.0.0.0", "::")
    or _check(False, "TensorFlow 2.21 cannot listen on one address (it binds "
              "every interface). Fix: leave it out, or use '*'; restrict "
              "access with harness.launch's network namespace, a firewall or "
              "the k8s NetworkPolicy."), flag_values=_FLAGS)
flags.register_validator(
    "metrics_bind", lambda value: _check(
        not listen.host_problem(value), f"{listen.host_problem(value)}. "
        "Fix: 127.0.0.1 (this machine) or 0.0.0.0 (every interface)."),
    flag_values=_FLAGS)


assert set(job_config.FLAG_NAMES) == set(_FLAGS), (
    set(job_config.FLAG_NAMES) ^ set(_FLAGS))

# -------------------------------------------------------------- validators


for _name in ("model_dir", "data_dir"):
  flags.register_validator(
      _name, lambda value: value is None or _check(
          value.strip(), "is empty. Fix: give a path, or leave the flag out."),
      flag_values=_FLAGS)


@flags.validator("exporters", flag_values=_FLAGS)
def _validate_exporters(names):
  bad = [n for n in names if n not in job_config.EXPORTERS]
  _check(not bad, f"unknown exporter(s) {bad}. Fix: a comma list of "
         f"{', '.join(job_config.EXPORTERS)}.")
  return _check(len(set(names)) == len(names),
                "lists an exporter twice. Fix: name each once.")


@flags.validator("tensorboard", flag_values=_FLAGS)
def _validate_tensorboard_port(port):
  return port is None or _check(
      0 <= port <= 65535, "is not a TCP port (0..65535). Fix: --tensorboard "
      f"for port {tensorboard_server.DEFAULT_PORT}, or --tensorboard=0 for a "
      "free one.")


@flags.multi_flags_validator(["tensorboard", "tensorboard_keep"],
                             flag_values=_FLAGS)
def _validate_tensorboard_keep(values):
  return _check(values["tensorboard"] is not None or not values[
      "tensorboard_keep"], "--tensorboard_keep keeps the server that "
      "--tensorboard starts. Fix: add --tensorboard, or drop "
      "--tensorboard_keep.")


@flags.multi_flags_validator(
    ["save_checkpoints_steps", "save_checkpoints_secs"], flag_values=_FLAGS)
def _validate_checkpoint_frequency(values):
  return _check(
      values["save_checkpoints_steps"] is None or
      values["save_checkpoints_secs"] is None,
      "are mutually exclusive. Fix: give only one of them.")


# The rules across strategy, GPUs and --remote_cluster are the plan's
# (`harness.cli.plan`), so a JobConfig built in code gets them too.
