"""The early-stopping functions: a metric predicate -> the hook for a task.

`make_early_stopping_hook` and the `stop_if_*` helpers of 2.15; the hooks
themselves are `harness.early_stopping.stop_hooks`. Imported through the
door, `harness.early_stopping`.
"""

import collections
import operator
import os

from absl import logging

from harness import errors
from harness import estimator as estimator_lib
from harness._tf import tf
from harness.early_stopping import stop_hooks as early_stopping_hooks
from harness.state import run_state

__all__ = [
    "make_early_stopping_hook",
    "stop_if_higher_hook",
    "stop_if_lower_hook",
    "stop_if_no_increase_hook",
    "stop_if_no_decrease_hook",
    "read_eval_metrics",
    "write_training_stopped_marker",
    "read_training_stopped_marker",
]

_EVENT_FILE_GLOB_PATTERN = "events.out.tfevents.*"




def _check_estimator(estimator):
  if not isinstance(estimator, estimator_lib.Estimator):
    raise early_stopping_hooks.ArgumentTypeError(
        "`estimator` must have type `tf.estimator.Estimator`. Got: "
        f"{type(estimator)}. Fix: pass a harness.Estimator.")


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60,
                             run_every_steps=None):
  """Returns a hook that stops training when `should_stop_fn()` returns True.

  Args:
    estimator: a `harness.Estimator`.
    should_stop_fn: callable of no arguments returning a bool; called by the
      chief (by every worker under a collective strategy).
    run_every_secs: call `should_stop_fn` at most every this many seconds.
    run_every_steps: or every this many global steps. Exactly one of the two
      must be set; a collective multi-worker strategy needs `run_every_steps`
      (all workers must check at the same step).

  Returns:
    A `SessionRunHook`.

  Raises:
    TypeError (`ConfigError`): `estimator` is not an Estimator, or
      `should_stop_fn` is not callable.
    ConfigError: both or neither of `run_every_secs` and `run_every_steps`
      are set, or `run_every_secs` is set under a collective strategy.
  """
  _check_estimator(estimator)
  if run_every_secs is not None and run_every_steps is not None:
    raise errors.ConfigError(
        "Only one of `run_every_secs` and `run_every_steps` must be set "
        f"(given run_every_secs={run_every_secs}, run_every_steps="
        f"{run_every_steps}). Fix: pass run_every_secs=None to count steps.")
  if run_every_secs is None and run_every_steps is None:
    raise errors.ConfigError(
        "One of `run_every_secs` and `run_every_steps` must be set.")
  if not callable(should_stop_fn):
    raise early_stopping_hooks.ArgumentTypeError(
        f"`should_stop_fn` must be callable, given: {should_stop_fn!r}.")
  config = estimator.config
  strategy = config.train_distribute
  if config.strategy_kind and config.strategy_kind.lockstep:
    if run_every_secs:
      raise errors.ConfigError(
          "run_every_secs should not be set when using "
          "MultiWorkerMirroredStrategy: every worker must check at the same "
          "step. Fix: pass run_every_secs=None, run_every_steps=N.")
    return early_stopping_hooks.CollectiveEarlyStoppingHook(
        should_stop_fn, run_every_steps, strategy=strategy,
        model_dir=estimator.model_dir, is_chief=config.is_chief)
  signal = config.num_worker_replicas > 1
  if config.is_chief:
    return early_stopping_hooks.StopOnPredicateHook(
        should_stop_fn, run_every_secs, run_every_steps,
        model_dir=estimator.model_dir, signal_workers=signal,
        num_ps_replicas=config.num_ps_replicas)
  return early_stopping_hooks.CheckForStoppingHook(
      num_ps_replicas=config.num_ps_replicas)


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None,
                        min_steps=0, run_every_secs=60, run_every_steps=None):
  """Stops training once `metric_name` is higher than `threshold`.

  Args:
    estimator: a `harness.Estimator`.
    metric_name: the eval metric to track, e.g. "accuracy".
    threshold: the value to exceed.
    eval_dir: where the eval events are; default `estimator.eval_dir()`.
    min_steps: never stop below this global step.
    run_every_secs: see `make_early_stopping_hook`.
    run_every_steps: see `make_early_stopping_hook`.

  Returns:
    A `SessionRunHook`.
  """
  return _threshold_hook(estimator, metric_name, threshold, operator.gt,
                         "greater than", eval_dir, min_steps, run_every_secs,
                         run_every_steps)


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None,
                       min_steps=0, run_every_secs=60, run_every_steps=None):
  """Stops training once `metric_name` is lower than `threshold`.

  Arguments as `stop_if_higher_hook`.
  """
  return _threshold_hook(estimator, metric_name, threshold, operator.lt,
                         "less than", eval_dir, min_steps, run_every_secs,
                         run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name,
                             max_steps_without_increase, eval_dir=None,
                             min_steps=0, run_every_secs=60,
                             run_every_steps=None):
  """Stops training when `metric_name` has not increased for N steps.

  Args:
    estimator: a `harness.Estimator`.
    metric_name: the eval metric to track.
    max_steps_without_increase: global steps allowed without a new best.
    eval_dir: where the eval events are; default `estimator.eval_dir()`.
    min_steps: evaluations below this global step are ignored.
    run_every_secs: see `make_early_stopping_hook`.
    run_every_steps: see `make_early_stopping_hook`.

  Returns:
    A `SessionRunHook`.
  """
  return _no_improvement_hook(estimator, metric_name,
                              max_steps_without_increase, operator.gt,
                              "increase", eval_dir, min_steps, run_every_secs,
                              run_every_steps)


def stop_if_no_decrease_hook(estimator, metric_name,
                             max_steps_without_decrease, eval_dir=None,
                             min_steps=0, run_every_secs=60,
                             run_every_steps=None):
  """Stops training when `metric_name` has not decreased for N steps.

  Arguments as `stop_if_no_increase_hook`.
  """
  return _no_improvement_hook(estimator, metric_name,
                              max_steps_without_decrease, operator.lt,
                              "decrease", eval_dir, min_steps, run_every_secs,
                              run_every_steps)


def _default_eval_dir(estimator, eval_dir):
  if eval_dir is not None:
    return eval_dir
  if hasattr(estimator, "eval_dir"):
    return estimator.eval_dir()
  return os.path.join(estimator.model_dir, "eval")


def _metric(metrics, metric_name, step, eval_dir):
  if metric_name not in metrics:
    raise errors.ConfigError(
        f"Early stopping metric {metric_name!r} is not in the eval results "
        f"of step {step} in {eval_dir} (they have: {sorted(metrics)}). Fix: "
        "pass one of those names, or add the metric to eval_metric_ops.")
  return metrics[metric_name]


def _threshold_hook(estimator, metric_name, threshold, is_better, wording,
                    eval_dir, min_steps, run_every_secs, run_every_steps):
  eval_dir = _default_eval_dir(estimator, eval_dir)

  def should_stop():
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step < min_steps:
        continue
      value = _metric(metrics, metric_name, step, eval_dir)
      if is_better(value, threshold):
        logging.info(
            'At step %s, metric "%s" has value %s which is %s the configured '
            "threshold (%s) for early stopping.", step, metric_name, value,
            wording, threshold)
        return True
    return False

  return make_early_stopping_hook(estimator, should_stop, run_every_secs,
                                  run_every_steps)


def _no_improvement_hook(estimator, metric_name, max_steps, is_better,
                         wording, eval_dir, min_steps, run_every_secs,
                         run_every_steps):
  eval_dir = _default_eval_dir(estimator, eval_dir)

  def should_stop():
    best_value, best_step = None, None
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step < min_steps:
        continue
      value = _metric(metrics, metric_name, step, eval_dir)
      if best_value is None or is_better(value, best_value):
        best_value, best_step = value, step
      if step - best_step >= max_steps:
        logging.info(
            'No %s in metric "%s" for %s steps, which is greater than or '
            "equal to max steps (%s) configured for early stopping.", wording,
            metric_name, step - best_step, max_steps)
        return True
    return False

  return make_early_stopping_hook(estimator, should_stop, run_every_secs,
                                  run_every_steps)


def _scalar_values(summary):
  """Yields (tag, float) for each scalar in a Summary proto."""
  for value in summary.value:
    if value.HasField("simple_value"):
      yield value.tag, value.simple_value
    elif value.HasField("tensor"):
      # TF2-style scalar summaries store a rank-0 tensor.
      try:
        array = tf.make_ndarray(value.tensor)
      except (TypeError, ValueError):
        continue
      if array.size == 1 and array.dtype.kind in "fiu":
        yield value.tag, float(array.reshape(()))


def read_eval_metrics(eval_dir):
  """Reads the eval metrics in `eval_dir`'s event files.

  Args:
    eval_dir: directory holding `events.out.tfevents.*` files.

  Returns:
    An OrderedDict from global step to {metric name: float}, ascending by
    step; empty if the directory does not exist. A corrupt file tail is
    skipped with a warning.
  """
  by_step = collections.defaultdict(dict)
  if tf.io.gfile.exists(eval_dir):
    pattern = os.path.join(eval_dir, _EVENT_FILE_GLOB_PATTERN)
    for event_file in sorted(tf.io.gfile.glob(pattern)):
      try:
        for event in tf.compat.v1.train.summary_iterator(event_file):
          if event.HasField("summary"):
            metrics = dict(_scalar_values(event.summary))
            if metrics:
              by_step[event.step].update(metrics)
      except tf.errors.DataLossError as e:
        logging.warning(
            "Skipping the rest of the corrupt event file %s: %s", event_file, e)
  return collections.OrderedDict(sorted(by_step.items()))


def write_training_stopped_marker(model_dir, reason, global_step):
  """Writes `<model_dir>/training_stopped` atomically (`harness.state.run_state`).

  Args:
    model_dir: the model directory.
    reason: why training stopped, e.g. "early_stopping".
    global_step: the global step training stopped at.

  Returns:
    The marker's path.
  """
  run_state.write_training_stopped(model_dir, reason, global_step)
  return os.path.join(model_dir, run_state.MARKER_NAME)


def read_training_stopped_marker(model_dir):
  """Reads `<model_dir>/training_stopped`.

  Returns:
    None if there is no marker, else a dict with "reason" and "global_step"
    (an unreadable marker still means training stopped: its reason is
    "unreadable marker").
  """
  return run_state.read_training_stopped(model_dir)
