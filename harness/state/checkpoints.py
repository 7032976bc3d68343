"""Finding the newest checkpoint that can actually be restored.

A save killed half way (or a disk that lost the tail of a file) can leave
the newest checkpoint truncated or corrupt while the `checkpoint` state file
still names it. Restoring it then fails on every restart. Training and the
evaluator ask this module instead of `tf.train.latest_checkpoint`::

    path = checkpoints.latest_usable_checkpoint(model_dir)
    # None (nothing usable: initialise), or the checkpoint the `checkpoint`
    # state file names when it reads back, else the newest one on disk that
    # does; skipped ones are logged as
    # "checkpoint | skipping unusable checkpoint <file>: <why>".

Every file access is `tf.io.gfile`, so any filesystem TensorFlow knows
(gs://, s3://, hdfs://, ram://) works. `checkpoints_to_recover` tells a
restarted Saver which checkpoints already count against
`keep_checkpoint_max` (see `retention.py`).

This module finds the candidates; `checkpoint_reader.verdict` says of each
whether it reads back, once per version of its files (path, size, mtime).
"""

import os
import re

from absl import logging

from harness._tf import tf
from harness.state import checkpoint_reader

__all__ = [
    "candidate_checkpoints", "checkpoints_on_disk", "checkpoints_to_recover",
    "is_part_without_index", "read_state", "latest_usable_checkpoint",
    "latest_usable_step", "step_in_name", "resolve_prefix",
]

_STEP_RE = re.compile(r"-(\d+)$")
# A data shard or `.meta` of the Estimator's `model.ckpt-<step>` checkpoints.
_ESTIMATOR_PART_RE = re.compile(r"^(model\.ckpt-\d+)\.(data-\d+-of-\d+|meta)$")
_SECOND_URL_RE = re.compile(r".+/([a-zA-Z][a-zA-Z0-9+.-]*://.*)$")
# {model_dir: (why, chosen)}: each fallback from the state file is logged once.
_FALLBACKS = {}


def resolve_prefix(path):
  """The checkpoint `path` names: (prefix, is_directory). `<path>.index`
  exists: `path` (tested first: ram:// calls any prefix of a file name a
  directory); a directory: its latest checkpoint (None: it holds none);
  else `path` when something is there, else None."""
  path = os.fsdecode(path)
  if tf.io.gfile.exists(path + ".index"):
    return path, False
  if tf.io.gfile.isdir(path):
    return tf.train.latest_checkpoint(path), True
  return (path if tf.io.gfile.exists(path) else None), False


def step_in_name(prefix, default=None):
  """The step in a checkpoint's name ("model.ckpt-500": 500), else `default`."""
  match = _STEP_RE.search(tf.compat.as_str_any(prefix or ""))
  return int(match.group(1)) if match else default


def _step_of(prefix):
  """`step_in_name`, -1 for none (a sort key)."""
  return step_in_name(prefix, default=-1)


def _repair(path):
  """Undoes TF's join of a URL model_dir with a state-file URL entry.

  `tf.train.get_checkpoint_state` joins every entry that `os.path.isabs`
  does not call absolute, so "gs://b/m" + "gs://b/m/model.ckpt-5" becomes
  "gs://b/m/gs://b/m/model.ckpt-5"; the second URL is the real path.
  """
  match = _SECOND_URL_RE.search(path)
  return path[match.start(1):] if match else path


def read_state(model_dir):
  """The `checkpoint` state file's view of `model_dir`.

  Returns:
    (latest, listed, problem): `latest` the prefix the state file names as
    the newest (None if none), `listed` every prefix it lists, oldest first
    (`latest` last), and `problem` None, or why the file cannot be used
    ("missing", or the parse error).
  """
  model_dir = os.fsdecode(model_dir)
  state_path = f"{model_dir.rstrip('/')}/checkpoint"
  if not tf.io.gfile.exists(state_path):
    return None, [], "missing"
  try:
    state = tf.train.get_checkpoint_state(model_dir)
  except (tf.errors.OpError, ValueError) as e:  # Empty or unreadable.
    return None, [], checkpoint_reader.first_line(e)
  if state is None or not state.model_checkpoint_path:
    return None, [], "unreadable (no model_checkpoint_path)"
  latest = _repair(state.model_checkpoint_path)
  listed = [_repair(p) for p in state.all_model_checkpoint_paths]
  if latest in listed:
    listed.remove(latest)
  return latest, listed + [latest], None


def is_part_without_index(name, names):
  """True for a `model.ckpt-<step>` data shard or `.meta` file name whose
  `.index` is not among `names` (a folder's entries): what a deletion
  killed half way leaves, since TensorFlow removes the `.meta`, then the
  `.index`, then the data. Other names (a user's files) are never parts."""
  part = _ESTIMATOR_PART_RE.match(name)
  return bool(part) and part.group(1) + ".index" not in names


def checkpoints_on_disk(model_dir):
  """Every `<prefix>.index` in `model_dir` as a prefix, oldest step first."""
  model_dir = os.fsdecode(model_dir).rstrip("/")
  found = [f"{model_dir}/{n[:-len('.index')]}"
           for n in checkpoint_reader.listdir(model_dir)
           if n.endswith(".index") and not n.startswith(".")]
  return sorted(found, key=_step_of)


def candidate_checkpoints(model_dir):
  """Checkpoint prefixes to try, in order.

  The `checkpoint` state file decides, as in TensorFlow: the prefix it
  names comes first. The rest (the state file's other entries and every
  `*.index` on disk, newest step first) are the fallback for a state file
  that is missing, unreadable or names an unusable checkpoint.

  Args:
    model_dir: the directory the Saver writes to.

  Returns:
    A list of prefixes (paths as model_dir spells them), possibly empty.
  """
  latest, listed, _ = read_state(model_dir)
  rest = sorted(set(listed + checkpoints_on_disk(model_dir)) - {latest},
                key=_step_of, reverse=True)
  return ([latest] if latest else []) + rest


def checkpoints_to_recover(model_dir):
  """The existing checkpoints a restarted Saver must count, oldest first.

  Those the state file lists, plus on-disk checkpoints newer than all of
  them (a save that was killed after its files but before the state
  file); with no usable state file, every checkpoint on disk by step.
  Older unlisted ones are left alone: the Saver itself unlists the ones
  `keep_checkpoint_every_n_hours` preserves.
  """
  latest, listed, _ = read_state(model_dir)
  on_disk = checkpoints_on_disk(model_dir)
  if latest is None:
    return on_disk
  present = set(on_disk)
  listed = [p for p in listed if p in present]
  newest = max([_step_of(p) for p in listed], default=-1)
  return listed + [p for p in on_disk
                   if p not in listed and _step_of(p) > newest]


def latest_usable_checkpoint(model_dir, *,
                             full_check_max_bytes=(
                                 checkpoint_reader.FULL_CHECK_MAX_BYTES)):
  """The checkpoint to restore from `model_dir`, or None.

  The one the `checkpoint` state file names (as `tf.train.latest_checkpoint`
  returns it) when it reads back. Otherwise (state file missing, unreadable,
  or naming an unusable checkpoint) the newest usable checkpoint on disk,
  with one warning saying which and why; each unusable checkpoint tried is
  logged once with its bad file and the reason.

  Args:
    model_dir: the directory the Saver writes to (a local or mounted path).
    full_check_max_bytes: see `checkpoint_reader.check_checkpoint`.

  Returns:
    A checkpoint prefix such as "/m/model.ckpt-200", or None when the
    directory holds no usable checkpoint (or does not exist).
  """
  if not model_dir or not tf.io.gfile.isdir(os.fsdecode(model_dir)):
    return None
  latest, _, problem = read_state(model_dir)
  chosen = None
  for prefix in candidate_checkpoints(model_dir):
    if checkpoint_reader.verdict(prefix, full_check_max_bytes) is None:
      chosen = prefix
      break
  if chosen is not None and chosen != latest:
    why = (f"the state file names {latest}, which is unusable" if latest
           else f"the `checkpoint` state file is {problem}")
    note = (why, chosen)
    if _FALLBACKS.get(os.fsdecode(model_dir)) != note:
      logging.warning("checkpoint | %s: %s; using %s (the newest usable "
                      "checkpoint on disk)", os.fsdecode(model_dir), why,
                      os.path.basename(chosen))  # Its folder starts the line.
      _FALLBACKS[os.fsdecode(model_dir)] = note
  return chosen


def latest_usable_step(model_dir):
  """The global step of `latest_usable_checkpoint(model_dir)`; None when
  there is no usable checkpoint."""
  prefix = latest_usable_checkpoint(model_dir)
  return checkpoint_reader.global_step_of(prefix)
