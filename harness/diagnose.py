"""Why a `harness.main` job cannot run, or failed, in one message.

Two jobs for the binary (`harness.main`): `preflight` refuses, before
TensorFlow starts, a job that would fail on its model_dir (not writable, a
file where `export/` goes, evaluate/predict with no checkpoint); `explain`
turns an exception that escaped `job.run_job` into (label, one-line message)
when it is the user's to fix: a TensorFlow error while running the graph, a
checkpoint that does not fit the model, an exception raised in the user's
own model_fn / input_fn (named by file and line). Anything else is a harness
bug and keeps its traceback. The cases and messages: docs/ERRORS.md.
"""

import glob
import os
import re
import sys

from harness import cluster as cluster_lib
from harness import errors

__all__ = ["model_dir_of", "preflight", "explain"]


# ------------------------------------------- checks before the job runs


def model_dir_of(job_config, environ):
  """--model_dir, else TF_CONFIG's; None when a temporary one is made."""
  if job_config.model_dir:
    return job_config.model_dir
  try:
    info = cluster_lib.from_environ(environ)
  except errors.ClusterConfigError:
    return None
  return info.model_dir if info is not None else None


def _unwritable_reason(path):
  """Why folder `path` cannot be created and written, or None."""
  existing = os.path.abspath(path)
  while not os.path.exists(existing) and os.path.dirname(existing) != existing:
    existing = os.path.dirname(existing)
  if not os.path.isdir(existing):
    return f"{existing} is a file, not a folder"
  if not os.access(existing, os.W_OK | os.X_OK):
    return f"{existing} is not writable by this user (or is read-only)"
  return None


def preflight(job_config, environ):
  """Refuses a job that would fail on its model_dir, before TF starts.

  Raises:
    ConfigError: model_dir (or its export/ folder) cannot be written.
    CheckpointError: --mode=evaluate or predict, and model_dir holds no
      checkpoint (tf.estimator would silently use untrained weights).
  """
  model_dir = model_dir_of(job_config, environ)
  if job_config.dry_run or not model_dir or "://" in model_dir:
    return  # A temporary folder, or a file system os.path cannot see.
  info = cluster_lib.from_environ(environ)  # Parsed by flags.parse already.
  if info is not None and info.task_type == cluster_lib.PS:
    return  # A ps task never writes model_dir (it may not even mount it).
  reason = _unwritable_reason(model_dir)
  if reason:
    raise errors.ConfigError(
        f"--model_dir={model_dir} cannot be created or written: {reason}. "
        "Fix: pass a --model_dir in a writable folder.")
  export_dir = os.path.join(model_dir, "export")
  if (job_config.mode == "export" or job_config.exporters) and (
      os.path.exists(export_dir) and not os.path.isdir(export_dir)):
    raise errors.ConfigError(
        f"--model_dir={model_dir}: SavedModels are written under "
        f"{export_dir}/, but {export_dir} is a file. Fix: move that file "
        "away, or pass another --model_dir.")
  if job_config.mode in ("evaluate", "predict") and not (
      os.path.isfile(os.path.join(model_dir, "checkpoint")) or
      glob.glob(os.path.join(glob.escape(model_dir), "*.index"))):
    raise errors.CheckpointError(
        f"--mode={job_config.mode}: --model_dir={model_dir} holds no "
        "checkpoint, so the model would run with untrained weights. Fix: "
        "train first (--mode=train or train_and_evaluate), or point "
        "--model_dir at the folder of a trained model.")


# ------------------------------------------ errors that escape run_job


def _user_frame(error):
  """(filename, line, function, role) of the user's code that raised.

  The innermost frame of the traceback outside the standard library and
  site-packages, when it is not in harness; `role` says how harness called
  it: "the model_fn", "the input_fn" or "your code". None when there is no
  such frame (the error is harness's own).
  """
  # pylint: disable=g-import-not-at-top
  import sysconfig
  import traceback as traceback_lib
  # pylint: enable=g-import-not-at-top
  harness_dir = os.path.dirname(os.path.abspath(errors.__file__)) + os.sep
  library_dirs = tuple(os.path.realpath(sysconfig.get_paths()[key]) + os.sep
                       for key in ("stdlib", "purelib", "platlib"))
  found, role = None, "your code"
  for frame in traceback_lib.extract_tb(error.__traceback__):
    path = os.path.abspath(frame.filename)
    if path.startswith(harness_dir):
      if frame.name in ("call_model_fn", "call_input_fn"):
        role = "the " + frame.name[len("call_"):]
      found = None  # Raised further in by harness itself: a bug.
      continue
    if frame.filename.startswith("<") or os.path.realpath(path).startswith(
        library_dirs):
      continue
    found = (os.path.relpath(path) if path.startswith(os.getcwd() + os.sep)
             else path, frame.lineno, frame.name)
  return None if found is None else found + (role,)


def _first_lines(text, limit=2):
  lines = [line.strip() for line in str(text).splitlines() if line.strip()]
  return " ".join(lines[:limit])


def _op_error_chain(error, tf):
  """The TensorFlow errors in `error`'s cause/context chain, outermost first."""
  chain = []
  while error is not None and len(chain) < 20:
    if isinstance(error, tf.errors.OpError):
      chain.append(error)
    error = error.__cause__ or error.__context__
  return chain


def _op_error_text(message):
  """TensorFlow's error text without its stack listings: "why (op name)"."""
  lines, node = [], None
  for line in message.splitlines():
    if line.startswith("Original stack trace"):
      break
    found = re.search(r"\{\{node ([^}]+)\}\}", line)
    if found:
      node = node or found.group(1)
    if not line.strip() or line[0].isspace() or line.startswith((
        "Graph execution error", "Detected at node", "Node: ")):
      continue
    lines.append(line.strip())
  text = " ".join(lines[:2]) or _first_lines(message)
  return f"{text} (op {node})" if node else text


def _checkpoint_mismatch(detail, model_dir):
  """The message for a failed restore of `model_dir`'s checkpoint."""
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  latest = tf.train.latest_checkpoint(model_dir) if model_dir else None
  try:
    names = [name for name, _ in tf.train.list_variables(latest)]
  except (tf.errors.OpError, ValueError, TypeError):
    names = []
  shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
  holds = f" (it holds {len(names)} variables: {shown})" if names else ""
  return (
      f"the checkpoint {latest or 'in --model_dir=' + str(model_dir)} does "
      f"not fit this model: {detail}{holds}. It was written by another "
      "model_fn or other --params; it was left untouched. Fix: train this "
      "model in a new --model_dir, or run the model_fn and params that "
      "wrote it.")


def explain(error, model_dir):
  """(label, message) saying what went wrong; (None, None): a harness bug.

  Args:
    error: an exception that escaped `job.run_job`.
    model_dir: the job's model_dir (None: a temporary one).
  """
  tf = sys.modules.get("tensorflow")
  if tf is not None and isinstance(error, tf.errors.OpError):
    chain = _op_error_chain(error, tf)
    name, text = type(chain[-1]).__name__, _op_error_text(chain[-1].message)
    if any("Restoring from checkpoint failed" in e.message or
           "not found in checkpoint" in e.message for e in chain):
      return "CheckpointError", _checkpoint_mismatch(text, model_dir)
    if isinstance(error, tf.errors.InvalidArgumentError):
      fix = ("make the features and labels the input_fn yields match the "
             "shapes and dtypes the model_fn expects")
    else:
      fix = ("check the path, folder or server it names (--model_dir and "
             "its export/ and eval/ folders must be writable folders)")
    return name, (
        f"{text} (TensorFlow, while running the job). "
        f"Fix: {fix}; --verbosity=debug shows TensorFlow's full message.")
  where = _user_frame(error)
  if where is not None:
    filename, line, function, role = where
    return type(error).__name__, (
        f"{_first_lines(error, 3)} (raised in {role} at {filename}:"
        f"{line}, in {function}). Fix: correct that code; --verbosity=debug "
        "prints the full traceback.")
  if isinstance(error, OSError) and error.filename:
    return type(error).__name__, (
        f"cannot use {error.filename!r}: "
        f"{error.strerror}. Fix: check that path (--model_dir must be a "
        "writable folder).")
  return None, None
