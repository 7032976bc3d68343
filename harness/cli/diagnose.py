"""Why a `harness.main` job cannot run, or failed, in one message.

Before a job runs, `harness.cli.preflight` refuses what would fail on its
model_dir; after, `explain` here turns an exception that escaped
`job.run_job` into (label, one-line message) when it is the user's to fix: a TensorFlow error while running the graph, a
checkpoint that does not fit the model, an exception raised in the user's
own model_fn / input_fn (named by file and line). Anything else is a harness
bug and keeps its traceback. The cases and messages: docs/ERRORS.md.
"""

import errno
import math
import os
import re
import sys
import sysconfig
import traceback as traceback_lib

from harness import errors
from harness.cli import preflight as preflight_lib

__all__ = ["explain"]


# ------------------------------------------ errors that escape run_job


def _user_frame(error):
  """(filename, line, function, role) of the user's code that raised.

  The innermost frame of the traceback outside the standard library and
  site-packages, when it is not in harness; `role` says how harness called
  it: "the model_fn", "the input_fn" or "your code". None when there is no
  such frame (the error is harness's own).
  """
  harness_dir = os.path.dirname(os.path.abspath(errors.__file__)) + os.sep
  library_dirs = _library_dirs()
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
    found = (_shown_path(path), frame.lineno, frame.name)
  return None if found is None else found + (role,)


def _first_lines(text, limit=2):
  lines = [line.strip() for line in str(text).splitlines() if line.strip()]
  return " ".join(lines[:limit])


def _chained(error):
  """`error` and the exceptions it chains (cause, else context), once each."""
  seen = set()
  while error is not None and id(error) not in seen:
    seen.add(id(error))
    yield error
    error = error.__cause__ or error.__context__


def _op_error_chain(error, tf):
  """The TensorFlow errors in `error`'s cause/context chain, outermost first."""
  return [e for e in _chained(error) if isinstance(e, tf.errors.OpError)]


def _op_error_text(message):
  """TensorFlow's error text without its stack listings: "why (op name)"."""
  lines, node = [], None
  for line in message.splitlines():
    if line.startswith(("Original stack trace",
                        "Traceback (most recent call last)")):
      break
    found = re.search(r"\{\{node ([^}]+)\}\}", line)
    if found:
      node = node or found.group(1)
    if not line.strip() or line[0].isspace() or line.startswith((
        "Graph execution error", "Detected at node", "Node: ")):
      continue
    # TensorFlow appends an out-of-memory hint to every
    # ResourceExhaustedError, a full disk included.
    lines.append(re.sub(r"\s*Hint: If you want to see a list of allocated "
                        r"tensors.*$", "", line.strip()))
  text = " ".join(lines[:2]) or _first_lines(message)
  return f"{text} (op {node})" if node else text


def _checkpoint_mismatch(detail, model_dir):
  """The message for a failed restore of `model_dir`'s checkpoint."""
  from harness._tf import tf  # lazy: TF-free preflight  # pylint: disable=g-import-not-at-top
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


def explain(error, model_dir, *, params=None):
  """(label, message) saying what went wrong; (None, None): a harness bug.

  Args:
    error: an exception that escaped `job.run_job`.
    model_dir: the job's model_dir (None: a temporary one).
    params: the model's params (to name a NaN learning rate), or None.
  """
  tf = sys.modules.get("tensorflow")
  if model_dir and _names_path(error, model_dir) and (
      _model_dir_gone(model_dir, tf) or _saver_found_it_gone(error)):
    return type(error).__name__, _model_dir_deleted(error, model_dir)
  if tf is not None and isinstance(
      error, tf.compat.v1.train.NanLossDuringTrainingError):
    return type(error).__name__, _nan_loss(error, params)
  if _errno_of(error, tf) == errno.ENOSPC:
    return type(error).__name__, _disk_full(error, model_dir, tf)
  if tf is not None and isinstance(error, tf.errors.OpError):
    return _explain_op_error(error, model_dir, tf)
  where = _user_frame(error)
  if where is not None:
    filename, line, function, role = where
    return type(error).__name__, (
        f"{_first_lines(error, 3)} (raised in {role} at {filename}:"
        f"{line}, in {function}). Fix: correct that code; --verbosity=debug "
        "prints the full traceback.")
  if isinstance(error, OSError) and error.filename:
    return type(error).__name__, _unwritable(
        error.filename, error.strerror, model_dir)
  return None, None


def _model_dir_gone(model_dir, tf):
  """Whether the job's model_dir no longer exists (deleted while it ran)."""
  if not model_dir or tf is None:
    return False
  try:
    return not tf.io.gfile.exists(model_dir)
  except tf.errors.OpError:  # Its file system cannot say: not known gone.
    return False


def _saver_found_it_gone(error):
  """Whether the Saver refused a save for want of model_dir (its "Parent
  directory of ... doesn't exist" ValueError): deleted, even where a task's
  end marks made the folder again before this was asked."""
  return any(isinstance(e, ValueError) and str(e).startswith(
      "Parent directory of") and "doesn't exist, can't save" in str(e)
             for e in _chained(error))


def _names_path(error, path):
  """Whether `error` (or an exception it chains) names `path`: a failure on
  model_dir's files, not the user's own error while model_dir was still to
  be made (it is made when training starts)."""
  return any(path in str(e) for e in _chained(error))


def _model_dir_deleted(error, model_dir):
  return errors.ModelDirDeletedError.message(model_dir,
                                             _first_lines(error, 1))


def _explain_op_error(error, model_dir, tf):
  """(label, message) for a TensorFlow error raised while the graph ran."""
  chain = _op_error_chain(error, tf)
  inner = chain[-1]
  name, text = type(inner).__name__, _op_error_text(inner.message)
  if any("Restoring from checkpoint failed" in e.message or
         "not found in checkpoint" in e.message for e in chain):
    return "CheckpointError", _checkpoint_mismatch(text, model_dir)
  raised = _py_function_error(inner.message)
  if raised is not None:  # The user's Python code, run by tf.py_function.
    kind, first_line, where = raised
    role = ("the input_fn's tf.data pipeline" if _in_input_pipeline(
        inner.message) else "a tf.py_function of the model_fn")
    place = (f" at {where[0]}:{where[1]}, in {where[2]}" if where else "")
    return kind, (
        f"{first_line} (raised in {role}{place}). "
        "Fix: correct that code; --verbosity=debug prints TensorFlow's full "
        "message.")
  if isinstance(inner, tf.errors.PermissionDeniedError) or (
      "Read-only file system" in inner.message):
    return name, _unwritable(_path_in(inner.message), text, model_dir)
  from harness.spec import checks as spec_checks  # lazy: TF-free preflight  # pylint: disable=g-import-not-at-top
  if spec_checks.LOSS_TO_SCALAR_OP in inner.message:  # Not the input's fault.
    return "ModelFnError", (
        f"the model_fn's loss is not a scalar: {text}. Fix: return one "
        "value as EstimatorSpec(loss=...), e.g. "
        "tf.reduce_mean(per_example_loss).")
  if _in_input_pipeline(inner.message):
    fix = ("check the input data and the input_fn's tf.data "
           "transformations (run the input_fn alone to see its first "
           "batch)")
    where = "while reading the input (the input_fn's tf.data pipeline)"
  elif isinstance(inner, tf.errors.InvalidArgumentError):
    fix = ("make the features and labels the input_fn yields match the "
           "shapes and dtypes the model_fn expects")
    where = "while running the job"
  elif isinstance(inner, tf.errors.NotFoundError):
    fix = "check the file or folder it names"
    where = "while running the job"
  else:  # TensorFlow's reason starts the line: nothing is "above" it.
    op = re.search(r"\(op (\w+)\)", text)
    fix = (f"TensorFlow's reason starts this line; check the dtypes and "
           f"shapes the model_fn's {op[1]} op gets (a loss must be a float)"
           if op else "TensorFlow's reason starts this line; correct the "
           "model_fn or input_fn code it points at")
    where = "while running the job"
  return name, (
      f"{text} (TensorFlow, {where}). "
      f"Fix: {fix}; --verbosity=debug shows TensorFlow's full message.")


# ------------------------------------------------ what each failure means


_PY_FRAME_RE = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_EXCEPTION_LINE_RE = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)): ?(.*)$")


def _py_function_error(message):
  """(type, first line, (file, line, function) or None) of the Python
  exception a tf.py_function raised, read from TensorFlow's message (which
  embeds the traceback); None when the message holds none."""
  marker = "Traceback (most recent call last):"
  if marker not in message:
    return None
  body = message[message.index(marker) + len(marker):]
  library = _library_dirs()
  where = None
  kind = first_line = None
  for line in body.splitlines():
    frame = _PY_FRAME_RE.match(line)
    if frame:
      path = os.path.abspath(frame.group(1))
      if not os.path.realpath(path).startswith(library):
        where = (_shown_path(path), int(frame.group(2)), frame.group(3))
      continue
    found = _EXCEPTION_LINE_RE.match(line.strip())
    if found and kind is None and not line.startswith(" "):
      kind = found.group(1).rpartition(".")[2]
      first_line = found.group(2) or kind
  if kind is None:
    return None
  return kind, first_line, where


def _in_input_pipeline(message):
  return ("Iterator::" in message or "IteratorGetNext" in message or
          "user-defined function passed to" in message)


def _library_dirs():
  return tuple(os.path.realpath(sysconfig.get_paths()[key]) + os.sep
               for key in ("stdlib", "purelib", "platlib"))


def _shown_path(path):
  return (os.path.relpath(path) if path.startswith(os.getcwd() + os.sep)
          else path)


def _path_in(message):
  """The first absolute path in a TensorFlow message, or None."""
  found = re.search(r"(?:^|[\s'\"(])(/[^\s;:'\"]+)", message)
  return found.group(1).rstrip(".,") if found else None


def _errno_of(error, tf):
  """The OS errno of `error` (an OSError, or a TensorFlow error saying
  "No space left on device"), looking through its causes; else None."""
  for e in _chained(error):
    if isinstance(e, OSError) and e.errno:
      return e.errno
    if tf is not None and isinstance(e, tf.errors.OpError) and (
        "No space left on device" in e.message):
      return errno.ENOSPC
  return None


def _mount_point(path):
  path = preflight_lib.existing_ancestor(path)
  while not os.path.ismount(path):
    path = os.path.dirname(path)
  return path


def _size_text(num_bytes):
  for unit in ("bytes", "KiB", "MiB", "GiB"):
    if num_bytes < 1024 or unit == "GiB":
      return (f"{num_bytes:.0f} {unit}" if unit == "bytes"
              else f"{num_bytes:.1f} {unit}")
    num_bytes /= 1024
  return f"{num_bytes:.1f} TiB"


def _disk_full(error, model_dir, tf):
  """The message for "No space left on device"."""
  path = getattr(error, "filename", None) or (
      _path_in(_op_error_chain(error, tf)[-1].message) if tf is not None and
      isinstance(error, tf.errors.OpError) else None)
  folder = path or model_dir  # An OSError of a write() names no file.
  local = bool(folder) and "://" not in folder
  where = _mount_point(folder) if local else (folder or "the model_dir's disk")
  free = ""
  if local:
    stats = os.statvfs(where)
    free = (f" ({_size_text(stats.f_bavail * stats.f_frsize)} free of "
            f"{_size_text(stats.f_blocks * stats.f_frsize)})")
  usable = None
  if model_dir and tf is not None:
    from harness.state import checkpoints  # lazy: TF-free preflight  # pylint: disable=g-import-not-at-top
    usable = checkpoints.latest_usable_checkpoint(model_dir)
  kept = (f"The newest usable checkpoint is {usable}: the next run resumes "
          "from it." if usable else
          "No usable checkpoint was written: the next run starts from step 0.")
  return (
      "No space left on device"
      + (f" while writing {path}" if path else "") + f". {kept} "
      f"Fix: free space in {where}{free}, or pass a --model_dir on a disk "
      "with more room (a lower --keep_checkpoint_max keeps fewer "
      "checkpoints).")


def _unwritable(path, why, model_dir):
  """The message for a path this process may not write."""
  why = str(why)
  if path and why.startswith(path):
    why = why[len(path):].lstrip(";: ") or why
  why = re.sub(r"\s*\(op [^)]*\)$", "", why)
  local = bool(path) and "://" not in path
  folder = path
  if local:
    folder = os.path.abspath(path)
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
      folder = os.path.dirname(folder)
  inside = local and model_dir and folder.startswith(
      os.path.abspath(model_dir))
  fix = (f"make {folder} writable for this user (is it a read-only mount, "
         "or owned by another user?), or pass a --model_dir in a writable "
         "folder" if inside else
         f"make {folder or 'that path'} writable for this user, or point the "
         "flag that names it elsewhere")
  return f"cannot write {path or 'a file'}: {why}. Fix: {fix}."


def _nan_loss(error, params):
  """The message for a NaN loss: where, and the likely cause."""
  step = getattr(error, "step", None)
  tensor = getattr(error, "tensor_name", None)
  rate = (params or {}).get("learning_rate")
  at = f"at global step {step}" if step is not None else "during training"
  what = f"the loss tensor {tensor!r}" if tensor else "the loss"
  if isinstance(rate, float) and math.isnan(rate):
    fix = ("--params=learning_rate=nan is not a number: pass a real "
           "learning rate, e.g. --params=learning_rate=0.01")
  else:
    fix = ("look for NaN or Inf values in the input's features and labels, "
           "and lower the learning rate (--params=learning_rate=...) if the "
           "loss grew before it became NaN")
  return (f"{what} is NaN {at}; training stopped without saving that step. "
          f"Fix: {fix}.")
