"""The flags of `python -m harness.main`, checked all at once.

    from harness.cli import flags

    job, plan = flags.parse(["harness.main", "--model_fn=linear",
                             "--input_fn=constant",
                             "--strategy=MultiWorkerMirrored"],
                            environ={"TF_CONFIG": "..."})
    job.strategy                          # "collective"
    plan.task_label                       # "worker/1": TF_CONFIG read once
    flags.parse(flags.to_argv(job)).job   # == job

`parse` needs no `absl.app`: it raises `harness.errors.FlagError` listing
every problem of the command line in absl's ``flag --x=y: why`` form (bad
types, values out of range, unknown flags, unknown `--params` keys, a bad
TF_CONFIG, GPUs this machine lacks), one a line. The flags and their
validators are defined in `harness.cli.flag_definitions` (their value
parsers in `harness.cli.flag_parsers`), in a private `FlagValues`, so they
never clash with `absl.flags.FLAGS` (absl's own `--verbosity`, for one).
Checks that need the environment read the `environ` and `gpu_count` passed
in, so tests inject them.

Resolving `--model_fn` / `--input_fn` (and their `DEFAULT_PARAMS`) imports
their modules; this module itself imports no TensorFlow.
"""

import difflib
import glob
import inspect
import json
import os
import re
import threading
import typing

from absl import flags

from harness import cluster as cluster_lib
from harness import errors
from harness import plan as plan_lib
from harness.cli import binary_flags
from harness.cli import flag_definitions
from harness.cli import job_config
from harness.cli import plan as job_plan
from harness.cli import registry
from harness.state import paths

__all__ = ["ParsedJob", "parse", "to_argv", "help_text", "visible_gpu_count"]

_FLAGS = flag_definitions.FLAG_VALUES
_BARE_VALUES = flag_definitions.BARE_VALUES
_LOCK = threading.Lock()


class ParsedJob(typing.NamedTuple):
  """What `parse` returns: the `JobConfig` and its `TaskPlan`."""
  job: job_config.JobConfig
  plan: plan_lib.TaskPlan


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
  defaults = {}
  for kind, resolve, default_params in (
      ("model_fn", registry.resolve_model_fn, registry.model_default_params),
      ("input_fn", registry.resolve_input_fn, registry.input_default_params)):
    if kind in bad:
      continue
    try:
      fn = resolve(values[kind])
      defaults[kind] = default_params(values[kind])
    except errors.HarnessError as e:  # Reported; the other is checked too.
      problems.append(f"flag --{kind}={values[kind]}: {e}")
      continue
    if kind == "input_fn" and values["batch_size"] is None:
      values["batch_size"] = getattr(inspect.getmodule(fn),
                                     "DEFAULT_BATCH_SIZE", None)
  if "params" in bad or len(defaults) < 2:  # Keys checked against both.
    return
  valid = dict(defaults["input_fn"], **defaults["model_fn"])
  shown = _show_params(values["params"])
  if len(shown) > _PARAMS_SHOWN_CHARS:  # 1000 keys: not 1000 x the value.
    shown = shown[:_PARAMS_SHOWN_CHARS - 3] + "..."
  unknown = [key for key in values["params"] if key not in valid]
  if unknown:
    listed = ", ".join(repr(k) for k in unknown[:_UNKNOWN_KEYS_LISTED])
    more = len(unknown) - _UNKNOWN_KEYS_LISTED
    problems.append(
        f"flag --params={shown}: unknown key{'s' if len(unknown) > 1 else ''} "
        f"{listed}{f' (and {more} more)' if more > 0 else ''}. Valid keys "
        f"(model_fn {values['model_fn']!r}, input_fn "
        f"{values['input_fn']!r}): {', '.join(sorted(valid)) or 'none'}.")
  coerced = {}
  for key, raw in values["params"].items():
    if key in unknown:
      continue
    try:
      coerced[key] = _coerce(key, raw, valid[key])
    except ValueError as e:
      problems.append(f"flag --params={shown}: {e}.")
  values["params"] = coerced


def visible_gpu_count(environ):
  """GPUs this machine shows, without TensorFlow: /dev/nvidiaN files,
  limited by CUDA_VISIBLE_DEVICES in `environ`."""
  count = len([p for p in glob.glob("/dev/nvidia*")  # local-fs: /dev
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


def _flag_values(argv):
  """Reads `argv` into {flag name: value}; returns it and the problems."""
  argv = list(argv)
  if argv and not argv[0].startswith("-"):
    argv = argv[1:]
  with _LOCK:
    for name in job_config.FLAG_NAMES:  # Quietly back to the defaults (unlike
      _FLAGS[name].unparse()  # FlagValues.unparse_flags, which logs).
    problems, clean, positional = _scan(argv)
    try:
      _FLAGS(["harness.main"] + clean)
    except flags.Error as e:
      problems.extend(str(e).split("\n"))
    _FLAGS.mark_as_parsed()
    values = {name: _FLAGS[name].value for name in job_config.FLAG_NAMES}
  if positional:
    problems.append(f"unexpected arguments {positional}: harness.main takes "
                    "flags only (--name=value).")
  return values, problems


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
    A `ParsedJob`: the `JobConfig`, and its plan (`harness.cli.plan.
    TaskPlan`), which holds TF_CONFIG as read here and the facts decided
    from it; pass it on (`run_job(job, plan=plan)`) so TF_CONFIG is not
    read again.

  Raises:
    FlagError: listing every problem found, one a line.
  """
  environ = os.environ if environ is None else environ
  if gpu_count is None:
    gpu_count = lambda: visible_gpu_count(environ)
  values, problems = _flag_values(argv)
  _resolve_names(values, problems, _flag_names_in(problems))
  values["exporters"] = tuple(values["exporters"])
  # The binary's edge: --model_dir normalised once (~, relative -> absolute).
  values["model_dir"] = paths.normalize_model_dir(values["model_dir"])
  for name in ("max_steps", "eval_steps"):  # 0 means "until the input ends".
    if values[name] == 0:
      values[name] = None
  bad = _flag_names_in(problems) & set(job_config.FLAG_NAMES)
  for name in bad:  # Checked further as if not given.
    values[name] = getattr(job_config.DEFAULTS, name)
  try:  # TF_CONFIG, parsed once per process: the job carries it down.
    info = cluster_lib.from_environ(environ)
  except errors.ClusterConfigError as e:
    problems.append(str(e))
    info = None
  job = job_config.JobConfig(**values)
  # The door: the job's plan, every rule across flags, TF_CONFIG and this
  # machine checked here, once (run_job uses it as it is).
  plan, more = job_plan.plan_with_problems(job, info, environ=environ,
                                           gpu_count=gpu_count, skip=bad)
  problems += more
  if problems:
    raise errors.FlagError(
        f"{len(problems)} problem(s) with the flags of harness.main:\n  "
        + "\n  ".join(p.replace("\n", "\n    ") for p in problems)
        + "\nRun `python -m harness.main --help` for every flag.")
  return ParsedJob(job, plan)


# --------------------------------------------------------------- rendering


# How much of a long --params value a problem line repeats, and how many
# unknown keys it names.
_PARAMS_SHOWN_CHARS = 80
_UNKNOWN_KEYS_LISTED = 10


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
    A list of "--name=value" strings (no program name), in `job_config.FLAG_NAMES`
    order.
  """
  argv = []
  for name in job_config.FLAG_NAMES:
    value = getattr(job, name)
    default = getattr(job_config.DEFAULTS, name)
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
          + "flags:\n" + binary_flags.flag_help(_FLAGS, list(_FLAGS)))
