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
from harness import estimator as estimator_lib
from harness import run_config as run_config_lib
from harness import spec as spec_lib
from harness._tf import tf
from harness.distribute import evaluator as evaluator_lib
from harness.distribute import roles
from harness.export import exporter as exporter_lib
from harness.state import run_state

__all__ = ["TrainSpec", "EvalSpec", "train_and_evaluate"]


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
    hooks = tuple(spec_lib.check_hooks(
        hooks, "TrainSpec.hooks", sentence=spec_lib.HOOKS_SENTENCE_SPECS))
    saving_listeners = tuple(saving_listeners or ())
    for listener in saving_listeners:
      if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
        raise errors.ConfigTypeError(
            "All saving_listeners must be `CheckpointSaverListener` "
            f"instances, given: {listener}\nFix: pass tf.compat.v1.train."
            "CheckpointSaverListener objects (subclass it for your own).")
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
    hooks = tuple(spec_lib.check_hooks(
        hooks, "EvalSpec.hooks", sentence=spec_lib.HOOKS_SENTENCE_SPECS))
    exporters = _validate_exporters(exporters)
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


def _validate_exporters(exporters):
  if not exporters:
    return ()
  if isinstance(exporters, exporter_lib.Exporter):
    exporters = [exporters]
  try:
    exporters = list(exporters)
  except TypeError:
    exporters = [exporters]
  names = set()
  for exporter in exporters:
    if not isinstance(exporter, exporter_lib.Exporter):
      raise errors.ConfigTypeError(
          "`exporters` must be an Exporter, an iterable of Exporter, or "
          f"`None`, found {exporters}.\n{exporter!r} is not a harness "
          "Exporter. Fix: pass LatestExporter, BestExporter, FinalExporter "
          "or an Exporter subclass.")
    all_names = [e.name for e in exporters]
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


def train_and_evaluate(estimator, train_spec, eval_spec):
  """Trains and evaluates `estimator` as its RunConfig's task says.

  Returns:
    (eval metrics dict or None, list of export results) for the local and
    evaluator roles; (None, []) for chief, worker and ps tasks.
  """
  if not isinstance(eval_spec, EvalSpec):
    raise errors.ConfigTypeError(
        "`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
        f"{type(eval_spec)}\nFix: pass harness.EvalSpec(...) (tf.estimator."
        "EvalSpec under harness.compat).")
  if not isinstance(estimator, estimator_lib.Estimator):
    raise errors.ConfigTypeError(
        "`estimator` must have type `tf.estimator.Estimator`. Got: "
        f"{type(estimator)}\nFix: pass a harness.Estimator (tf.estimator."
        "Estimator under harness.compat); canned estimators are not "
        "provided.")
  if not isinstance(train_spec, TrainSpec):
    raise errors.ConfigTypeError(
        "`train_spec` must have type `tf.estimator.TrainSpec`. Got: "
        f"{type(train_spec)}\nFix: pass harness.TrainSpec(...).")
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
  if task_type == "evaluator" and config.task_id > 0:
    raise errors.ClusterConfigError(
        "For distributed training, there can only be one `evaluator` task "
        f"(with task id 0).  Given task id {config.task_id}\nFix: run one "
        'evaluator with "index": 0 in TF_CONFIG.')
  if not task_type:
    raise errors.ClusterConfigError(
        "`estimator.config` must have task_type set. This usually means "
        "TF_CONFIG environment is not set correctly: it has a cluster but "
        'no "task". Fix: add "task": {"type": ..., "index": ...}.')
  if task_type == "local":
    raise errors.ClusterConfigError(
        "`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and "
        "`task` properties in TF_CONFIG absent triggers train and evaluate "
        "`Estimator` locally (non-distributed).\nFix: drop them for local "
        "training, or name a job of the cluster.")
  runner = _runners().get(task_type)
  if runner is None:
    raise errors.ClusterConfigError(
        f"Task type {task_type} is not supported. Supported task types are "
        f"{sorted(_runners())}\nFix: use one of those; leave `cluster` and "
        "`task` out of TF_CONFIG to train locally.")
  return runner(estimator, train_spec, eval_spec)


def _runners():
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
  evaluator.check_writable()  # Before hours of training, not after.
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
