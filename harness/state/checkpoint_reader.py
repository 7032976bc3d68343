"""One checkpoint's files: whether they read back, what they hold, whether
they fit the model.

`state/checkpoints.py` finds the checkpoint to restore and asks this module
once per candidate whether it reads back (`verdict`, which caches
`check_checkpoint` per version of the files): its index must open,
every data shard must exist and hold at least the bytes of its fixed-size
tensors, and, up to `FULL_CHECK_MAX_BYTES` of data, every tensor is read
back (which verifies TensorFlow's per-tensor CRC). Every file access is
`tf.io.gfile`.
"""

import math
import os
import re

from absl import logging

from harness import errors
from harness._tf import tf

__all__ = [
    "FULL_CHECK_MAX_BYTES", "check_checkpoint", "verdict", "check_fits",
    "open_reader", "global_step_of", "data_file_paths", "listdir",
    "first_line",
]

# Above this much data a checkpoint is checked for structure and size only:
# reading it all back would double the restore time of large models.
FULL_CHECK_MAX_BYTES = 512 * 1024 * 1024

_SHARD_RE = re.compile(r"\.data-(\d+)-of-(\d+)$")
_KERAS_GLOBAL_STEP = "estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE"
# {prefix: (files signature, error message or None)}: each version of a
# checkpoint's files is read once per process (the evaluator polls).
_VERDICTS = {}


def _split(prefix):
  """(directory, file name) of a checkpoint prefix (also for URLs)."""
  directory, _, name = os.fsdecode(prefix).rpartition("/")
  return directory or ".", name


def listdir(directory):
  """The names in `directory` (gfile), [] when it does not exist."""
  try:
    return [n.rstrip("/") for n in tf.io.gfile.listdir(directory)]
  except tf.errors.NotFoundError:
    return []


def data_file_paths(prefix):
  """Paths of the `<prefix>.data-*-of-*` files that exist (no glob: the
  prefix may hold glob characters)."""
  directory, name = _split(prefix)
  head = "" if directory == "." and "/" not in os.fsdecode(prefix) else (
      directory + "/")
  return [f"{head}{n}" for n in listdir(directory)
          if n.startswith(name + ".data-") and _SHARD_RE.search(n)]


def _data_files(prefix):
  """The data shard paths of `prefix`, or raises CheckpointError."""
  found, total = {}, None
  for path in data_file_paths(prefix):
    match = _SHARD_RE.search(path)
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
    if dtypes[name] != tf.string and dtypes[name].size:
      total += math.prod(int(dim) for dim in shape) * dtypes[name].size
  return total


def open_reader(prefix):
  """A CheckpointReader of the checkpoint `prefix` (not a directory).

  `tf.train.load_checkpoint` first asks whether the path is a directory,
  which TensorFlow's ram:// filesystem answers "yes" for any prefix of a
  file name; opening the prefix directly works on every filesystem.
  """
  return tf.compat.v1.train.NewCheckpointReader(os.fsdecode(prefix))


def global_step_of(prefix):
  """The global step saved in checkpoint `prefix`; None for no prefix."""
  if not prefix:
    return None
  reader, key = open_reader(prefix), "global_step"  # Raises if it is absent.
  if not reader.has_tensor(key) and reader.has_tensor(_KERAS_GLOBAL_STEP):
    key = _KERAS_GLOBAL_STEP  # model_to_estimator's object-based key.
  return int(reader.get_tensor(key))


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
    reader = open_reader(prefix)
  except errors.CheckpointError:
    raise
  except (tf.errors.OpError, ValueError) as e:
    raise errors.CheckpointError(
        f"index file {index} cannot be read: {first_line(e)}") from e
  sizes = sum(tf.io.gfile.stat(path).length for path in data)
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
          f"tensor {name!r}: {first_line(e)}") from e


def _signature(prefix):
  paths = [prefix + ".index"] + data_file_paths(prefix)
  signature = []
  for path in sorted(paths):
    try:
      stat = tf.io.gfile.stat(path)
    except tf.errors.OpError:
      continue
    signature.append((path, stat.length, stat.mtime_nsec))
  return tuple(signature)


def verdict(prefix, full_check_max_bytes=FULL_CHECK_MAX_BYTES):
  """None if checkpoint `prefix` reads back (`check_checkpoint`), else why
  not; cached per version of its files, and a new reason is logged once."""
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


def first_line(error):
  text = getattr(error, "message", None) or str(error)
  return text.strip().splitlines()[0] if text.strip() else type(error).__name__


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
    shapes = open_reader(checkpoint_path).get_variable_to_shape_map()
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
