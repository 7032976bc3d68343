"""Refuses, before TensorFlow starts, a `harness.main` job that would fail.

    from harness.cli import preflight

    preflight.preflight(job, plan)   # ConfigError / CheckpointError

Checks what os.path can see of the job's model_dir (not writable, a
dangling or looping symbolic link on its path, a file where `export/`
goes, --mode=evaluate|predict with no checkpoint): the one its plan
names (`harness.cli.plan`, made by `harness.cli.flags.parse`). No
TensorFlow. The cases and messages: docs/ERRORS.md.
"""

import errno
import glob
import os

from harness import errors
from harness import plan as plan_lib
from harness.state import paths

__all__ = ["preflight", "existing_ancestor",
           "predictions_path", "PREDICTIONS_FILE"]

PREDICTIONS_FILE = "predictions.jsonl"


def existing_ancestor(path):
  """`path` made absolute, or its nearest folder above that exists."""
  existing = os.path.abspath(path)
  while not os.path.exists(existing) and os.path.dirname(existing) != existing:
    existing = os.path.dirname(existing)
  return existing


def _name_max(path):
  try:
    return os.pathconf(path, "PC_NAME_MAX")  # local-fs: preflight, local
  except (OSError, ValueError):
    return 255  # Linux's (and most file systems') limit.


def _check_name_lengths(model_dir):
  """A folder name longer than the file system allows ("File name too
  long" from deep inside TensorFlow otherwise)."""
  limit = _name_max(existing_ancestor(model_dir))
  for name in os.path.abspath(model_dir).split(os.sep):  # local-fs: preflight
    size = len(os.fsencode(name))
    if size > limit:
      raise errors.ConfigError(
          f"--model_dir={model_dir[:60]}...: its folder name "
          f"{name[:20]}... is {size} bytes long; this file system allows "
          f"{limit} bytes per name. Fix: shorten that folder name.")


def _check_symlinks(model_dir):
  """A folder of model_dir that is a symbolic link to nowhere (dangling)
  or to itself (a loop): os.path.exists says False and the folder above
  would be checked instead; TensorFlow fails later with a traceback."""
  path = os.sep
  for name in os.path.abspath(model_dir).split(os.sep):  # local-fs: preflight
    path = os.path.join(path, name)
    if not os.path.islink(path) or os.path.exists(path):  # local-fs: links
      continue
    try:
      os.stat(path)  # local-fs: preflight
      why = "cannot be followed"
    except OSError as e:
      why = (f"loops ({e.strerror})" if e.errno == errno.ELOOP else
             f"points to {os.readlink(path)}, which does not exist")
    raise errors.ConfigError(
        f"--model_dir={model_dir}: {path} is a symbolic link that {why}. "
        "Fix: point the link at an existing folder (or remove it), or pass "
        "another --model_dir.")


def _unwritable_reason(path):
  """Why folder `path` cannot be created and written, or None."""
  existing = existing_ancestor(path)
  if not os.path.isdir(existing):
    return f"{existing} is a file, not a folder"
  if not os.access(existing, os.W_OK | os.X_OK):
    return f"{existing} is not writable by this user (or is read-only)"
  return None


def predictions_path(job_config, model_dir):
  """Where --mode=predict writes: --predictions_file, else model_dir's
  `predictions.jsonl`, else (model_dir read-only) the current folder's.

  Raises:
    ConfigError: neither model_dir nor the current folder can be written.
  """
  if job_config.predictions_file:
    return job_config.predictions_file
  if not model_dir or paths.is_url(model_dir) or not _unwritable_reason(
      model_dir):
    return os.path.join(model_dir or "", PREDICTIONS_FILE)
  here = os.path.abspath(PREDICTIONS_FILE)  # local-fs: preflight
  if not _unwritable_reason(os.path.dirname(here)):
    return here
  raise errors.ConfigError(
      f"--mode=predict: neither --model_dir={model_dir} nor the current "
      f"folder {os.path.dirname(here)} can be written. Fix: pass "
      "--predictions_file=<a path in a writable folder>.")


def preflight(job_config, plan):
  """Refuses a job that would fail on its model_dir, before TF starts.

  Args:
    job_config: a `JobConfig`.
    plan: its `harness.plan.TaskPlan` (as `flags.parse` made it).

  Raises:
    ConfigError: model_dir (or its export/ folder) cannot be written.
    CheckpointError: --mode=evaluate or predict, and model_dir holds no
      checkpoint (tf.estimator would silently use untrained weights).
  """
  model_dir = plan.model_dir
  if job_config.dry_run or not model_dir or paths.is_url(model_dir):
    return  # A temporary folder, or a file system os.path cannot see.
  if plan.role == plan_lib.Role.PS:
    return  # A ps task never writes model_dir (it may not even mount it).
  _check_name_lengths(model_dir)
  _check_symlinks(model_dir)
  reason = _unwritable_reason(model_dir)
  if job_config.mode == "predict":
    reason = None  # It only reads model_dir; the output goes elsewhere.
    predictions_path(job_config, model_dir)
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
      glob.glob(os.path.join(glob.escape(model_dir),  # local-fs: not a URL
                             "*.index"))):
    raise errors.CheckpointError(
        f"--mode={job_config.mode}: --model_dir={model_dir} holds no "
        "checkpoint, so the model would run with untrained weights. Fix: "
        "train first (--mode=train or train_and_evaluate), or point "
        "--model_dir at the folder of a trained model.")
