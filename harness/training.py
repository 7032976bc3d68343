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
import time

from absl import logging

from harness import errors
from harness import estimator as estimator_lib
from harness import run_config as run_config_lib
from harness import spec as spec_lib
from harness._tf import tf
from harness.distribute import evaluator as evaluator_lib
from harness.distribute import roles
from harness.export import exporter as exporter_lib
from harness.state import checkpoints
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
  for exporter in exporters:  # Every type first: names are read below.
    if not isinstance(exporter, exporter_lib.Exporter):
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


def train_and_evaluate(estimator, train_spec, eval_spec):
  """Trains and evaluates `estimator` as its RunConfig's task says.

  Returns:
    (eval metrics dict or None, list of export results) for the local and
    evaluator roles; (None, []) for chief, worker and ps tasks.
  """
  _check_eval_spec(eval_spec)
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
  return _runners()[task_to_run(estimator)](estimator, train_spec, eval_spec)


def _check_eval_spec(eval_spec):
  """2.15's TypeError for a missing or wrong EvalSpec where one is needed."""
  if not isinstance(eval_spec, EvalSpec):
    raise errors.ConfigTypeError(
        "`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
        f"{type(eval_spec)}\nFix: pass harness.EvalSpec(...) (tf.estimator."
        "EvalSpec under harness.compat).")


def task_to_run(estimator):
  """The runner `train_and_evaluate` picks for `estimator.config`'s task.

  Returns:
    "local" (no TF_CONFIG cluster, or a remote cluster's client) or the
    task type: "chief", "master", "worker", "ps" or "evaluator".

  Raises:
    ClusterConfigError: the task cannot run (2.15's checks and sentences,
      then harness's rules of `check_supported_config`).
  """
  config = estimator.config
  task_type = _task_type_to_run(config)
  run_config_lib.check_supported_config(config)
  if config.remote_cluster is not None:
    logging.info("train_and_evaluate | client | training on the remote "
                 "cluster %s, evaluating in this process",
                 config.remote_cluster)
  elif task_type == "local":
    logging.info("train_and_evaluate | local | training and evaluating in "
                 "this process (no TF_CONFIG cluster)")
  return task_type


def _task_type_to_run(config):
  """`task_to_run`'s choice under 2.15's checks, in 2.15's order."""
  task_type = config.task_type
  if config.remote_cluster is not None or (
      not config.cluster_spec.as_dict() and task_type != "evaluator"):
    return "local"
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
  if task_type not in _runners():
    raise errors.ClusterConfigError(  # 2.15's sentence, on one line.
        f"Task type {task_type} is not supported. Supported task types are "
        f"{sorted(set(_runners()) - {'local'})}. Fix: use one of those; "
        "without `cluster` and `task` in TF_CONFIG, it trains in this "
        "process.")
  return task_type


def _runners():
  return {
      "chief": roles.run_chief,
      "master": roles.run_master,
      "worker": roles.run_worker,
      "ps": roles.run_ps,
      "evaluator": run_evaluator,
      "local": run_local,
  }


def run_local(estimator, train_spec, eval_spec):
  """Trains here, evaluating (and exporting) after new checkpoints."""
  config = estimator.config
  label = config.task_label  # "client" or "local": run_local has no cluster.
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


class _StopAtSecsHook(tf.compat.v1.train.SessionRunHook):
  """Requests a stop once `stop_after_secs` have passed since `begin`."""

  def __init__(self, stop_after_secs):
    self._stop_after_secs = stop_after_secs
    self._start_time = None

  def begin(self):
    self._start_time = time.time()

  def after_run(self, run_context, run_values):
    del run_values
    if time.time() - self._start_time >= self._stop_after_secs:
      run_context.request_stop()


class _ContinuousEvalListener:
  """2.15's hook into the evaluator's loop: the base class does nothing.

  harness's evaluator does not call a custom listener, so `_TrainingExecutor`
  refuses a subclass (NotSupportedError) rather than ignore it.
  """

  def before_eval(self):
    """Called before each evaluation; False stops the loop."""
    return True

  def after_eval(self, eval_result):
    """Called after each evaluation; False stops the loop."""
    del eval_result
    return True


class _TrainingExecutor:
  """2.15's per-task runner of `train_and_evaluate`, kept for subclasses.

  `run()` calls `run_<task>()` for the RunConfig's task (`run_local` without
  a TF_CONFIG cluster); each runs harness's runner for that role, so a
  subclass may override one of them. `train_hooks` join `train_spec.hooks`.
  """

  def __init__(self, estimator, train_spec, eval_spec, train_hooks=None,
               continuous_eval_listener=None):
    if not isinstance(estimator, estimator_lib.Estimator):
      raise errors.ConfigTypeError(
          "`estimator` must have type `tf.estimator.Estimator`. Fix: pass "
          f"a harness.Estimator, not {type(estimator)}.")
    if not isinstance(train_spec, TrainSpec):
      raise errors.ConfigTypeError(
          "`train_spec` must have type `tf.estimator.TrainSpec`. Fix: pass "
          f"harness.TrainSpec(...), not {type(train_spec)}.")
    if eval_spec is not None and not isinstance(eval_spec, EvalSpec):
      raise errors.ConfigTypeError(
          "`eval_spec` must be either `None` or have type "
          f"`tf.estimator.EvalSpec`. Fix: pass harness.EvalSpec(...), not "
          f"{type(eval_spec)}.")
    listener = continuous_eval_listener or _ContinuousEvalListener()
    if not isinstance(listener, _ContinuousEvalListener):
      raise errors.ConfigTypeError(
          "`continuous_eval_listener` must have type "
          "`_ContinuousEvalListener`. Fix: pass None.")
    if type(listener) is not _ContinuousEvalListener:  # pylint: disable=unidiomatic-typecheck
      raise errors.NotSupportedError(
          f"continuous_eval_listener {listener!r}: harness's evaluator does "
          "not call a custom listener. Fix: pass None, and stop evaluation "
          "with EvalSpec / TrainSpec.max_steps instead.")
    hooks = spec_lib.check_hooks(train_hooks, "train_hooks",
                                 sentence=spec_lib.HOOKS_SENTENCE_SPECS)
    self._estimator = estimator
    self._train_spec = train_spec
    self._train_hooks = tuple(hooks)
    self._eval_spec = eval_spec
    self._continuous_eval_listener = listener

  @property
  def estimator(self):
    return self._estimator

  def run(self):
    """Runs this task's role; returns what its `run_<task>` returns."""
    return getattr(self, f"run_{task_to_run(self._estimator)}")()

  def _run(self, runner):
    train_spec = self._train_spec
    if self._train_hooks:  # Read only by the roles that train, as in 2.15.
      train_spec = train_spec._replace(
          hooks=tuple(train_spec.hooks) + self._train_hooks)
    return runner(self._estimator, train_spec, self._eval_spec)

  def run_chief(self):
    return self._run(roles.run_chief)

  def run_worker(self):
    return self._run(roles.run_worker)

  def run_master(self):
    _check_eval_spec(self._eval_spec)
    return self._run(roles.run_master)

  def run_ps(self):
    return self._run(roles.run_ps)

  def run_evaluator(self):
    return self._run(run_evaluator)

  def run_local(self):
    _check_eval_spec(self._eval_spec)
    return self._run(run_local)


def load_global_step_from_checkpoint_dir(checkpoint_dir):
  """The global step of the latest checkpoint in `checkpoint_dir`.

  2.15's `estimator._load_global_step_from_checkpoint_dir`: 0 when there is
  no checkpoint or it cannot be read.
  """
  try:
    step = checkpoints.global_step_of(
        tf.train.latest_checkpoint(checkpoint_dir))
  except (tf.errors.OpError, ValueError, TypeError):
    return 0
  return step or 0
