"""Warm start: initialise a new model's variables from an existing checkpoint.

As tf.estimator 2.15 (`tf.estimator.WarmStartSettings`, `VocabInfo`,
`Estimator(warm_start_from=...)`)::

    settings = warm_start.get_default_warm_start_settings("/models/previous")
    with graph.as_default():
      ...  # build the model (model_fn)
      warm_start.warm_start(settings)  # before the session is created
      with tf.compat.v1.train.MonitoredTrainingSession(...) as session:
        ...

Variables are overridden only through their initialisers, so a checkpoint
already in the new `model_dir` still wins: warm start matters only for the
first session of a fresh model.
"""

import collections
import os

from absl import logging

from harness import errors
from harness._tf import tf
from harness.state import checkpoints

__all__ = [
    "VocabInfo",
    "WarmStartSettings",
    "get_default_warm_start_settings",
    "warm_start",
    "unless_restoring",
]

# TensorFlow's own class, unchanged (tf.estimator.VocabInfo was this too).
VocabInfo = tf.compat.v1.train.VocabInfo

_SAVED_MODEL_VARIABLES = os.path.join("variables", "variables")


class WarmStartSettings(
    collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start",
        "var_name_to_vocab_info", "var_name_to_prev_var_name"])):
  """Which checkpoint to warm-start from, and which variables, how.

  Attributes:
    ckpt_to_initialize_from: a checkpoint path, or a directory whose latest
      checkpoint is used. Required.
    vars_to_warm_start: a regular expression over TRAINABLE_VARIABLES names
      (default '.*': every trainable variable), a list of variables or of
      full variable names, or None to warm-start only the variables in
      `var_name_to_vocab_info`.
    var_name_to_vocab_info: {variable name: `VocabInfo`} for variables whose
      rows follow a vocabulary that changed (rows are remapped by token).
    var_name_to_prev_var_name: {variable name: its name in the checkpoint}
      for renamed variables.
  """

  __slots__ = ()

  def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*",
              var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
    if not ckpt_to_initialize_from:
      raise errors.ConfigError(
          "`ckpt_to_initialize_from` MUST be set in WarmStartSettings "
          f"(given: {ckpt_to_initialize_from!r}). Fix: pass a checkpoint "
          "path or a model directory.")
    return super().__new__(
        cls, ckpt_to_initialize_from, vars_to_warm_start,
        var_name_to_vocab_info or {}, var_name_to_prev_var_name or {})


def get_default_warm_start_settings(warm_start_from):
  """Turns an Estimator's `warm_start_from` into `WarmStartSettings`.

  Args:
    warm_start_from: None; a path (str, bytes or os.PathLike) to a
      checkpoint, to a model directory (its latest checkpoint), or to a
      SavedModel directory (its `variables/variables`); or WarmStartSettings.

  Returns:
    None or a `WarmStartSettings` (warm-starting every trainable variable
    when a path was given).

  Raises:
    ConfigError: `warm_start_from` is of another type.
  """
  if warm_start_from is None:
    return None
  if isinstance(warm_start_from, WarmStartSettings):
    return warm_start_from
  if isinstance(warm_start_from, (str, bytes, os.PathLike)):
    path = os.fsdecode(warm_start_from)
    saved_model_vars = os.path.join(path, _SAVED_MODEL_VARIABLES)
    if tf.io.gfile.exists(saved_model_vars + ".index"):
      logging.info("Warm-starting from a SavedModel: %s", path)
      return WarmStartSettings(ckpt_to_initialize_from=saved_model_vars)
    return WarmStartSettings(ckpt_to_initialize_from=path)
  raise errors.ConfigError(
      "warm_start_from must be a string or a WarmStartSettings, instead got "
      f"{type(warm_start_from)}: {warm_start_from!r}.")


def _resolve_checkpoint(ckpt_to_initialize_from):
  """Returns the checkpoint prefix `ckpt_to_initialize_from` names."""
  path = os.fsdecode(ckpt_to_initialize_from)
  prefix, is_directory = checkpoints.resolve_prefix(path)
  if prefix is None and is_directory:
    raise errors.CheckpointError(
          f"Cannot warm-start from {path}: the directory holds no "
          "checkpoint (no `checkpoint` file naming one). Fix: point "
          "warm_start_from at a model_dir that was trained, a checkpoint "
          "prefix such as model.ckpt-1000, or a SavedModel directory.")
  if prefix is None:
    raise errors.CheckpointError(
        f"Cannot warm-start from {path}: no such checkpoint ({path}.index "
        "does not exist) and no such directory. Fix: pass an existing "
        "checkpoint prefix (without .index) or model directory.")
  return prefix


def warm_start(settings):
  """Warm-starts the variables of the default graph, per `settings`.

  Call it after the model is built and before the session is created; it
  replaces the initialisers of the selected variables with reads from the
  checkpoint.

  Args:
    settings: a `WarmStartSettings`, or anything
      `get_default_warm_start_settings` accepts (None does nothing).

  Raises:
    CheckpointError: the checkpoint does not exist or lacks a variable.
    ConfigError: the settings do not match the graph (e.g. a
      `var_name_to_vocab_info` key names no variable, shapes differ).
  """
  settings = get_default_warm_start_settings(settings)
  if settings is None:
    return
  ckpt = _resolve_checkpoint(settings.ckpt_to_initialize_from)
  logging.info("Warm-starting with WarmStartSettings: %s", settings)
  try:
    tf.compat.v1.train.warm_start(
        ckpt_to_initialize_from=ckpt,
        vars_to_warm_start=settings.vars_to_warm_start,
        var_name_to_vocab_info=settings.var_name_to_vocab_info,
        var_name_to_prev_var_name=settings.var_name_to_prev_var_name)
  except tf.errors.NotFoundError as e:
    raise errors.CheckpointError(
        f"Warm-starting from {ckpt} failed: {e.message} Fix: map the "
        "variable's new name to its checkpoint name with "
        "WarmStartSettings(var_name_to_prev_var_name=...), or narrow "
        "vars_to_warm_start.") from e
  except ValueError as e:
    if isinstance(e, errors.HarnessError):
      raise
    raise errors.ConfigError(
        f"Warm-starting from {ckpt} failed: {e} Fix: make "
        "WarmStartSettings match the model's variables (names, shapes, "
        "vocabularies).") from e


def unless_restoring(settings, checkpoint_path):
  """Evaluate's and predict's warm start (as 2.15): only with no checkpoint.

  Args:
    settings: as `warm_start` (None does nothing).
    checkpoint_path: the checkpoint the session will restore, or None.
  """
  if not checkpoint_path:
    warm_start(settings)
