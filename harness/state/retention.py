"""Checkpoint retention across restarts, and leftovers of interrupted writes.

A restarted chief must count the checkpoints already in `model_dir` against
`keep_checkpoint_max`, or every restart adds `keep_checkpoint_max` more
(TensorFlow's Saver starts with an empty list unless told). And a process
killed during a save or an export leaves a temporary folder that nothing
else removes. The training loop of the chief does, before its first save::

    retention.remove_leftovers(model_dir, started_at=run_started)
    hooks.append(retention.RecoverCheckpointsHook(model_dir, scaffold))

and the exporter, before its first export into a folder::

    retention.remove_export_leftovers(export_dir_base, started_at=...)

Each removal is one INFO line:
`cleanup | removed <path>: left by an interrupted checkpoint save` (or
`... checkpoint deletion`, for the data files of a checkpoint whose index
a killed clean-up had already removed).
"""

import math
import os
import re

from absl import logging

from harness._tf import tf
from harness.state import checkpoints
from harness.state import storage

__all__ = [
    "RecoverCheckpointsHook",
    "is_checkpoint_leftover",
    "remove_leftovers",
    "remove_failed_saves",
    "remove_export_leftovers",
    "EXPORT_TEMP_PREFIX",
]

# A folder `harness.export.writer` writes an export into before renaming it.
EXPORT_TEMP_PREFIX = ".temp-"
# What an interrupted save leaves in model_dir: the sharded Saver's
# `<prefix>_temp/` (or `<prefix>_temp_<uuid>/`) folder, a bundle writer's
# `*.tempstate<n>` file, TensorFlow's atomic-write `<name>.tmp<hex>` file,
# and harness's own `.tmp-<name>-<hex>` (storage.write_text_atomic).
_CHECKPOINT_LEFTOVER_RE = re.compile(
    r"(_temp(_[0-9a-f]{32})?$|\.tempstate\d*|\.tmp[0-9a-f]{32}$|^\.tmp-)")


# Harness's own `.tmp-` marker files are written by every task, not only the
# chief: one younger than this when the chief starts may be in flight.
_MARKER_WRITE_MARGIN_SECS = 60.0


def is_checkpoint_leftover(name):
  """True for a file or folder name an interrupted save leaves behind."""
  return bool(_CHECKPOINT_LEFTOVER_RE.search(name.rstrip("/")))


def _remove(path, what):
  try:
    if tf.io.gfile.isdir(path):
      tf.io.gfile.rmtree(path)
    else:
      tf.io.gfile.remove(path)
  except tf.errors.NotFoundError:
    return  # Removed meanwhile (another task cleaning the same folder).
  logging.info("cleanup | removed %s: left by an interrupted %s", path, what)


def _older(path, started_at):
  # TensorFlow's local filesystem reports mtime in whole seconds: only a
  # time in an earlier second than the run's start is surely older.
  mtime = storage.mtime_secs(path)
  return mtime is None or mtime < math.floor(started_at)


def _remove_older(folder, rule):
  """Removes each entry of `folder` that `rule(name, names)` calls a
  leftover, `(limit, what)`, and that was last modified before `limit`
  (`names`: every entry of the folder); returns the removed paths."""
  folder = os.fsdecode(folder).rstrip("/")
  removed = []
  try:
    names = [n.rstrip("/") for n in tf.io.gfile.listdir(folder)]
  except tf.errors.NotFoundError:
    return removed
  names_set = frozenset(names)
  for name in names:
    verdict = rule(name, names_set)
    if verdict is None:
      continue
    limit, what = verdict
    path = f"{folder}/{name}"
    if _older(path, limit):
      _remove(path, what)
      removed.append(path)
  return removed


def remove_leftovers(model_dir, *, started_at):
  """Removes leftovers of interrupted saves and deletions in `model_dir`
  older than the run: temporary files and folders, and the `.data-*` or
  `.meta` files of a checkpoint whose `.index` is gone.

  Args:
    model_dir: the chief's model_dir (any gfile filesystem).
    started_at: time.time() when this run started; anything modified at or
      after it may belong to this run and is kept (harness's `.tmp-` marker
      files, which other tasks write, only when a minute older than that).

  Returns:
    The removed paths.
  """
  def rule(name, names):
    if is_checkpoint_leftover(name):
      # Only the chief saves checkpoints, and it has not saved yet: all of
      # TensorFlow's temporaries are from earlier runs. Markers' are anyone's.
      return (started_at - _MARKER_WRITE_MARGIN_SECS
              if name.startswith(".tmp-") else started_at, "checkpoint save")
    if checkpoints.is_part_without_index(name, names):  # No Saver lists it.
      return started_at, "checkpoint deletion"
    return None

  return _remove_older(model_dir, rule)


def remove_failed_saves(model_dir):
  """Removes what this chief's checkpoint save that just failed left (its
  `model.ckpt-N_temp` folder); called when a full disk ended training.

  Returns:
    The removed paths.
  """
  def rule(name, unused_names):
    if is_checkpoint_leftover(name) and not name.startswith(".tmp-"):
      return 1e18, "checkpoint save (the disk is full)"  # Any age.
    return None

  return _remove_older(model_dir, rule)


def remove_export_leftovers(export_dir_base, *, started_at):
  """Removes `.temp-*` export folders in `export_dir_base` older than the run.

  Returns:
    The removed paths.
  """
  return _remove_older(
      export_dir_base,
      lambda name, _: ((started_at, "export")
                       if name.startswith(EXPORT_TEMP_PREFIX) else None))


class RecoverCheckpointsHook(tf.compat.v1.train.SessionRunHook):
  """Makes the Saver count the checkpoints already in `model_dir`.

  TensorFlow's `MonitoredTrainingSession` restores through
  `SessionManager(checkpoint_dir=...)`, which calls the Saver's
  `recover_last_checkpoints`; harness restores a chosen checkpoint
  (`checkpoint_filename_with_path`), which does not, so without this hook
  `keep_checkpoint_max` forgets every checkpoint of earlier runs. Where
  earlier runs left more than `keep_checkpoint_max` (a crash between a
  save and its clean-up, a smaller keep now, a lost state file), the oldest
  are removed at once (one INFO line each), never the one being restored.
  """

  def __init__(self, model_dir, scaffold, *, keep_checkpoint_max,
               restore_from=None):
    """Args:
      model_dir: the chief's model_dir.
      scaffold: the training Scaffold (its saver, else the SAVERS one).
      keep_checkpoint_max: the harness Saver's max_to_keep (a user's own
        Saver's `saver_def.max_to_keep` wins); None or 0 keeps all.
      restore_from: the checkpoint this run restores, never removed.
    """
    self._model_dir = model_dir
    self._scaffold = scaffold
    self._keep = keep_checkpoint_max
    self._restore_from = restore_from
    self.recovered = []

  def begin(self):
    saver = self._scaffold.saver if self._scaffold is not None else None
    if saver is None:
      savers = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS)
      saver = savers[0] if savers else None
    if saver is None or not hasattr(saver, "recover_last_checkpoints"):
      return
    keep = self._keep
    if getattr(saver, "saver_def", None) is not None:
      keep = saver.saver_def.max_to_keep
    recovered = checkpoints.checkpoints_to_recover(self._model_dir)
    if keep and len(recovered) > keep:
      for prefix in recovered[:len(recovered) - keep]:
        if prefix == self._restore_from:
          continue
        tf.compat.v1.train.remove_checkpoint(prefix)
        recovered.remove(prefix)
        logging.info("cleanup | removed checkpoint %s: over "
                     "keep_checkpoint_max=%d with those of earlier runs",
                     prefix, keep)
    self.recovered = recovered
    if recovered:
      saver.recover_last_checkpoints(recovered)
      names = [os.path.basename(p) for p in recovered]
      logging.info(
          "checkpoint | counting %d existing checkpoint(s) against "
          "keep_checkpoint_max: %s", len(names), ", ".join(names) if len(
              names) <= 2 else f"{names[0]} ... {names[-1]}")
