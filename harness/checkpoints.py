"""Finding the newest checkpoint that can actually be restored.

A save killed half way (or a disk that lost the tail of a file) can leave
the newest checkpoint truncated or corrupt while the `checkpoint` state file
still names it. Restoring it then fails on every restart. Training and the
evaluator ask this module instead of `tf.train.latest_checkpoint`::

    path = checkpoints.latest_usable_checkpoint(model_dir)
    # None (nothing usable: initialise), or the newest checkpoint whose
    # index and data files read back; skipped ones are logged as
    # "checkpoint | skipping unusable checkpoint <file>: <why>".

A checkpoint is checked once per version of its files (path, size, mtime):
its index must open, every data shard must exist and hold at least the
bytes of its fixed-size tensors, and, up to `FULL_CHECK_MAX_BYTES` of data,
every tensor is read back (which verifies TensorFlow's per-tensor CRC).
"""

import glob
import os
import re

from absl import logging

from harness import errors
from harness._tf import tf

__all__ = [
    "FULL_CHECK_MAX_BYTES",
    "check_checkpoint",
    "candidate_checkpoints",
    "check_fits",
    "latest_usable_checkpoint",
]

# Above this much data a checkpoint is checked for structure and size only:
# reading it all back would double the restore time of large models.
FULL_CHECK_MAX_BYTES = 512 * 1024 * 1024

_SHARD_RE = re.compile(r"\.data-(\d+)-of-(\d+)$")
_STEP_RE = re.compile(r"-(\d+)$")
# {prefix: (files signature, error message or None)}: each version of a
# checkpoint's files is read once per process (the evaluator polls).
_VERDICTS = {}


def _data_files(prefix):
  """The data shard paths of `prefix`, or raises CheckpointError."""
  found = {}
  total = None
  for path in glob.glob(glob.escape(prefix) + ".data-*-of-*"):
    match = _SHARD_RE.search(path)
    if match:
      found[int(match.group(1))] = path
      total = int(match.group(2))
  if total is None:
    raise errors.CheckpointError(
        f"no data file {prefix}.data-00000-of-NNNNN next to its index")
  missing = sorted(set(range(total)) - set(found))
  if missing:
    raise errors.CheckpointError(
        f"data shard(s) {missing} of {total} missing for {prefix}")
  return [found[i] for i in range(total)]


def _fixed_size_bytes(reader):
  """Bytes the checkpoint's non-string tensors take at least."""
  total = 0
  dtypes = reader.get_variable_to_dtype_map()
  for name, shape in reader.get_variable_to_shape_map().items():
    dtype = dtypes[name]
    if dtype == tf.string or dtype.size == 0:
      continue
    count = 1
    for dim in shape:
      count *= int(dim)
    total += count * dtype.size
  return total


def check_checkpoint(prefix, *, full_check_max_bytes=FULL_CHECK_MAX_BYTES):
  """Raises CheckpointError unless the checkpoint at `prefix` reads back.

  Args:
    prefix: a checkpoint path such as "/m/model.ckpt-200" (no suffix).
    full_check_max_bytes: read every tensor when the data files are at most
      this large; above it, check the structure and sizes only.

  Raises:
    CheckpointError: naming the bad file and what is wrong with it.
  """
  prefix = os.fsdecode(prefix)
  index = prefix + ".index"
  if not tf.io.gfile.exists(index):
    raise errors.CheckpointError(f"index file {index} is missing")
  try:
    data = _data_files(prefix)
    reader = tf.train.load_checkpoint(prefix)
  except errors.CheckpointError:
    raise
  except (tf.errors.OpError, ValueError) as e:
    raise errors.CheckpointError(
        f"index file {index} cannot be read: {_first_line(e)}") from e
  sizes = sum(os.path.getsize(path) for path in data)
  needed = _fixed_size_bytes(reader)
  if sizes < needed:
    raise errors.CheckpointError(
        f"data file {data[0] if len(data) == 1 else data} is truncated: "
        f"{sizes} bytes, the index lists at least {needed}")
  if sizes > full_check_max_bytes:
    return
  for name in reader.get_variable_to_shape_map():
    try:
      reader.get_tensor(name)
    except (tf.errors.OpError, ValueError) as e:
      raise errors.CheckpointError(
          f"data file {data[0] if len(data) == 1 else data} is corrupt: "
          f"tensor {name!r}: {_first_line(e)}") from e


def _first_line(error):
  text = getattr(error, "message", None) or str(error)
  return text.strip().splitlines()[0] if text.strip() else type(error).__name__


def _step_of(prefix):
  match = _STEP_RE.search(prefix)
  return int(match.group(1)) if match else -1


def candidate_checkpoints(model_dir):
  """Checkpoint prefixes in `model_dir`, newest first.

  The ones the `checkpoint` state file lists, in its order, then any other
  `*.index` in the directory (by step), so that an unreadable state file or
  one that lost track of older checkpoints still leaves them usable.

  Args:
    model_dir: the directory the Saver writes to.

  Returns:
    A list of prefixes (absolute paths when model_dir is), possibly empty.
  """
  model_dir = os.fsdecode(model_dir)
  listed = []
  try:
    state = tf.train.get_checkpoint_state(model_dir)
  except (tf.errors.OpError, ValueError) as e:  # Unparsable state file.
    logging.warning("checkpoint | ignoring unreadable state file %s: %s",
                    os.path.join(model_dir, "checkpoint"), _first_line(e))
    state = None
  if state is not None:
    listed = list(state.all_model_checkpoint_paths) or []
    if state.model_checkpoint_path and (
        state.model_checkpoint_path not in listed):
      listed.append(state.model_checkpoint_path)
    listed = [p if os.path.isabs(p) else os.path.join(model_dir, p)
              for p in listed]
    listed.reverse()  # The state file lists oldest first.
  on_disk = [path[:-len(".index")] for path in glob.glob(
      os.path.join(glob.escape(model_dir), "*.index"))]
  on_disk.sort(key=_step_of, reverse=True)
  seen = set()
  ordered = []
  for prefix in listed + on_disk:
    if prefix not in seen:
      seen.add(prefix)
      ordered.append(prefix)
  # Newest step first; the state file's order breaks ties (same step).
  return sorted(ordered, key=_step_of, reverse=True)


def _signature(prefix):
  paths = [prefix + ".index"] + glob.glob(
      glob.escape(prefix) + ".data-*-of-*")
  signature = []
  for path in sorted(paths):
    try:
      stat = os.stat(path)
    except OSError:
      continue
    signature.append((path, stat.st_size, stat.st_mtime_ns))
  return tuple(signature)


def _verdict(prefix, full_check_max_bytes):
  """None if `prefix` is usable, else why not (cached per file version)."""
  signature = _signature(prefix)
  cached = _VERDICTS.get(prefix)
  if cached is not None and cached[0] == signature:
    return cached[1]
  try:
    check_checkpoint(prefix, full_check_max_bytes=full_check_max_bytes)
    problem = None
  except errors.CheckpointError as e:
    problem = str(e)
  if problem is not None and (cached is None or cached[1] != problem):
    logging.warning("checkpoint | skipping unusable checkpoint %s: %s",
                    prefix, problem)
  _VERDICTS[prefix] = (signature, problem)
  return problem


def latest_usable_checkpoint(model_dir, *,
                             full_check_max_bytes=FULL_CHECK_MAX_BYTES):
  """The newest checkpoint in `model_dir` that reads back, or None.

  Each unusable checkpoint newer than the returned one is logged once (a
  warning naming its bad file and the reason); `tf.train.latest_checkpoint`
  would have returned it and the restore would have failed.

  Args:
    model_dir: the directory the Saver writes to (a local or mounted path).
    full_check_max_bytes: see `check_checkpoint`.

  Returns:
    A checkpoint prefix such as "/m/model.ckpt-200", or None when the
    directory holds no usable checkpoint (or does not exist).
  """
  if not model_dir or not tf.io.gfile.isdir(os.fsdecode(model_dir)):
    return None
  for prefix in candidate_checkpoints(model_dir):
    if _verdict(prefix, full_check_max_bytes) is None:
      return prefix
  return None


def check_fits(checkpoint_path, scaffold=None):
  """Raises CheckpointError when `checkpoint_path` would restore wrong shapes.

  A resource variable restored from a tensor of another shape silently takes
  that shape (TensorFlow checks nothing), and the model then fails later with
  an unrelated-looking shape error, or not at all. Only the default Saver's
  layout is checked (a variable's op name is its key in the checkpoint);
  a custom Saver (Scaffold(saver=...) or the SAVERS collection) may map names
  freely and is left to itself.

  Args:
    checkpoint_path: the checkpoint about to be restored, or None (nothing).
    scaffold: the model's Scaffold, or None; one with a saver is not checked.
  """
  if not checkpoint_path or (scaffold is not None and
                             scaffold.saver is not None):
    return
  graph = tf.compat.v1.get_default_graph()
  if graph.get_collection(tf.compat.v1.GraphKeys.SAVERS):
    return
  try:
    shapes = tf.train.load_checkpoint(checkpoint_path).get_variable_to_shape_map()
  except (tf.errors.OpError, ValueError):
    return  # Unreadable: the restore itself reports it.
  wrong = []
  for variable in graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES):
    name = variable.op.name
    shape = variable.shape
    if name in shapes and shape.is_fully_defined() and (
        list(shapes[name]) != shape.as_list()):
      wrong.append(f"{name}: {shape.as_list()} in the model, "
                   f"{list(shapes[name])} in the checkpoint")
  if wrong:
    shown = "; ".join(wrong[:4]) + ("; ..." if len(wrong) > 4 else "")
    raise errors.CheckpointError(
        f"the checkpoint {checkpoint_path} does not fit this model: "
        f"{len(wrong)} variable(s) have other shapes ({shown}). It was "
        "written by another model_fn or other params; it was left "
        "untouched. Fix: train this model in a new model_dir, or run the "
        "model_fn and params that wrote it.")
