"""The flags of `python -m harness.main`, checked all at once.

    from harness.cli import flags

    job = flags.parse(["harness.main", "--model_fn=linear",
                       "--input_fn=constant", "--strategy=MultiWorkerMirrored"],
                      environ={"TF_CONFIG": "..."})
    job.strategy                      # "collective"
    flags.parse(flags.to_argv(job))   # == job

`parse` needs no `absl.app`: it raises `harness.errors.FlagError` listing
every problem of the command line in absl's ``flag --x=y: why`` form (bad
types, values out of range, unknown flags, unknown `--params` keys, a bad
TF_CONFIG, GPUs this machine lacks), one a line. The flags live in a private
`FlagValues`, so they never clash with `absl.flags.FLAGS` (absl's own
`--verbosity`, for one). Checks that need the environment read the
`environ` and `gpu_count` passed in, so tests inject them.

Resolving `--model_fn` / `--input_fn` (and their `DEFAULT_PARAMS`) imports
their modules; this module itself imports no TensorFlow.
"""

import dataclasses
import difflib
import glob
import inspect
import json
import os
import re
import threading

from absl import flags

from harness import errors
from harness.cli import job as job_lib
from harness.cli import tensorboard_server
from harness.cluster import env_knobs
from harness.cluster import tf_config as cluster_lib
from harness.state import paths

__all__ = ["FLAG_NAMES", "parse", "to_argv", "help_text",
           "normalize_strategy", "visible_gpu_count"]

_FLAGS = flags.FlagValues()
_TB_DEFAULT_PORT = tensorboard_server.DEFAULT_PORT
# Flags whose value may be left out: the value a bare --name stands for.
_BARE_VALUES = {"tensorboard": str(_TB_DEFAULT_PORT)}
_LOCK = threading.Lock()
_D = job_lib.JobConfig()  # The defaults, shared by flags and JobConfig.

# ----------------------------------------------------- value parsers


_STRATEGY_SPELLINGS = {
    "mirrored": "mirrored", "mirror": "mirrored",
    "collective": "collective", "multiworkermirrored": "collective",
    "multiworker": "collective", "mwms": "collective",
    "collectiveallreduce": "collective",
    "parameterserver": "parameter_server", "ps": "parameter_server",
    "paramserver": "parameter_server",
    "centralstorage": "central_storage",
    "onedevice": "one_device",
    "default": "default", "none": "default", "local": "default",
}
_STRATEGY_PREFIXES = ("tfcompatv1distributeexperimental",
                      "tfcompatv1distribute", "tfdistributeexperimental",
                      "tfdistribute", "experimental")


def normalize_strategy(text):
  """Maps a strategy spelling people type to one of `job.STRATEGIES`.

  Case, '-', '_', '.', a `tf.distribute.` prefix and a `Strategy` suffix do
  not matter: "MultiWorkerMirroredStrategy", "multi-worker-mirrored" and
  "collective" all give "collective"; "ps" gives "parameter_server"; "none"
  gives "default".

  Raises:
    ValueError: the text names no known strategy (message lists them).
  """
  key = re.sub(r"[^a-z0-9]", "", str(text).lower())
  for prefix in _STRATEGY_PREFIXES:
    if key.startswith(prefix):
      key = key[len(prefix):]
      break
  for suffix in ("strategyv1", "strategyv2", "strategy"):
    if key.endswith(suffix) and key != suffix:
      key = key[:-len(suffix)]
      break
  if key in _STRATEGY_SPELLINGS:
    return _STRATEGY_SPELLINGS[key]
  close = difflib.get_close_matches(key, list(_STRATEGY_SPELLINGS), n=1)
  hint = f" Did you mean {_STRATEGY_SPELLINGS[close[0]]!r}?" if close else ""
  raise ValueError(
      f"unknown strategy {text!r}.{hint} Valid: "
      f"{', '.join(job_lib.STRATEGIES)} (also e.g. MultiWorkerMirrored, ps, "
      "none).")


class _StrategyParser(flags.ArgumentParser):

  def parse(self, argument):
    return normalize_strategy(argument)

  def flag_type(self):
    return "strategy"


def _parse_params_text(text):
  """`key=value,...` (values stay text) or a JSON object -> dict."""
  if isinstance(text, dict):
    return dict(text)
  text = (text or "").strip()
  if not text:
    return {}
  if text.startswith("{"):
    try:
      value = json.loads(text)
    except json.JSONDecodeError as e:
      raise ValueError(f"not valid JSON ({e.msg} at column {e.colno}).") from e
    if not isinstance(value, dict):
      raise ValueError("JSON --params must be an object.")
    return value
  result = {}
  for piece in filter(None, (p.strip() for p in text.split(","))):
    key, sep, value = piece.partition("=")
    key = key.strip()
    if not sep or not key:
      raise ValueError(
          f"{piece!r} is not key=value. Write --params=learning_rate=0.01,"
          "optimizer=adam, or JSON ('{\"units\": [64, 32]}') for values "
          "holding commas.")
    if key in result:
      raise ValueError(f"key {key!r} is given twice.")
    result[key] = value.strip()
  return result


class _ParamsParser(flags.ArgumentParser):

  def parse(self, argument):
    return _parse_params_text(argument)

  def flag_type(self):
    return "params"


class _RemoteClusterParser(flags.ArgumentParser):

  def parse(self, argument):
    if argument is None or isinstance(argument, dict):
      return argument
    try:
      return cluster_lib.parse_remote_cluster(argument, source="the cluster")
    except errors.ClusterConfigError as e:
      raise ValueError(str(e)) from None

  def flag_type(self):
    return "cluster"


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
    _ParamsParser(), "params", "", "Overrides of the model's and input's "
    "DEFAULT_PARAMS: key=value,... or a JSON object; values take the "
    "defaults' types.", flag_values=_FLAGS)
_DATA_DIR = flags.DEFINE_string(
    "data_dir", _D.data_dir, "Where the input_fn reads its data.",
    flag_values=_FLAGS)
# What to do, where.
_MODE = flags.DEFINE_enum(
    "mode", _D.mode, job_lib.MODES, "What to run.", flag_values=_FLAGS)
_MODEL_DIR = flags.DEFINE_string(
    "model_dir", _D.model_dir, "Checkpoints, summaries and exports. Default: "
    "TF_CONFIG's model_dir, else a new temporary directory (logged).",
    flag_values=_FLAGS)
# Devices and cluster.
_STRATEGY = flags.DEFINE(
    _StrategyParser(), "strategy", _D.strategy, "Distribution strategy: "
    + "|".join(job_lib.STRATEGIES) + " (spellings such as "
    "MultiWorkerMirroredStrategy or ps are accepted).", flag_values=_FLAGS)
_NUM_GPUS_PER_WORKER = _int(
    "num_gpus_per_worker", 0, "0 for CPU, or the GPUs per worker.",
    "GPUs (replicas) per worker; 0 trains on one CPU device.")
_CPU_STAND_IN = flags.DEFINE_bool(
    "cpu_stand_in", _D.cpu_stand_in, "Run --num_gpus_per_worker CPU devices "
    "in place of GPUs (for machines without GPUs).", flag_values=_FLAGS)
_REMOTE_CLUSTER = flags.DEFINE(
    _RemoteClusterParser(), "remote_cluster", None, "Train as a client of "
    "these servers: worker=h:p,h:p;ps=h:p or JSON.", flag_values=_FLAGS)
_REMOTE_CONNECT_TIMEOUT_SECS = _int(
    "remote_connect_timeout_secs", 1, "a positive number of seconds.",
    "With --remote_cluster: fail if a server does not answer (connect, "
    "device list) within this many seconds.")
_REMOTE_CLAIM_TIMEOUT_SECS = _int(
    "remote_claim_timeout_secs", 1, "a positive number of seconds.",
    "With --remote_cluster: this client's claim of the servers expires this "
    "long after its last renewal; a second client is refused meanwhile, and "
    "the servers restart once it expires.")
# One writer per model_dir (harness.state.lease).
_FORCE_TAKEOVER = flags.DEFINE_bool(
    "force_takeover", _D.force_takeover, "Train even while another live "
    "trainer holds model_dir's lease (it stops at its next refresh). A dead "
    "or stale holder's lease is taken over without this flag.",
    flag_values=_FLAGS)
_BIND_ADDRESS = flags.DEFINE_string(
    "bind_address", _D.bind_address, "Where this TF_CONFIG task's server "
    "listens. Default: its cluster address's host, which TensorFlow 2.21 "
    "cannot honour (it listens on every interface; a warning says so); '*' "
    "acknowledges all interfaces. One host is refused.", flag_values=_FLAGS)
flags.register_validator(
    "bind_address", lambda value: value in (None, "", "*", "0.0.0.0", "::")
    or _check(False, "TensorFlow 2.21 cannot listen on one address (it binds "
              "every interface). Fix: leave it out, or use '*'; restrict "
              "access with harness.launch's network namespace, a firewall or "
              "the k8s NetworkPolicy."), flag_values=_FLAGS)
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
# --steps_per_loop: its own block below (an integer or "auto").
# A train_op that never advances the global step (issue 19.4).
_MAX_RUNS_WITHOUT_PROGRESS = _int(
    "max_runs_without_progress", 1, "a positive number of session.run "
    "calls.", "Stop training with an error after this many session.run calls "
    "leave the global step unchanged.")
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
_EVAL_IDLE_TIMEOUT_SECS = _int(
    "eval_idle_timeout_secs", 1, "a positive number of seconds, or leave it "
    "out to wait as long as training may resume.", "The evaluator task gives "
    "up after this long without a new checkpoint (default: waits).")
# Evaluator polling and waiting for peers (defaults: harness.cluster.env_knobs).


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


_EVAL_POLL_SECS = _secs(
    "eval_poll_secs", "The evaluator task looks for a new checkpoint every "
    "this many seconds (--throttle_secs only spaces evaluations).")
_PEER_TIMEOUT_SECS = _secs(
    "peer_timeout_secs", "A training step of a multi-task job fails after "
    "this many seconds without its peers", env_knobs.PEER_TIMEOUT)
_RESTART_WAIT_SECS = _secs(
    "restart_wait_secs", "How long the evaluator and ps tasks wait for a "
    "preempted or failed chief to come back", env_knobs.RESTART_WAIT)
_EXPORTERS = flags.DEFINE_list(
    "exporters", list(_D.exporters), "SavedModel exporters to run after "
    "evaluations: comma list of " + ",".join(job_lib.EXPORTERS) + ".",
    flag_values=_FLAGS)
# TensorBoard (harness.cli.tensorboard_server).
_TENSORBOARD = flags.DEFINE_integer(
    "tensorboard", _D.tensorboard, "--tensorboard[=PORT]: serve model_dir "
    "with TensorBoard on 127.0.0.1:PORT while the job runs and print its URL"
    f"; a bare --tensorboard is port {_TB_DEFAULT_PORT}, 0 picks a free port."
    " Under a cluster, the chief starts it.", flag_values=_FLAGS)
_TENSORBOARD_KEEP = flags.DEFINE_bool(
    "tensorboard_keep", _D.tensorboard_keep, "Leave --tensorboard's server "
    "running after the job ends (prints its pid).", flag_values=_FLAGS)
# Run control.
_TF_RANDOM_SEED = flags.DEFINE_integer(
    "tf_random_seed", _D.tf_random_seed, "Graph-level random seed.",
    flag_values=_FLAGS)
_VERBOSITY = flags.DEFINE_enum(
    "verbosity", _D.verbosity, job_lib.VERBOSITIES, "quiet: results only; "
    "info: progress lines; debug: TensorFlow's own logs and tracebacks.",
    flag_values=_FLAGS)
_DRY_RUN = flags.DEFINE_bool(
    "dry_run", _D.dry_run, "Print the resolved configuration and the "
    "TF_CONFIG role, then exit 0.", flag_values=_FLAGS)

# steps_per_loop: K >= 1, or "auto" (K from the first steps' timing).


class _StepsPerLoopParser(flags.ArgumentParser):

  def parse(self, argument):
    if argument == "auto" or isinstance(argument, int):
      value = argument
    else:
      try:
        value = int(str(argument).strip())
      except ValueError:
        value = None
    if value != "auto" and (value is None or value < 1):
      raise ValueError(
          "must be an integer >= 1 or auto. Fix: --steps_per_loop=auto "
          "(K from the first steps' timing) or e.g. --steps_per_loop=1.")
    return value

  def flag_type(self):
    return "steps_per_loop"


_STEPS_PER_LOOP = flags.DEFINE(
    _StepsPerLoopParser(), "steps_per_loop", _D.steps_per_loop,
    "Training steps inside one session.run: an integer >= 1, or auto (K "
    "from the measured time of the first steps, bounded by the summary, "
    "logging and checkpoint cadence; 1 where a hook needs every step).",
    flag_values=_FLAGS)


FLAG_NAMES = job_lib.FLAG_NAMES
assert set(FLAG_NAMES) == set(_FLAGS), set(FLAG_NAMES) ^ set(_FLAGS)

# -------------------------------------------------------------- validators


for _name in ("model_dir", "data_dir"):
  flags.register_validator(
      _name, lambda value: value is None or _check(
          value.strip(), "is empty. Fix: give a path, or leave the flag out."),
      flag_values=_FLAGS)


@flags.validator("exporters", flag_values=_FLAGS)
def _validate_exporters(names):
  bad = [n for n in names if n not in job_lib.EXPORTERS]
  _check(not bad, f"unknown exporter(s) {bad}. Fix: a comma list of "
         f"{', '.join(job_lib.EXPORTERS)}.")
  return _check(len(set(names)) == len(names),
                "lists an exporter twice. Fix: name each once.")


@flags.validator("tensorboard", flag_values=_FLAGS)
def _validate_tensorboard_port(port):
  return port is None or _check(
      0 <= port <= 65535, "is not a TCP port (0..65535). Fix: --tensorboard "
      f"for port {_TB_DEFAULT_PORT}, or --tensorboard=0 for a free one.")


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


@flags.multi_flags_validator(["strategy", "num_gpus_per_worker"],
                             flag_values=_FLAGS)
def _validate_devices_for_strategy(values):
  strategy, gpus = values["strategy"], values["num_gpus_per_worker"]
  return _check(
      gpus <= 1 or strategy not in ("default", "one_device"),
      f"the {strategy} strategy trains on one device. Fix: "
      "--strategy=mirrored (one machine) or collective (several) to use "
      f"{gpus} devices, or --num_gpus_per_worker=1.")


@flags.multi_flags_validator(["remote_cluster", "strategy"],
                             flag_values=_FLAGS)
def _validate_remote_cluster(values):
  return _check(
      not values["remote_cluster"] or values["strategy"] != "default",
      "a remote cluster is driven through a strategy. Fix: add "
      "--strategy=parameter_server or --strategy=collective.")


# ------------------------------------------------------------------ parsing


def _scan(args):
  """Checks each flag argument alone, so that all bad ones are reported.

  Returns:
    (problems, clean_args, positional): clean_args hold only arguments
    whose flag exists and whose value parses, as absl will read them.
  """
  problems, clean, positional = [], [], []
  known = set(_FLAGS)
  i = 0
  while i < len(args):
    arg = args[i]
    i += 1
    if arg == "--":
      positional.extend(args[i:])
      break
    if not arg.startswith("-") or arg == "-":
      positional.append(arg)
      continue
    name, has_value, value = arg.lstrip("-").partition("=")
    if name == "flagfile":
      clean.append(arg)
      continue
    if name not in known:
      base = name[2:] if name.startswith("no") else None
      if base in known and _FLAGS[base].boolean and not has_value:
        clean.append(arg)
        continue
      close = difflib.get_close_matches(name, sorted(known), n=2)
      hint = f" Did you mean {' or '.join('--' + c for c in close)}?" if (
          close) else ""
      problems.append(f"flag --{name}: unknown flag.{hint} (--help lists "
                      "them.)")
      continue
    flag = _FLAGS[name]
    if not has_value and name in _BARE_VALUES:
      has_value, value = True, _BARE_VALUES[name]
    if not has_value:
      if flag.boolean:
        clean.append(arg)
        continue
      if i >= len(args):
        problems.append(f"flag --{name}: needs a value, e.g. --{name}=...")
        continue
      value = args[i]
      i += 1
    try:
      flag.parser.parse(value)
    except (ValueError, TypeError) as e:
      hint = (f" Fix: give a whole number, e.g. --{name}=100." if
              flag.flag_type() == "int" else "")
      problems.append(f"flag --{name}={value}: {e}{hint}")
      continue
    clean.append(f"--{name}={value}")
  return problems, clean, positional


def _flag_names_in(problems):
  return {m for p in problems for m in re.findall(r"(\w+)=", p.split(":")[0])}


def _coerce(key, raw, default):
  """`raw` (text from key=value, or a JSON value) as `default`'s type."""
  kind = type(default)
  if isinstance(raw, str) and kind is not str and default is not None:
    if kind is bool:
      lowered = raw.lower()
      if lowered in ("true", "1", "yes", "on"):
        return True
      if lowered in ("false", "0", "no", "off"):
        return False
      raise ValueError(f"{key}={raw!r} is not a bool (true/false)")
    if kind in (int, float):
      try:
        return kind(raw)
      except ValueError:
        raise ValueError(f"{key}={raw!r} is not {kind.__name__} (the type "
                         f"of its default {default!r})") from None
    try:
      raw = json.loads(raw)
    except json.JSONDecodeError:
      raise ValueError(f"{key}={raw!r} is not JSON for a {kind.__name__} "
                       f"like its default {default!r}") from None
  if default is None:
    if isinstance(raw, str):
      try:
        return json.loads(raw)
      except json.JSONDecodeError:
        return raw
    return raw
  if kind is float and isinstance(raw, int) and not isinstance(raw, bool):
    return float(raw)
  if kind in (list, tuple) and isinstance(raw, (list, tuple)):
    return kind(raw)
  if isinstance(raw, bool) != (kind is bool) or not isinstance(raw, kind):
    raise ValueError(f"{key}={raw!r} is a {type(raw).__name__}, but its "
                     f"default {default!r} is a {kind.__name__}")
  return raw


def _resolve_names(values, problems, bad):
  """Resolves model/input names; coerces --params; fills batch_size."""
  # pylint: disable=g-import-not-at-top
  from harness.cli import registry
  defaults = {}
  for kind, resolve, default_params in (
      ("model_fn", registry.resolve_model_fn, registry.model_default_params),
      ("input_fn", registry.resolve_input_fn, registry.input_default_params)):
    if kind in bad:
      return
    try:
      fn = resolve(values[kind])
      defaults[kind] = default_params(values[kind])
    except errors.HarnessError as e:
      problems.append(f"flag --{kind}={values[kind]}: {e}")
      return
    if kind == "input_fn" and values["batch_size"] is None:
      values["batch_size"] = getattr(inspect.getmodule(fn),
                                     "DEFAULT_BATCH_SIZE", None)
  if "params" in bad:
    return
  valid = dict(defaults["input_fn"], **defaults["model_fn"])
  shown = _show_params(values["params"])
  coerced = {}
  for key, raw in values["params"].items():
    if key not in valid:
      problems.append(
          f"flag --params={shown}: unknown key {key!r}. Valid keys "
          f"(model_fn {values['model_fn']!r}, input_fn "
          f"{values['input_fn']!r}): {', '.join(sorted(valid)) or 'none'}.")
      continue
    try:
      coerced[key] = _coerce(key, raw, valid[key])
    except ValueError as e:
      problems.append(f"flag --params={shown}: {e}.")
  values["params"] = coerced


def visible_gpu_count(environ):
  """GPUs this machine shows, without TensorFlow: /dev/nvidiaN files,
  limited by CUDA_VISIBLE_DEVICES in `environ`."""
  count = len([p for p in glob.glob("/dev/nvidia*")
               if re.fullmatch(r"/dev/nvidia\d+", p)])
  visible = environ.get("CUDA_VISIBLE_DEVICES")
  if visible is not None:
    entries = []
    for entry in visible.split(","):
      if entry.strip() in ("", "-1"):
        break
      entries.append(entry)
    count = min(count, len(entries))
  return count


def parse(argv, *, environ=None, gpu_count=None):
  """Parses and checks a harness.main command line into a `JobConfig`.

  Args:
    argv: the arguments; a first element not starting with "-" is the
      program name (as in `sys.argv`) and is skipped.
    environ: mapping read for TF_CONFIG and CUDA_VISIBLE_DEVICES (default
      `os.environ`).
    gpu_count: callable returning the GPUs this machine has (default
      `visible_gpu_count(environ)`).

  Returns:
    A `JobConfig`; its `cluster_info` holds TF_CONFIG as read here (None:
    no TF_CONFIG), so nothing after this reads TF_CONFIG again.

  Raises:
    FlagError: listing every problem found, one a line.
  """
  environ = os.environ if environ is None else environ
  if gpu_count is None:
    gpu_count = lambda: visible_gpu_count(environ)
  argv = list(argv)
  if argv and not argv[0].startswith("-"):
    argv = argv[1:]
  with _LOCK:
    for name in FLAG_NAMES:  # Quietly back to the defaults (unlike
      _FLAGS[name].unparse()  # FlagValues.unparse_flags, which logs).
    problems, clean, positional = _scan(argv)
    try:
      _FLAGS(["harness.main"] + clean)
    except flags.Error as e:
      problems.extend(str(e).split("\n"))
    _FLAGS.mark_as_parsed()
    values = {name: _FLAGS[name].value for name in FLAG_NAMES}
  if positional:
    problems.append(f"unexpected arguments {positional}: harness.main takes "
                    "flags only (--name=value).")
  _resolve_names(values, problems, _flag_names_in(problems))
  values["exporters"] = tuple(values["exporters"])
  # The binary's edge: --model_dir normalised once (~, relative -> absolute).
  values["model_dir"] = paths.normalize_model_dir(values["model_dir"])
  for name in ("max_steps", "eval_steps"):  # 0 means "until the input ends".
    if values[name] == 0:
      values[name] = None
  bad = _flag_names_in(problems) & set(FLAG_NAMES)
  for name in bad:  # Checked further as if not given.
    values[name] = getattr(_D, name)
  try:  # TF_CONFIG, parsed once per process: the job carries it down.
    info = cluster_lib.from_environ(environ)
  except errors.ClusterConfigError as e:
    problems.append(str(e))
    info = None
  job = job_lib.JobConfig(**values, cluster_info=info)
  problems += job_lib.check_environment(job, info, gpu_count=gpu_count,
                                        skip=bad)
  if problems:
    raise errors.FlagError(
        f"{len(problems)} problem(s) with the flags of harness.main:\n  "
        + "\n  ".join(p.replace("\n", "\n    ") for p in problems)
        + "\nRun `python -m harness.main --help` for every flag.")
  return job


# --------------------------------------------------------------- rendering


def _show_params(params):
  if all(isinstance(v, (str, int, float)) and not re.search(r"[,={}\s]", str(v))
         for v in params.values()):
    return ",".join(f"{k}={_flag_text(v)}" for k, v in params.items())
  return json.dumps(params, sort_keys=True)


def _remote_text(remote_cluster):
  return ";".join(f"{j}={','.join(a)}" for j, a in remote_cluster.items())


def _flag_text(value):
  if isinstance(value, bool):
    return "true" if value else "false"
  return repr(value) if isinstance(value, float) else str(value)


def to_argv(job):
  """The flags that `parse` turns back into `job` (non-default ones only).

  Args:
    job: a `JobConfig`.

  Returns:
    A list of "--name=value" strings (no program name), in `FLAG_NAMES`
    order.
  """
  argv = []
  for name in FLAG_NAMES:
    value = getattr(job, name)
    default = getattr(_D, name)
    if value is None and name in ("max_steps", "eval_steps"):
      value = 0
    if value == default or value is None:
      continue
    if name == "params":
      text = _show_params(value) if value else ""
    elif name == "remote_cluster":
      text = _remote_text(value)
    elif name == "exporters":
      text = ",".join(value)
    elif isinstance(value, bool):
      argv.append(f"--{name}" if value else f"--no{name}")
      continue
    else:
      text = _flag_text(value)
    argv.append(f"--{name}={text}")
  return argv


def help_text():
  """Usage and every flag with its help and default."""
  return ("Usage: python -m harness.main [--flag=value ...]\n\n"
          "Trains, evaluates, predicts with or exports a model_fn.\n\n"
          + _FLAGS.get_help(include_special_flags=False))
