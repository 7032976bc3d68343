"""File access for `model_dir` on any `tf.io.gfile` filesystem.

Everything harness reads or writes under a model_dir (checkpoints, the
run-state markers, exports, event files, predictions) goes through
`tf.io.gfile`, so `gs://`, `s3://`, `hdfs://` and `ram://` model_dirs work
like local ones::

    storage.write_text_atomic(model_dir + "/training_stopped", "{...}")
    text = storage.read_text(model_dir + "/training_stopped")  # or None
    storage.move_dir_into_place(temp_dir, final_dir)

Atomicity: a file is written under a temporary name next to its target and
renamed over it (one object write on object stores, a POSIX rename on local
disks and HDFS). A directory (an export) is renamed where the filesystem
renames directories atomically (local, HDFS); elsewhere it is copied file by
file with `saved_model.pb(txt)` last, so a reader that waits for that file
(TF Serving, `list_exports`) never sees a partial export. docs/RELIABILITY.md
lists what each filesystem guarantees. Path normalisation and the model_dir
rule (no file access, no TensorFlow) are in `harness.state.paths`;
`resolve_model_dir` logs the model_dir that rule picked, or makes the
temporary folder when nothing named one.
"""

import os
import tempfile
import threading
import uuid

from absl import logging

from harness._tf import tf

__all__ = [
    "renames_dirs_atomically",
    "write_text_atomic",
    "read_text",
    "remove_file",
    "check_writable",
    "flush_events",
    "quiet_event_writer_thread",
    "move_dir_into_place",
    "mtime_secs",
    "resolve_model_dir",
    "temporary_model_dir",
    "is_temporary_model_dir",
    "finish_temporary_model_dir",
]

# Schemes whose directory rename is one atomic metadata operation. Object
# stores (gs, s3) rename a "directory" object by object; TensorFlow's ram://
# renames the directory entry only and loses its files.
_ATOMIC_DIR_RENAME_SCHEMES = frozenset(["", "file", "hdfs", "viewfs"])
# Written last when a directory is copied: its presence marks a complete
# SavedModel.
_COMPLETION_FILES = ("saved_model.pb", "saved_model.pbtxt")


def _scheme(path):
  head, sep, _ = path.partition("://")
  return head.lower() if sep else ""


def renames_dirs_atomically(path):
  """True when `path`'s filesystem renames a directory in one step."""
  return _scheme(os.fsdecode(path)) in _ATOMIC_DIR_RENAME_SCHEMES


def write_text_atomic(path, text):
  """Writes `text` to `path`: a temporary sibling, then a rename over it.

  The directory is created if missing. On failure the temporary file is
  removed and the previous content of `path` (if any) is left as it was.
  """
  path = os.fsdecode(path)
  directory = os.path.dirname(path)
  if directory:
    tf.io.gfile.makedirs(directory)
  temp = os.path.join(
      directory, f".tmp-{os.path.basename(path)}-{uuid.uuid4().hex[:12]}")
  try:
    with tf.io.gfile.GFile(temp, "w") as f:
      f.write(text)
    tf.io.gfile.rename(temp, path, overwrite=True)
  except BaseException:
    remove_file(temp)
    raise


def read_text(path):
  """The content of `path` as str, or None when it does not exist."""
  try:
    with tf.io.gfile.GFile(os.fsdecode(path), "r") as f:
      return f.read()
  except tf.errors.NotFoundError:
    return None


def remove_file(path):
  """Deletes `path` if it exists (a missing file is not an error)."""
  try:
    tf.io.gfile.remove(os.fsdecode(path))
  except tf.errors.NotFoundError:
    pass


def check_writable(folder):
  """Writes, then removes, a probe file in `folder` (or, while it does not
  exist, in its nearest existing parent, where it would be created).

  For folders whose writes fail silently later (TensorFlow's event writer
  drops every event of an unwritable `eval/`), so that the first evaluation
  or export fails at once instead. Creates nothing.

  Raises:
    tf.errors.OpError: the folder cannot be written (e.g.
      PermissionDeniedError, or a "Read-only file system" message), with
      the folder probed in its message.
  """
  folder = os.fsdecode(folder)
  while not tf.io.gfile.isdir(folder) and os.path.dirname(folder) != folder:
    folder = os.path.dirname(folder)
  probe = os.path.join(folder, f".harness-write-check-{uuid.uuid4().hex[:12]}")
  failure = None
  try:
    with tf.io.gfile.GFile(probe, "w") as f:
      f.write("")
  except tf.errors.OpError as e:  # Name the folder, not the probe file.
    failure = type(e)(e.node_def, e.op, e.message.replace(probe, folder))
  if failure is not None:
    raise failure  # Outside `except`: no context chain to the probe's path.
  remove_file(probe)


_EVENT_THREAD = "EventLoggerThread"  # TensorFlow's event writer thread.


def quiet_event_writer_thread():
  """Stops Python printing a traceback when TensorFlow's event writer thread
  dies of a write error: `flush_events` raises that error to the loop, which
  reports it in one line. Other threads' errors print as before. Idempotent.
  """
  previous = threading.excepthook
  if getattr(previous, "harness_quiet_events", False):
    return

  def hook(args):
    if getattr(args.thread, "name", None) == _EVENT_THREAD and isinstance(
        args.exc_value, RuntimeError):
      return
    previous(args)

  hook.harness_quiet_events = True
  threading.excepthook = hook


def flush_events(logdir):
  """Flushes the cached TensorBoard event writer of `logdir` (tf.compat.v1
  FileWriterCache), so that a failed write shows now, not at the end.

  TensorFlow's writer thread dies at its first failed write and says so only
  at the next flush, as a bare RuntimeError (its writer is closed then, and
  later writes are dropped).

  Raises:
    tf.errors.ResourceExhaustedError: the disk is full ("<logdir>: No space
      left on device ..."), what `harness.main` explains with free space
      and the newest usable checkpoint.
    Exception: any other write error, as TensorFlow raised it.
  """
  with tf.Graph().as_default():  # v1 FileWriters refuse eager mode.
    writer = tf.compat.v1.summary.FileWriterCache.get(logdir)
  failure = None
  try:
    writer.flush()
  except Exception as e:  # pylint: disable=broad-except
    failure = e
    if "No space left on device" in str(e):
      failure = tf.errors.ResourceExhaustedError(
          None, None, f"{logdir}: No space left on device (writing "
          "TensorBoard event files)")
  if failure is not None:
    raise failure


def mtime_secs(path):
  """Modification time of `path` in seconds, or None if it cannot be read.

  Some filesystems report 0 (TensorFlow's ram://); callers treat that as
  "old".
  """
  try:
    return tf.io.gfile.stat(os.fsdecode(path)).mtime_nsec / 1e9
  except tf.errors.OpError:
    return None


def move_dir_into_place(temp_dir, final_dir):
  """Moves the complete directory `temp_dir` to the new name `final_dir`.

  Local disks and HDFS: one rename (atomic). Other filesystems: every file
  is copied into `final_dir` with `saved_model.pb`/`.pbtxt` last, then
  `temp_dir` is deleted; `final_dir` is visible early but incomplete until
  that last file lands.

  Raises:
    tf.errors.AlreadyExistsError: `final_dir` exists already (nothing was
      moved).
  """
  temp_dir, final_dir = os.fsdecode(temp_dir), os.fsdecode(final_dir)
  if renames_dirs_atomically(final_dir):
    tf.io.gfile.rename(temp_dir, final_dir, overwrite=False)
    return
  if tf.io.gfile.exists(final_dir):
    raise tf.errors.AlreadyExistsError(
        None, None, f"{final_dir} already exists")
  files = []
  for root, _, names in tf.io.gfile.walk(temp_dir):
    files += [os.path.join(root, name) for name in names]
  files.sort(key=lambda p: os.path.basename(p) in _COMPLETION_FILES)
  tf.io.gfile.makedirs(final_dir)
  for source in files:
    dest = os.path.join(final_dir, source[len(temp_dir):].lstrip("/"))
    tf.io.gfile.makedirs(os.path.dirname(dest))
    tf.io.gfile.copy(source, dest, overwrite=False)
  tf.io.gfile.rmtree(temp_dir)


def resolve_model_dir(model_dir, source):
  """The model_dir of a run, as decided, and one log line saying why.

  `model_dir` and its `source` are what `harness.state.paths.
  merge_model_dirs` picked (the Estimator's `model_dir` argument, which is
  `--model_dir` under `harness.main`; RunConfig's; TF_CONFIG's). When none
  named one (None), a new temporary folder is made: local by definition,
  so `tempfile` is right (no gfile filesystem makes temporary folders).
  Logs e.g. ``model_dir | /x (from TF_CONFIG's model_dir)``, at WARNING
  for a temporary folder (its checkpoints are easily lost), else at INFO.

  Returns:
    The model_dir: as given, or the new folder's absolute path.
  """
  if model_dir is None:
    model_dir = temporary_model_dir()
    logging.warning("model_dir | %s (%s)", model_dir, source)
  else:
    logging.info("model_dir | %s (%s)", model_dir, source)
  return model_dir


_TEMPORARY_PREFIX = "harness_model_"


def temporary_model_dir():
  """Makes a new local folder for a model_dir (no log line: the caller,
  `resolve_model_dir`, says why).

  Returns:
    The new folder's absolute path.
  """
  return tempfile.mkdtemp(prefix=_TEMPORARY_PREFIX)  # local-fs: temp


def is_temporary_model_dir(model_dir):
  """Whether `model_dir` is a folder `temporary_model_dir` made."""
  if not model_dir:
    return False
  path = os.path.normpath(model_dir)
  temp_root = tempfile.gettempdir()  # local-fs: where mkdtemp makes them
  return (os.path.basename(path).startswith(_TEMPORARY_PREFIX)
          and os.path.dirname(path) == os.path.normpath(temp_root))


def finish_temporary_model_dir(model_dir, *, succeeded, keep):
  """Removes a run's temporary model_dir at its end, or says why it stays.

  Removed after a successful run unless `keep`, and always when empty; one
  log line says which, and where.

  Args:
    model_dir: a folder `temporary_model_dir` made.
    succeeded: whether the run ended successfully.
    keep: None, or why to keep it after a success ("--keep_model_dir").

  Returns:
    True if the folder was removed.
  """
  empty = not tf.io.gfile.exists(model_dir) or not tf.io.gfile.listdir(
      model_dir)
  if empty or (succeeded and not keep):
    if tf.io.gfile.exists(model_dir):
      tf.io.gfile.rmtree(model_dir)
    logging.info("model_dir | removed the %stemporary %s%s",
                 "empty " if empty else "", model_dir,
                 "" if empty else " (--keep_model_dir keeps it)")
    return True
  logging.info("model_dir | kept the temporary %s (%s)", model_dir,
               keep if succeeded else "the run did not finish: its files "
               "are there; remove it when done")
  return False
