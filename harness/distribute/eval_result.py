"""One evaluation event, its checks and its listener (2.15's `_EvalResult`).

Usage::

    result = eval_result.EvalResult(eval_result.EvalStatus.EVALUATED,
                                    metrics, checkpoint_path)

`CheckpointEvaluator` makes one per look for a checkpoint; a
`ContinuousEvalListener`'s `after_eval` receives it (2.15's
`training._ContinuousEvalListener`).
"""

import collections

from absl import logging

from harness import errors
from harness.core import evaluation

__all__ = ["EvalStatus", "EvalResult", "ContinuousEvalListener",
           "listener_says_stop"]


class EvalStatus:
  """What one look for a checkpoint to evaluate found (2.15's _EvalStatus)."""

  EVALUATED = "evaluated"
  MISSING_CHECKPOINT = "missing checkpoint"
  NO_NEW_CHECKPOINT = "no new checkpoint"


class EvalResult(collections.namedtuple(
    "EvalResult", ["status", "metrics", "checkpoint_path"])):
  """One evaluation event, checked (2.15's `training._EvalResult`).

  An EVALUATED result holds `Estimator.evaluate`'s dict (with the global
  step) and the checkpoint it read; the others hold neither.
  """

  __slots__ = ()

  def __new__(cls, status, metrics=None, checkpoint_path=None):
    if status != EvalStatus.EVALUATED:
      if metrics or checkpoint_path:
        raise errors.ConfigError(
            f"metrics and checkpoint_path must be `None` if status is not "
            f"{EvalStatus.EVALUATED}; got status {status}, metrics "
            f"{metrics}, checkpoint_path {checkpoint_path}")
      return super().__new__(cls, status, None, None)
    if not metrics:
      raise errors.ModelFnError(
          "Internal error: `Estimator.evaluate` should never return empty "
          "metrics. Fix: the model_fn's EVAL EstimatorSpec gives a loss; an "
          "overridden `evaluate` must return its dict.")
    if not isinstance(metrics, dict):
      raise errors.ModelFnTypeError(
          f"`Estimator.evaluate` should return dict. Given {type(metrics)}."
          " Fix: an overridden `evaluate` must return the metrics dict.")
    if evaluation.GLOBAL_STEP_KEY not in metrics:
      raise errors.ModelFnError(
          "Internal error: `Estimator.evaluate` result should have "
          f"`global_step` in result. Given {metrics}. Fix: an overridden "
          "`evaluate` must keep the `global_step` entry.")
    if not checkpoint_path:
      raise errors.ConfigError(
          "Internal error: `checkpoint_path` should never be empty.")
    return super().__new__(cls, status, metrics, checkpoint_path)


class ContinuousEvalListener:
  """2.15's `training._ContinuousEvalListener`: the base class does nothing.

  `before_eval()` returning False skips that evaluation and ends the loop
  (and training, in `run_local` / `run_master`); `after_eval(eval_result)`
  gets each `_EvalResult` and ends the loop by returning False.
  """

  def before_eval(self):
    """Called before each evaluation; False stops the loop."""
    return True

  def after_eval(self, eval_result):
    """Called after each evaluation; False stops the loop."""
    del eval_result
    return True


def listener_says_stop(listener, hook, *args):
  """Calls `listener.<hook>(*args)`; True (logged) when it returned False.

  `hook` is "before_eval" or "after_eval" of 2.15's
  `_ContinuousEvalListener`; a None listener never stops anything.
  """
  if listener is None or getattr(listener, hook)(*args):
    return False
  logging.info("eval | stopping: the continuous eval listener's %s returned "
               "False", hook)
  return True
