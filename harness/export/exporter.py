"""Exporters: which evaluations of `train_and_evaluate` write a SavedModel.

An `EvalSpec` takes exporters; after each evaluation the evaluator calls
`exporter.export(estimator, <model_dir>/export/<exporter.name>, ...)`::

    exporter = harness.BestExporter(
        serving_input_receiver_fn=serving_input_receiver_fn,
        exports_to_keep=3)
    eval_spec = harness.EvalSpec(eval_input_fn, exporters=[exporter])

`LatestExporter` exports every time, `BestExporter` when the evaluation
beats the best one so far (read back from the eval event files after a
restart), `FinalExporter` once at the end of training. Behaviour and
messages follow tf.estimator 2.15.
"""

import abc
import os

from absl import logging

from harness import errors
from harness._tf import tf
from harness.export import gc
from harness.spec import fn_args

__all__ = ["Exporter", "LatestExporter", "BestExporter", "FinalExporter",
           "check_exporters"]

_LOSS_KEY = "loss"


class Exporter(abc.ABC):
  """A kind of model export, run after evaluations."""

  @property
  @abc.abstractmethod
  def name(self):
    """Directory name under the export base; neither None nor empty."""

  @abc.abstractmethod
  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    """Exports `estimator` (or decides not to).

    Args:
      estimator: the `Estimator` to export.
      export_path: directory in which to write the export.
      checkpoint_path: the checkpoint to export.
      eval_result: what `Estimator.evaluate` returned for this checkpoint.
      is_the_final_export: True for the export at the end of training
        (never True when `TrainSpec.max_steps` is None).

    Returns:
      The export directory, or None if the export was skipped.
    """


class _SavedModelExporter(Exporter):
  """Calls `estimator.export_saved_model`; the base of the others."""

  def __init__(self, name, serving_input_receiver_fn, assets_extra=None,
               as_text=False):
    self._name = name
    self._serving_input_receiver_fn = serving_input_receiver_fn
    self._assets_extra = assets_extra
    self._as_text = as_text

  @property
  def name(self):
    return self._name

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    del eval_result, is_the_final_export  # Exports unconditionally.
    return estimator.export_saved_model(
        export_path, self._serving_input_receiver_fn,
        assets_extra=self._assets_extra, as_text=self._as_text,
        checkpoint_path=checkpoint_path)


def _check_exports_to_keep(exports_to_keep):
  if exports_to_keep is not None and exports_to_keep <= 0:
    raise errors.ConfigError(
        "`exports_to_keep`, if provided, must be a positive number. Got "
        f"{exports_to_keep}. Fix: pass a count >= 1, or None to keep every "
        "export.")


def _garbage_collect_exports(export_dir_base, exports_to_keep):
  """Deletes all but the `exports_to_keep` newest timestamped folders.

  As 2.15: every folder named by a 10-digit timestamp counts, also one this
  exporter did not write (or an export a killed run left incomplete).
  """
  if exports_to_keep is None:
    return
  base = tf.compat.as_str_any(export_dir_base)
  if not tf.io.gfile.isdir(base):
    return
  drop = gc.negation(gc.largest_export_versions(exports_to_keep))
  for path in (p.path for p in drop(gc.get_paths(base, gc.version_parser))):
    try:
      tf.io.gfile.rmtree(path)
    except tf.errors.NotFoundError as e:
      logging.warning("Can not delete %s recursively: %s", path, e)


class LatestExporter(Exporter):
  """Exports after every evaluation; keeps the `exports_to_keep` newest."""

  def __init__(self, name, serving_input_receiver_fn, assets_extra=None,
               as_text=False, exports_to_keep=5):
    """Creates a LatestExporter for `EvalSpec(exporters=...)`.

    Args:
      name: unique name, used as the export subdirectory.
      serving_input_receiver_fn: function of no arguments returning a
        `ServingInputReceiver`.
      assets_extra: dict from path under `assets.extra/` to source file.
      as_text: write the SavedModel proto as text.
      exports_to_keep: how many exports to keep (older ones are deleted);
        None keeps all.

    Raises:
      ConfigError: `exports_to_keep` is not positive.
    """
    self._saved_model_exporter = _SavedModelExporter(
        name, serving_input_receiver_fn, assets_extra, as_text)
    _check_exports_to_keep(exports_to_keep)
    self._exports_to_keep = exports_to_keep

  @property
  def name(self):
    return self._saved_model_exporter.name

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    result = self._saved_model_exporter.export(
        estimator, export_path, checkpoint_path, eval_result,
        is_the_final_export)
    _garbage_collect_exports(export_path, self._exports_to_keep)
    return result


def _loss_smaller(best_eval_result, current_eval_result):
  """True if `current_eval_result["loss"]` is below the best one.

  Raises:
    ConfigError: either result is empty or has no "loss".
  """
  if not best_eval_result or _LOSS_KEY not in best_eval_result:
    raise errors.ConfigError(
        "best_eval_result cannot be empty or no loss is found in it.")
  if not current_eval_result or _LOSS_KEY not in current_eval_result:
    raise errors.ConfigError(
        "current_eval_result cannot be empty or no loss is found in it.")
  return best_eval_result[_LOSS_KEY] > current_eval_result[_LOSS_KEY]


def _verify_compare_fn_args(compare_fn):
  args = set(fn_args(compare_fn))
  for required in ("best_eval_result", "current_eval_result"):
    if required not in args:
      raise errors.ConfigError(
          f"compare_fn ({compare_fn}) must include {required} argument. "
          "Fix: define it as compare_fn(best_eval_result, "
          "current_eval_result) returning True when the current is better.")
  unexpected = sorted(args - {"best_eval_result", "current_eval_result"})
  if unexpected:
    raise errors.ConfigError(
        f"compare_fn ({compare_fn}) has following not expected args: "
        f"{unexpected}")


class BestExporter(Exporter):
  """Exports when an evaluation beats the best one so far.

  As in tf.estimator 2.15, an exporter's first call exports whatever the
  result (so a run that evaluates once gets its export); each later call
  exports only a result better than the best so far. When the estimator's
  model_dir changes, the best so far is read again from the eval event
  files matching `event_file_pattern`.
  """

  def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
               event_file_pattern="eval/*.tfevents.*",
               compare_fn=_loss_smaller, assets_extra=None, as_text=False,
               exports_to_keep=5):
    """Creates a BestExporter for `EvalSpec(exporters=...)`.

    Args:
      name: unique name, used as the export subdirectory.
      serving_input_receiver_fn: function of no arguments returning a
        `ServingInputReceiver`.
      event_file_pattern: glob of eval event files, relative to model_dir;
        None skips reading them (then a restart forgets the best result).
      compare_fn: `compare_fn(best_eval_result, current_eval_result)`
        returning True if the current result is better; default: lower
        "loss".
      assets_extra: dict from path under `assets.extra/` to source file.
      as_text: write the SavedModel proto as text.
      exports_to_keep: how many exports to keep (older ones are deleted);
        None keeps all.

    Raises:
      ConfigError: `compare_fn` is None or has the wrong arguments, or
        `exports_to_keep` is not positive.
    """
    if compare_fn is None:
      raise errors.ConfigError("`compare_fn` must not be None.")
    _verify_compare_fn_args(compare_fn)
    self._compare_fn = compare_fn
    self._saved_model_exporter = _SavedModelExporter(
        name, serving_input_receiver_fn, assets_extra, as_text)
    self._event_file_pattern = event_file_pattern
    self._model_dir = None
    self._best_eval_result = None
    self._has_exported = False
    _check_exports_to_keep(exports_to_keep)
    self._exports_to_keep = exports_to_keep

  @property
  def name(self):
    return self._saved_model_exporter.name

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    if self._model_dir != estimator.model_dir and self._event_file_pattern:
      logging.info("Loading best metric from event files.")
      self._model_dir = estimator.model_dir
      self._best_eval_result = self._get_best_eval_result(
          os.path.join(self._model_dir, self._event_file_pattern))
    # As 2.15: an exporter's first call always exports (a run that evaluates
    # once gets its export/best); later calls export only a better result.
    if (self._best_eval_result is None or not self._has_exported or
        self._compare_fn(best_eval_result=self._best_eval_result,
                         current_eval_result=eval_result)):
      logging.info("Performing best model export.")
      self._best_eval_result = eval_result
      result = self._saved_model_exporter.export(
          estimator, export_path, checkpoint_path, eval_result,
          is_the_final_export)
      _garbage_collect_exports(export_path, self._exports_to_keep)
      self._has_exported = True
      return result
    return None

  def _get_best_eval_result(self, event_files):
    """The best eval result in the event files matching the glob, or None."""
    if not event_files:
      return None
    best = None
    for event_file in tf.io.gfile.glob(event_files):
      for event in tf.compat.v1.train.summary_iterator(event_file):
        if not event.HasField("summary"):
          continue
        result = {value.tag: value.simple_value
                  for value in event.summary.value
                  if value.HasField("simple_value")}
        if result and (best is None or self._compare_fn(best, result)):
          best = result
    return best


class FinalExporter(Exporter):
  """Exports once, at the end of training."""

  def __init__(self, name, serving_input_receiver_fn, assets_extra=None,
               as_text=False):
    """Creates a FinalExporter for `EvalSpec(exporters=...)`.

    Args:
      name: unique name, used as the export subdirectory.
      serving_input_receiver_fn: function of no arguments returning a
        `ServingInputReceiver`.
      assets_extra: dict from path under `assets.extra/` to source file.
      as_text: write the SavedModel proto as text.
    """
    self._saved_model_exporter = _SavedModelExporter(
        name, serving_input_receiver_fn, assets_extra, as_text)

  @property
  def name(self):
    return self._saved_model_exporter.name

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    if not is_the_final_export:
      return None
    logging.info("export | %s | final export of %s", self.name,
                 os.path.basename(os.fsdecode(checkpoint_path or "")) or
                 "the latest checkpoint")
    return self._saved_model_exporter.export(
        estimator, export_path, checkpoint_path, eval_result,
        is_the_final_export)


def check_exporters(exporters):
  """EvalSpec's exporters as a tuple: Exporters with unique, non-empty names.

  Raises:
    ConfigTypeError: an item is not an Exporter (2.15's TypeError).
    ConfigError: a name is empty, not a str, or used twice.
  """
  if not exporters:
    return ()
  if isinstance(exporters, Exporter):
    exporters = [exporters]
  try:
    exporters = list(exporters)
  except TypeError:
    exporters = [exporters]
  for exporter in exporters:  # Every type first: names are read below.
    if not isinstance(exporter, Exporter):
      raise errors.ConfigTypeError(
          "`exporters` must be an Exporter, an iterable of Exporter, or "
          f"`None`, found {exporters}.\n{exporter!r} is not a harness "
          "Exporter. Fix: pass LatestExporter, BestExporter, FinalExporter "
          "or an Exporter subclass.")
  all_names = [e.name for e in exporters]
  names = set()
  for exporter in exporters:
    if not exporter.name:
      raise errors.ConfigError(
          "An Exporter cannot have a name that is `None` or empty. All "
          f"exporter names: {all_names}\nFix: give each exporter a name "
          "(its folder under export/).")
    if not isinstance(exporter.name, str):
      raise errors.ConfigError(
          "An Exporter must have a string name. Given: "
          f"{type(exporter.name)}\nFix: name it with a str.")
    if exporter.name in names:
      raise errors.ConfigError(
          "`exporters` must have unique names. Such a name cannot be `None`."
          f" All exporter names: {all_names}\nFix: {exporter.name!r} is "
          "used twice; each exporter writes to export/<name>, so rename one.")
    names.add(exporter.name)
  return tuple(exporters)
