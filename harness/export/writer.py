"""Writes SavedModels from a checkpoint, one MetaGraph per mode.

The Estimator calls it with its own `model_fn` wrapped as `build_spec_fn`::

    export_dir = writer.export_all_saved_models(
        "/models/export", {ModeKeys.PREDICT: serving_input_receiver_fn},
        build_spec_fn=lambda features, labels, mode: call_model_fn(...),
        checkpoint_path="/models/model.ckpt-1000")
    # -> b"/models/export/1712345678"

The export is written into a hidden sibling directory (`.temp-<ts>-<pid>`)
and moved into place (`storage.move_dir_into_place`: one rename on local
disks and HDFS, else a copy with saved_model.pb last), so `export_dir_base`
never holds a complete-looking half-written SavedModel under a timestamp
name; TF Serving ignores non-numeric children. `.temp-*` folders older than
the process (an export killed half way) are removed before its first export
into that folder, with one INFO line each.
"""

import os
import time

from absl import logging

from harness import _tf_private
from harness import errors
from harness._tf import tf
from harness.export import outputs as outputs_lib
from harness.spec import ModeKeys
from harness.state import checkpoint_reader
from harness.state import checkpoints
from harness.state import retention
from harness.state import storage

__all__ = [
    "export_all_saved_models",
    "get_timestamped_export_dir",
    "list_exports",
    "EXPORT_TAGS",
]

# Each mode's MetaGraph tags, and the order modes are written in: the first
# one saves the variables, and TRAIN is likeliest to hold them all.
EXPORT_TAGS = {
    ModeKeys.TRAIN: ["train"],
    ModeKeys.EVAL: ["eval"],
    ModeKeys.PREDICT: ["serve"],
}
_MODE_ORDER = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
# Collection the SavedModel format reads a training graph's train op from.
_TRAIN_OP_COLLECTION = "saved_model_train_op"
_MAX_NAME_ATTEMPTS = 10
_TEMP_PREFIX = retention.EXPORT_TEMP_PREFIX
# When this process started exporting; `.temp-*` folders older than that in
# an export base were left by an interrupted export and are removed once.
_STARTED_AT = time.time()
_CLEANED_BASES = set()


def _as_str(path):
  return os.fsdecode(path) if isinstance(path, bytes) else str(path)


def get_timestamped_export_dir(export_dir_base, clock=time.time,
                               sleep=time.sleep):
  """A path `<export_dir_base>/<seconds since epoch>` that does not exist yet.

  If the name is taken, waits one second and tries again, up to 10 times.

  Args:
    export_dir_base: the directory holding the exports (str or bytes).
    clock: returns the time in seconds (injectable for tests).
    sleep: sleeps a number of seconds (injectable for tests).

  Returns:
    The path as bytes (as tf.estimator returned it); nothing is created.

  Raises:
    RuntimeError: no free name after 10 attempts.
  """
  base = _as_str(export_dir_base)
  for attempt in range(1, _MAX_NAME_ATTEMPTS + 1):
    export_dir = os.path.join(base, str(int(clock())))
    if not tf.io.gfile.exists(export_dir):
      return os.fsencode(export_dir)
    # Not a problem (two exports within one second): INFO, the name only.
    logging.info("export | %s exists already (made this second); trying the "
                 "next second (attempt %d/%d)", os.path.basename(export_dir),
                 attempt, _MAX_NAME_ATTEMPTS)
    sleep(1)
  raise RuntimeError(
      "Failed to obtain a unique export directory name under "
      f"{base} after {_MAX_NAME_ATTEMPTS} attempts.")


def list_exports(export_dir_base):
  """The complete timestamped exports under `export_dir_base`, oldest first.

  Args:
    export_dir_base: the directory holding the exports (str or bytes).

  Returns:
    List of str paths whose name is all digits and that hold a
    saved_model.pb or saved_model.pbtxt; [] if the directory is missing.
  """
  base = _as_str(export_dir_base)
  if not tf.io.gfile.isdir(base):
    return []
  found = []
  for name in tf.io.gfile.listdir(base):
    name = name.rstrip("/")
    path = os.path.join(base, name)
    if not name.isdigit() or not tf.io.gfile.isdir(path):
      continue
    if any(tf.io.gfile.exists(os.path.join(path, f))
           for f in ("saved_model.pb", "saved_model.pbtxt")):
      found.append((int(name), path))
  return [path for _, path in sorted(found)]


def _resolve_checkpoint(checkpoint_path):
  """The checkpoint prefix to restore; a directory means its latest one."""
  if not checkpoint_path:
    raise errors.CheckpointError(
        f"checkpoint_path must name a checkpoint, given: {checkpoint_path!r}."
        " Fix: pass a path like <model_dir>/model.ckpt-1000, or train first.")
  path = _as_str(checkpoint_path)
  prefix, is_directory = checkpoints.resolve_prefix(path)
  if prefix is None and is_directory:
    raise errors.CheckpointError(
        f"Couldn't find trained model at {path}: the directory holds no "
        "checkpoint. Fix: train first, or pass a checkpoint prefix.")
  if prefix is None:
    raise errors.CheckpointError(
        f"Checkpoint {path} does not exist (no {path}.index). Fix: pass an "
        "existing checkpoint prefix, e.g. tf.train.latest_checkpoint("
        "model_dir), without the .index/.data suffix.")
  return prefix


def _restore(session, saver, checkpoint_path, mode):
  try:
    saver.restore(session, checkpoint_path)
  except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError) as e:
    raise errors.CheckpointError(
        "Could not load all requested variables from checkpoint. Please make "
        "sure your model_fn does not expect variables that were not saved in "
        f"the checkpoint.\n\nEncountered error with mode `{mode}` while "
        f"restoring checkpoint from: `{checkpoint_path}`. Full "
        f"Traceback:\n\n{e}") from e


def _call_receiver_fn(receiver_fn, mode):
  receiver = receiver_fn()
  if not (hasattr(receiver, "features") and
          hasattr(receiver, "receiver_tensors")):
    raise errors.InputFnError(
        f"The input receiver fn for mode {mode!r} ({receiver_fn!r}) returned "
        f"{type(receiver).__name__}: {receiver!r:.200}; it must return a "
        "ServingInputReceiver, TensorServingInputReceiver or "
        "SupervisedInputReceiver.")
  return receiver


def _add_meta_graph_for_mode(builder, mode, receiver_fn, build_spec_fn,
                             checkpoint_path, save_variables, *,
                             strip_default_attrs, random_seed, session_config):
  """Builds one mode's graph, restores the checkpoint, adds its MetaGraph."""
  with tf.Graph().as_default() as graph:
    tf.compat.v1.train.get_or_create_global_step(graph)
    if random_seed is not None:
      tf.compat.v1.set_random_seed(random_seed)
    # As tf.estimator: SavedModels carry resource variables.
    tf.compat.v1.enable_resource_variables()
    receiver = _call_receiver_fn(receiver_fn, mode)
    spec = build_spec_fn(
        receiver.features, getattr(receiver, "labels", None), mode)
    export_outputs = outputs_lib.export_outputs_for_mode(
        mode=spec.mode, serving_export_outputs=spec.export_outputs,
        predictions=spec.predictions, loss=spec.loss,
        metrics=spec.eval_metric_ops)
    signature_def_map = outputs_lib.build_all_signature_defs(
        receiver.receiver_tensors, export_outputs,
        getattr(receiver, "receiver_tensors_alternatives", None),
        serving_only=(mode == ModeKeys.PREDICT))
    local_init_op = spec.scaffold.local_init_op
    if local_init_op is None:
      local_init_op = tf.compat.v1.train.Scaffold.default_local_init_op()
    # The same saver restores now and is written into the MetaGraph, so a
    # custom Scaffold saver reaches the SavedModel loader too.
    checkpoint_reader.check_fits(checkpoint_path, spec.scaffold)
    saver = spec.scaffold.saver or tf.compat.v1.train.Saver(sharded=True)
    if spec.train_op is not None:
      tf.compat.v1.add_to_collection(_TRAIN_OP_COLLECTION, spec.train_op)
    with tf.compat.v1.Session(graph=graph, config=session_config) as session:
      _restore(session, saver, checkpoint_path, mode)
      kwargs = dict(
          tags=EXPORT_TAGS[mode], signature_def_map=signature_def_map,
          assets_collection=tf.compat.v1.get_collection(
              tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
          main_op=local_init_op, saver=saver,
          strip_default_attrs=strip_default_attrs)
      if save_variables:
        builder.add_meta_graph_and_variables(session, **kwargs)
      else:
        builder.add_meta_graph(**kwargs)


def _write_text(export_dir, proto):
  """Writes `proto` as `export_dir`/saved_model.pbtxt with protobuf's
  `text_format`, which escapes every byte of a bytes field (TensorFlow's
  builder writes `str(proto)`, unreadable under protobuf 5.29:
  `_tf_private.saved_model_proto`;
  `tests/test_export.py::WriterTest::test_text_export_escapes_quotes`)."""
  from google.protobuf import text_format  # lazy: a text export only
  path = os.path.join(export_dir, "saved_model.pbtxt")
  with tf.io.gfile.GFile(path, "w") as f:
    f.write(text_format.MessageToString(proto))
  # The line TensorFlow's builder (and so tf.estimator 2.15) logs here.
  tf.compat.v1.logging.info("SavedModel written to: %s", path)


def _copy_assets_extra(export_dir, assets_extra):
  extra_dir = os.path.join(export_dir, "assets.extra")
  for dest_relative, source in assets_extra.items():
    dest = os.path.join(extra_dir, _as_str(dest_relative))
    tf.io.gfile.makedirs(os.path.dirname(dest))
    tf.io.gfile.copy(_as_str(source), dest, overwrite=True)


def _move_into_place(temp_dir, export_dir_base, export_dir):
  """Renames temp_dir to a free timestamped name; returns that name."""
  for _ in range(_MAX_NAME_ATTEMPTS):
    try:
      storage.move_dir_into_place(temp_dir, export_dir)
      return export_dir
    except (tf.errors.AlreadyExistsError, tf.errors.FailedPreconditionError):
      # Taken since we picked it (another exporter): pick a newer one.
      export_dir = _as_str(get_timestamped_export_dir(export_dir_base))
  raise RuntimeError(
      f"Could not move the export {temp_dir} into place under "
      f"{export_dir_base}: every timestamped name was taken.")


def _modes_to_export(input_receiver_fn_map):
  """The map's modes in writing order; ConfigError for none or unknown."""
  modes = [m for m in _MODE_ORDER if input_receiver_fn_map.get(m)]
  unknown = sorted(map(str, set(input_receiver_fn_map) - set(_MODE_ORDER)))
  if not modes or unknown:
    raise errors.ConfigError(
        "No valid modes for exporting found. Got "
        f"{sorted(map(str, input_receiver_fn_map))} (unknown: {unknown}); "
        "keys must be ModeKeys.TRAIN ('train'), ModeKeys.EVAL ('eval') or "
        "ModeKeys.PREDICT ('infer'), each mapped to a receiver function.")
  return modes


def export_all_saved_models(export_dir_base, input_receiver_fn_map,
                            build_spec_fn, checkpoint_path, *,
                            assets_extra=None, as_text=False,
                            strip_default_attrs=True, random_seed=None,
                            session_config=None):
  """Writes one SavedModel holding a MetaGraph for each requested mode.

  Modes are written TRAIN, EVAL, PREDICT (tags "train", "eval", "serve");
  the first writes the variables, restored from `checkpoint_path`.

  Args:
    export_dir_base: directory in which a timestamped export is created.
    input_receiver_fn_map: dict from ModeKeys value to a function of no
      arguments returning a receiver (`ServingInputReceiver` & co).
    build_spec_fn: `build_spec_fn(features, labels, mode)` returning an
      `EstimatorSpec`; called inside a fresh default graph that already
      has a global step.
    checkpoint_path: checkpoint prefix (or a directory: its latest one).
    assets_extra: dict from destination path (relative to `assets.extra/`)
      to source file, or None.
    as_text: write saved_model.pbtxt instead of saved_model.pb.
    strip_default_attrs: strip default-valued attributes from the graphs.
    random_seed: graph-level seed, or None.
    session_config: `tf.compat.v1.ConfigProto` for the restoring session.

  Returns:
    The export directory, as bytes.

  Raises:
    CheckpointError: the checkpoint is missing or lacks model variables.
    ConfigError: no mode of `input_receiver_fn_map` can be exported.
  """
  modes = _modes_to_export(input_receiver_fn_map)
  checkpoint_path = _resolve_checkpoint(checkpoint_path)
  base = _as_str(export_dir_base)
  if base not in _CLEANED_BASES:
    retention.remove_export_leftovers(base, started_at=_STARTED_AT)
    _CLEANED_BASES.add(base)
  export_dir = _as_str(get_timestamped_export_dir(base))
  temp_dir = os.path.join(
      base, f"{_TEMP_PREFIX}{os.path.basename(export_dir)}-{os.getpid()}")
  try:
    builder = tf.compat.v1.saved_model.Builder(temp_dir)
    for index, mode in enumerate(modes):
      _add_meta_graph_for_mode(
          builder, mode, input_receiver_fn_map[mode], build_spec_fn,
          checkpoint_path, save_variables=(index == 0),
          strip_default_attrs=strip_default_attrs, random_seed=random_seed,
          session_config=session_config)
    if as_text:
      _write_text(temp_dir, _tf_private.saved_model_proto(builder))
    else:
      builder.save(as_text=False)
    if assets_extra:
      _copy_assets_extra(temp_dir, assets_extra)
    export_dir = _move_into_place(temp_dir, base, export_dir)
  except BaseException:
    if tf.io.gfile.exists(temp_dir):
      tf.io.gfile.rmtree(temp_dir)
    raise
  logging.info("SavedModel written to: %s", export_dir)
  return os.fsencode(export_dir)
