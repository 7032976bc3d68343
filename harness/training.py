"""TrainSpec, EvalSpec and `train_and_evaluate`, dispatched by task role.

Usage::

    train_spec = harness.TrainSpec(train_input_fn, max_steps=1000)
    eval_spec = harness.EvalSpec(eval_input_fn, steps=10, exporters=[...])
    metrics, export_results = harness.train_and_evaluate(
        estimator, train_spec, eval_spec)

Without a TF_CONFIG cluster it trains locally and evaluates (and exports)
after each new checkpoint, at most once per `throttle_secs`, and always
after the last one. With TF_CONFIG, the task's type picks its runner from
`_RUNNERS` (chief, worker, master, ps, evaluator).
"""

import collections

from absl import logging

from harness import errors
from harness import evaluator as evaluator_lib
from harness import run_config as run_config_lib
from harness import run_state
from harness import spec as spec_lib
from harness._tf import tf

__all__ = ["TrainSpec", "EvalSpec", "train_and_evaluate"]


def _check_callable(input_fn, spec_name):
  if not callable(input_fn):
    raise errors.ConfigError(
        f"`input_fn` of {spec_name} must be callable, given: {input_fn!r}. "
        "Fix: pass the function itself (not its result).")


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
    hooks = tuple(spec_lib.check_hooks(hooks, "TrainSpec.hooks"))
    saving_listeners = tuple(saving_listeners or ())
    for listener in saving_listeners:
      if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
        raise errors.ConfigError(
            "All saving_listeners must be CheckpointSaverListener "
            f"instances, given: {listener!r}.")
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
      raise errors.ConfigError(
          f"`name` must be string, given: {name!r} (EvalSpec).")
    hooks = tuple(spec_lib.check_hooks(hooks, "EvalSpec.hooks"))
    exporters = _validate_exporters(exporters)
    if start_delay_secs < 0:
      raise errors.ConfigError(
          f"Must specify start_delay_secs >= 0, given: {start_delay_secs}.")
    if throttle_secs < 0:
      raise errors.ConfigError(
          f"Must specify throttle_secs >= 0, given: {throttle_secs}.")
    return super().__new__(
        cls, input_fn=input_fn, steps=steps, name=name, hooks=hooks,
        exporters=exporters, start_delay_secs=start_delay_secs,
        throttle_secs=throttle_secs)


def _validate_exporters(exporters):
  from harness import exporter as exporter_lib  # pylint: disable=g-import-not-at-top
  if exporters is None:
    return ()
  if not isinstance(exporters, (list, tuple)):
    exporters = [exporters]
  names = set()
  for exporter in exporters:
    if not isinstance(exporter, exporter_lib.Exporter):
      raise errors.ConfigError(
          f"`exporters` must be an Exporter, an iterable of Exporter, or "
          f"None, found {exporter!r}.")
    if not exporter.name or not exporter.name.strip():
      raise errors.ConfigError(
          f"An Exporter cannot have a name that is None or empty: {exporter!r}.")
    if not isinstance(exporter.name, str):
      raise errors.ConfigError(
          f"An Exporter must have a string name, given: {exporter.name!r}.")
    if exporter.name in names:
      raise errors.ConfigError(
          f"`exporters` must have unique names. Such a name cannot be "
          f"`None`. {exporter.name!r} is used twice.")
    names.add(exporter.name)
  return tuple(exporters)


def train_and_evaluate(estimator, train_spec, eval_spec):
  """Trains and evaluates `estimator` as its RunConfig's task says.

  Returns:
    (eval metrics dict or None, list of export results) for the local and
    evaluator roles; (None, []) for chief, worker and ps tasks.
  """
  from harness import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
  if not isinstance(estimator, estimator_lib.Estimator):
    raise errors.ConfigError(
        "`estimator` must have type `harness.Estimator` (tf.estimator."
        f"Estimator), given {type(estimator)}.")
  if not isinstance(train_spec, TrainSpec):
    raise errors.ConfigError(
        f"`train_spec` must have type `TrainSpec`. Got: {type(train_spec)}")
  if not isinstance(eval_spec, EvalSpec):
    raise errors.ConfigError(
        f"`eval_spec` must have type `EvalSpec`. Got: {type(eval_spec)}")
  config = estimator.config
  run_config_lib.check_supported_config(config)
  task_type = config.task_type
  if config.remote_cluster is not None:
    logging.info("train_and_evaluate | client | training on the remote "
                 "cluster %s, evaluating in this process",
                 config.remote_cluster)
    return _run_local(estimator, train_spec, eval_spec, label="client")
  if not config.cluster_spec.as_dict() and task_type != "evaluator":
    logging.info("train_and_evaluate | local | training and evaluating in "
                 "this process (no TF_CONFIG cluster)")
    return _run_local(estimator, train_spec, eval_spec)
  if not task_type:
    raise errors.ClusterConfigError(
        "`estimator.config` must have task_type set. This usually means "
        "TF_CONFIG environment is not set correctly: it has a cluster but "
        'no "task". Fix: add "task": {"type": ..., "index": ...}.')
  runner = _runners().get(task_type)
  if runner is None:
    raise errors.ClusterConfigError(
        f"Task type {task_type!r} is not supported. Supported task types "
        f"are {sorted(_runners())}. Leave `cluster` and `task` out of "
        "TF_CONFIG to train locally.")
  return runner(estimator, train_spec, eval_spec)


def _runners():
  from harness import roles  # pylint: disable=g-import-not-at-top
  return {
      "chief": roles.run_chief,
      "master": roles.run_master,
      "worker": roles.run_worker,
      "ps": roles.run_ps,
      "evaluator": run_evaluator,
  }


def _run_local(estimator, train_spec, eval_spec, label="local"):
  config = estimator.config
  every = (f"{config.save_checkpoints_steps} steps"
           if config.save_checkpoints_steps else
           f"{config.save_checkpoints_secs} s"
           if config.save_checkpoints_secs else "- (none saved)")
  logging.info(
      "train_and_evaluate | %s | checkpoint every %s, then evaluate "
      "(throttle_secs=%s)", label, every, eval_spec.throttle_secs)
  evaluator = evaluator_lib.CheckpointEvaluator(
      estimator, eval_spec, train_spec.max_steps)
  listener = evaluator_lib.NewCheckpointListener(
      evaluator, eval_spec.throttle_secs)
  run_state.clear_training_stopped(estimator.model_dir)
  estimator.train(
      input_fn=train_spec.input_fn, max_steps=train_spec.max_steps,
      hooks=list(train_spec.hooks),
      saving_listeners=list(train_spec.saving_listeners) + [listener])
  if listener.eval_result is None:
    # Training was skipped (already at max_steps): evaluate what is there.
    metrics, exports = evaluator.evaluate_and_export()
    return metrics, exports
  return listener.eval_result, listener.export_results


def run_evaluator(estimator, train_spec, eval_spec):
  """The `evaluator` task: evaluate new checkpoints until training ends."""
  logging.info("train_and_evaluate | evaluator/0 | watching %s",
               estimator.model_dir)
  return evaluator_lib.run_continuous(estimator, train_spec, eval_spec)
