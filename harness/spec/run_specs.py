"""TrainSpec and EvalSpec, and the check of saving listeners.

`train_and_evaluate` (`harness.training`, where 2.15's users import them
from) trains on a TrainSpec and evaluates and exports on an EvalSpec; both
check their arguments as tf.estimator 2.15 did, with its sentences.
`check_saving_listeners` is the one check of saving listeners, for a
TrainSpec and for `Estimator.train` (each with 2.15's own sentence).
"""

import collections

from harness import errors
from harness._tf import tf
from harness.export import exporter as exporter_lib
from harness.spec import estimator_spec

__all__ = ["TrainSpec", "EvalSpec", "check_saving_listeners",
           "SAVING_LISTENERS_SENTENCE_SPECS",
           "SAVING_LISTENERS_SENTENCE_TRAIN"]

# tf.estimator 2.15's first sentence for a saving listener of the wrong
# type: a TrainSpec's, and Estimator.train's.
SAVING_LISTENERS_SENTENCE_SPECS = (
    "All saving_listeners must be `CheckpointSaverListener` instances")
SAVING_LISTENERS_SENTENCE_TRAIN = (
    "saving_listeners must be a list of CheckpointSaverListener")


def check_saving_listeners(saving_listeners, sentence):
  """A list of `saving_listeners` (None: []), each a CheckpointSaverListener.

  Raises:
    ConfigTypeError: `sentence`, the listener that is not one, and the fix.
  """
  saving_listeners = list(saving_listeners or [])
  for listener in saving_listeners:
    if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
      raise errors.ConfigTypeError(
          f"{sentence}, given: {listener}\nFix: pass tf.compat.v1.train."
          "CheckpointSaverListener objects (subclass it for your own).")
  return saving_listeners


def _check_callable(input_fn, spec_name):
  if not callable(input_fn):
    raise errors.ConfigTypeError(
        f"`input_fn` must be callable, given: {input_fn}\n{spec_name}'s "
        "input_fn is not a function. Fix: pass the function itself (not its "
        "result).")


class TrainSpec(collections.namedtuple(
    "TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
  """What to train on and for how long (tf.estimator.TrainSpec)."""

  __slots__ = ()

  def __new__(cls, input_fn, max_steps=None, hooks=None,
              saving_listeners=None):
    _check_callable(input_fn, "TrainSpec")
    if max_steps is not None and max_steps <= 0:
      raise errors.ConfigError(
          f"Must specify max_steps > 0, given: {max_steps} (TrainSpec). "
          "Fix: a positive global step to stop at, or None to run until "
          "input_fn's data ends.")
    hooks = tuple(estimator_spec.check_hooks(
        hooks, "TrainSpec.hooks", sentence=estimator_spec.HOOKS_SENTENCE_SPECS))
    saving_listeners = tuple(check_saving_listeners(
        saving_listeners, SAVING_LISTENERS_SENTENCE_SPECS))
    return super().__new__(cls, input_fn=input_fn, max_steps=max_steps,
                           hooks=hooks, saving_listeners=saving_listeners)


class EvalSpec(collections.namedtuple("EvalSpec", [
    "input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs",
    "throttle_secs"])):
  """How and how often to evaluate and export (tf.estimator.EvalSpec)."""

  __slots__ = ()

  def __new__(cls, input_fn, steps=100, name=None, hooks=None,
              exporters=None, start_delay_secs=120, throttle_secs=600):
    _check_callable(input_fn, "EvalSpec")
    if steps is not None and steps <= 0:
      raise errors.ConfigError(
          f"Must specify steps > 0, given: {steps} (EvalSpec). Fix: a "
          "positive number of batches, or None for the whole input.")
    if name is not None and not isinstance(name, str):
      raise errors.ConfigTypeError(
          f"`name` must be string, given: {name}\nEvalSpec's name names the"
          " eval/ subfolder of its metrics. Fix: pass a str or None.")
    hooks = tuple(estimator_spec.check_hooks(
        hooks, "EvalSpec.hooks", sentence=estimator_spec.HOOKS_SENTENCE_SPECS))
    exporters = exporter_lib.check_exporters(exporters)
    if start_delay_secs < 0:
      raise errors.ConfigError(
          f"Must specify start_delay_secs >= 0, given: {start_delay_secs}\n"
          "Fix: 0 starts evaluating at once.")
    if throttle_secs < 0:
      raise errors.ConfigError(
          f"Must specify throttle_secs >= 0, given: {throttle_secs}\n"
          "Fix: 0 evaluates every new checkpoint.")
    return super().__new__(
        cls, input_fn=input_fn, steps=steps, name=name, hooks=hooks,
        exporters=exporters, start_delay_secs=start_delay_secs,
        throttle_secs=throttle_secs)
