"""Small files in `model_dir` that tell other tasks how training stands.

The chief writes `training_stopped` (JSON) when its training loop ends for
any reason (max_steps, early stopping, input exhausted, error, preemption)
and removes it when training starts again. The evaluator reads it to know
that no further checkpoint will come. Writes are atomic (temp + rename), so a
reader never sees half a file. Every access is `tf.io.gfile` (through
`harness.state.storage`), so the markers work on any filesystem the checkpoints
do (gs://, s3://, hdfs://, ram://, local).
"""

import json
import os
import time

from harness._tf import tf
from harness.state import storage

__all__ = ["MARKER_NAME", "write_training_stopped", "read_training_stopped",
           "training_stopped_since", "clear_training_stopped",
           "write_task_done", "tasks_done_since", "write_loop_ended",
           "loops_ended_since", "write_task_started", "write_task_opened",
           "task_records", "write_task_stopping", "tasks_stopping_since",
           "tasks_settled"]

MARKER_NAME = "training_stopped"


def _path(model_dir):
  return os.path.join(os.fsdecode(model_dir), MARKER_NAME)


def write_training_stopped(model_dir, reason, global_step):
  """Atomically records that training ended, why, and at which step."""
  payload = json.dumps({"reason": str(reason),
                        "global_step": None if global_step is None
                                       else int(global_step),
                        "written_at": time.time()})
  storage.write_text_atomic(_path(model_dir), payload)  # Makes the folder.


def _load_json(path):
  """The JSON in `path`; None when missing; raises ValueError/OSError/
  tf.errors.OpError when unreadable."""
  text = storage.read_text(path)
  return None if text is None else json.loads(text)


def read_training_stopped(model_dir):
  """The marker's dict, or None when training has not ended (or never ran)."""
  try:
    return _load_json(_path(model_dir))
  except (OSError, ValueError, tf.errors.OpError):
    return {"reason": "unreadable marker", "global_step": None}


def training_stopped_since(model_dir, since):
  """The marker's dict if it was written at or after `since` (time.time())."""
  marker = read_training_stopped(model_dir)
  if marker is None or marker.get("written_at", 0) < since:
    return None
  return marker


def _task_path(model_dir, kind, task_label):
  """model_dir/<kind>-<job>-<index>: one task's record of `kind`."""
  return os.path.join(os.fsdecode(model_dir),
                      f"{kind}-" + task_label.replace("/", "-"))


def _write_task_now(model_dir, kind, task_label):
  path = _task_path(model_dir, kind, task_label)
  storage.write_text_atomic(path, json.dumps({"written_at": time.time()}))


def _tasks_written_since(model_dir, kind, task_labels, since):
  """The subset of `task_labels` whose `kind` record is newer than `since`."""
  written = set()
  for label in task_labels:
    path = _task_path(model_dir, kind, label)
    record = _read_record(path)
    if record is not None and record.get("written_at", 0) >= since:
      written.add(label)
  return written


def write_task_done(model_dir, task_label):
  """Records that trainer `task_label` ("worker/1") left its training loop."""
  _write_task_now(model_dir, "task_done", task_label)


def tasks_done_since(model_dir, task_labels, since):
  """The subset of `task_labels` whose done-record is newer than `since`."""
  return _tasks_written_since(model_dir, "task_done", task_labels, since)


def write_loop_ended(model_dir, task_label):
  """Records that trainer `task_label` left its step loop cleanly.

  Written when the loop ended without an error (input exhausted, last
  step reached), unlike `write_task_done`: a collective peer that sees this
  task vanish then ends its own loop instead of reporting a lost peer.
  """
  _write_task_now(model_dir, "loop_ended", task_label)


def loops_ended_since(model_dir, task_labels, since):
  """The subset of `task_labels` whose clean loop end is newer than `since`."""
  return _tasks_written_since(model_dir, "loop_ended", task_labels, since)


def write_task_stopping(model_dir, task_label):
  """Records that task `task_label` ("ps/0") got SIGTERM and stops soon: its
  trainers stop and save first, as for their own preemption."""
  _write_task_now(model_dir, "task_stopping", task_label)


def tasks_stopping_since(model_dir, task_labels, since):
  """The subset of `task_labels` that announced their stop after `since`."""
  return _tasks_written_since(model_dir, "task_stopping", task_labels, since)


def tasks_settled(model_dir, task_labels):
  """The trainers of `task_labels` not training now: their last done-record
  is newer than their last start (or they have no start on record)."""
  settled = set()
  for label in task_labels:
    done = _read_record(_task_path(model_dir, "task_done", label)) or {}
    started = _read_record(_started_path(model_dir, label)) or {}
    if done.get("written_at", 0) >= started.get("written_at", 0):
      settled.add(label)
  return settled


def _started_path(model_dir, task_label):
  return _task_path(model_dir, "task_started", task_label)


def _read_record(path):
  try:
    record = _load_json(path)
  except (OSError, ValueError, tf.errors.OpError):
    return None
  return record if isinstance(record, dict) else None


def write_task_started(model_dir, task_label):
  """Records that trainer `task_label` (re)starts training now.

  Returns:
    Its previous record ({"written_at": ..., "opened_at": ...}) or None.
  """
  path = _started_path(model_dir, task_label)
  previous = _read_record(path)
  storage.write_text_atomic(path, json.dumps({"written_at": time.time()}))
  return previous


def write_task_opened(model_dir, task_label):
  """Adds to the task's start record that its training session exists."""
  path = _started_path(model_dir, task_label)
  record = _read_record(path) or {"written_at": time.time()}
  record["opened_at"] = time.time()
  storage.write_text_atomic(path, json.dumps(record))


def task_records(model_dir, task_labels):
  """{label: its start record} for the labels that have one."""
  records = {}
  for label in task_labels:
    record = _read_record(_started_path(model_dir, label))
    if record is not None:
      records[label] = record
  return records


def clear_training_stopped(model_dir):
  """Removes the marker (training is starting or resuming)."""
  storage.remove_file(_path(model_dir))
