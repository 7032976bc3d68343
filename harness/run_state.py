"""Small files in `model_dir` that tell other tasks how training stands.

The chief writes `training_stopped` (JSON) when its training loop ends for
any reason (max_steps, early stopping, input exhausted, error, preemption)
and removes it when training starts again. The evaluator reads it to know
that no further checkpoint will come. Writes are atomic (temp + rename), so a
reader never sees half a file. No TensorFlow: plain files (local or shared
storage mounted as a file system).
"""

import json
import os
import tempfile
import time

__all__ = ["MARKER_NAME", "write_training_stopped", "read_training_stopped",
           "training_stopped_since", "clear_training_stopped",
           "write_task_done", "tasks_done_since"]

MARKER_NAME = "training_stopped"


def _path(model_dir):
  return os.path.join(os.fsdecode(model_dir), MARKER_NAME)


def write_training_stopped(model_dir, reason, global_step):
  """Atomically records that training ended, why, and at which step."""
  payload = json.dumps({"reason": str(reason),
                        "global_step": None if global_step is None
                                       else int(global_step),
                        "written_at": time.time()})
  _write_atomic(model_dir, _path(model_dir), payload)


def _write_atomic(model_dir, path, payload):
  os.makedirs(os.fsdecode(model_dir), exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=os.fsdecode(model_dir), prefix=".state-")
  try:
    with os.fdopen(fd, "w") as f:
      f.write(payload)
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def read_training_stopped(model_dir):
  """The marker's dict, or None when training has not ended (or never ran)."""
  try:
    with open(_path(model_dir)) as f:
      return json.load(f)
  except (FileNotFoundError, NotADirectoryError):
    return None
  except (OSError, ValueError):
    return {"reason": "unreadable marker", "global_step": None}


def training_stopped_since(model_dir, since):
  """The marker's dict if it was written at or after `since` (time.time())."""
  marker = read_training_stopped(model_dir)
  if marker is None or marker.get("written_at", 0) < since:
    return None
  return marker


def _done_path(model_dir, task_label):
  return os.path.join(os.fsdecode(model_dir),
                      "task_done-" + task_label.replace("/", "-"))


def write_task_done(model_dir, task_label):
  """Records that trainer `task_label` ("worker/1") left its training loop."""
  _write_atomic(model_dir, _done_path(model_dir, task_label),
                json.dumps({"written_at": time.time()}))


def tasks_done_since(model_dir, task_labels, since):
  """The subset of `task_labels` whose done-record is newer than `since`."""
  done = set()
  for label in task_labels:
    try:
      with open(_done_path(model_dir, label)) as f:
        if json.load(f).get("written_at", 0) >= since:
          done.add(label)
    except (OSError, ValueError):
      continue
  return done


def clear_training_stopped(model_dir):
  """Removes the marker (training is starting or resuming)."""
  try:
    os.remove(_path(model_dir))
  except FileNotFoundError:
    pass
