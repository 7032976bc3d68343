"""Evaluating one checkpoint and running the EvalSpec's exporters on it.

`CheckpointEvaluator` evaluates the latest checkpoint once (unless it saw it
already) and exports. Local `train_and_evaluate` calls it after saves
(`save_listener.NewCheckpointListener`); the evaluator task's loop
(`evaluator.run_continuous`) after each new checkpoint. An export in
progress finishes before a stop signal takes effect.
"""

import os

from absl import logging

from harness._tf import tf
from harness.core import evaluation
from harness.distribute import eval_result
from harness.guard import stop_signal
from harness.state import storage

__all__ = ["CheckpointEvaluator"]


class CheckpointEvaluator:
  """Evaluates the latest checkpoint once and runs the exporters on it."""

  def __init__(self, estimator, eval_spec, max_training_steps):
    self._estimator = estimator
    self._eval_spec = eval_spec
    self._max_training_steps = max_training_steps
    self._previous_checkpoint = None
    self.final_export_done = False
    self.last_metrics = None
    self.last_evaluated_step = None
    self.last_result = None  # The EvalResult of the last look.

  def check_writable(self):
    """Fails now, not after training, if eval/ or export/ cannot be written."""
    folders = [self._estimator.eval_dir(self._eval_spec.name)] + [
        self._export_path(exporter) for exporter in self._eval_spec.exporters]
    for folder in folders:
      # A stand-in estimator (2.15's executor tests pass a Mock) has no
      # folders to probe; 2.15 probed none.
      if isinstance(folder, (str, bytes, os.PathLike)):
        storage.check_writable(folder)

  def _export_path(self, exporter):
    return os.path.join(tf.compat.as_str_any(self._estimator.model_dir),
                        "export", exporter.name)

  @property
  def max_training_steps(self):
    """TrainSpec's max_steps (None: no end step)."""
    return self._max_training_steps

  def latest_checkpoint(self):
    """The estimator's newest checkpoint, or None.

    harness's Estimator skips a corrupt newest one with a warning naming
    its file.
    """
    return self._estimator.latest_checkpoint()

  def evaluate_and_export(self, checkpoint_path=None):
    """Evaluates `checkpoint_path` (None: the latest) unless seen already.

    Returns:
      (metrics or None, export_results list); `last_result` says which.
    """
    path = checkpoint_path or self.latest_checkpoint()
    if not path:
      logging.debug("eval | no checkpoint yet in %s",
                    self._estimator.model_dir)
      self.last_result = eval_result.EvalResult(
          eval_result.EvalStatus.MISSING_CHECKPOINT)
      return None, []
    if path == self._previous_checkpoint:
      logging.debug("eval | no new checkpoint since %s", path)
      self.last_result = eval_result.EvalResult(
          eval_result.EvalStatus.NO_NEW_CHECKPOINT)
      return None, []
    try:
      with stop_signal.STOP_SIGNAL.stage_as(
          f"an evaluation (of {_file_name(path)})"):
        metrics = self._estimator.evaluate(
            input_fn=self._eval_spec.input_fn, steps=self._eval_spec.steps,
            name=self._eval_spec.name, checkpoint_path=path,
            hooks=self._eval_spec.hooks)
    except (ValueError, tf.errors.NotFoundError):
      if tf.io.gfile.exists(path + ".index"):
        raise
      # The Saver deleted it (keep_checkpoint_max) while training raced
      # ahead; the next poll takes the newest one.
      logging.info("eval | %s was deleted before it was evaluated; taking "
                   "the newest checkpoint instead", path)
      self.last_result = eval_result.EvalResult(
          eval_result.EvalStatus.NO_NEW_CHECKPOINT)
      return None, []
    self.last_result = eval_result.EvalResult(
        eval_result.EvalStatus.EVALUATED, metrics, path)
    step = int(metrics[evaluation.GLOBAL_STEP_KEY])
    is_final = bool(self._max_training_steps) and (
        step >= self._max_training_steps)
    exports = self.export(metrics, path, is_final)
    self._previous_checkpoint = path
    self.last_metrics = metrics
    self.last_evaluated_step = step
    return metrics, exports

  @property
  def previous_checkpoint(self):
    """The checkpoint evaluated last, or None."""
    return self._previous_checkpoint

  def export(self, metrics, checkpoint_path, is_the_final_export):
    """Runs every exporter of the EvalSpec; returns their results. An
    export in progress finishes (a stop signal waits for it); SIGTERM in the
    final ones: all complete and the job is done (exit 0), not preempted."""
    results, stopped = [], None
    for exporter in self._eval_spec.exporters:
      try:
        with stop_signal.STOP_SIGNAL.finishing(
            f"an export ({exporter.name}, {_file_name(checkpoint_path)})"):
          results.append(exporter.export(
              estimator=self._estimator,
              export_path=self._export_path(exporter),
              checkpoint_path=checkpoint_path, eval_result=metrics,
              is_the_final_export=is_the_final_export))
      except stop_signal.Terminated as e:
        if not is_the_final_export:
          raise
        stopped = e
    if is_the_final_export:
      self.final_export_done = True
    if stopped is not None:  # No stop line, no bound: the job ends now.
      stop_signal.STOP_SIGNAL.terminated_in = None
      stop_signal.STOP_SIGNAL.boundary_reached("after the final export")
      logging.warning("eval | SIGTERM during the final export (%s): the "
                      "job is done, not preempted", stopped.stage)
    return results


def _file_name(path):
  """A checkpoint path's last part, for a stage line (any type: 2.15 passed
  `latest_checkpoint`'s value on unread)."""
  return str(path).rsplit("/", 1)[-1]
