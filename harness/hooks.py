"""Session hooks: tf.estimator's hook names, its experimental hooks, and ours.

The names tf.estimator exported at top level (`tf.estimator.SessionRunHook`,
`tf.estimator.StopAtStepHook`, ...) are TensorFlow's own
`tf.compat.v1.train` classes, re-exported unchanged so that `isinstance`
checks agree everywhere; `SummarySaverHook` is a subclass of TF's that keeps
2.15's constructor on TF 2.22 (its hooks are instances of TF's class too)::

    from harness import hooks
    stop = hooks.StopAtStepHook(last_step=1000)
    progress = hooks.ProgressLoggerHook(
        loss_tensor=loss, global_step_tensor=global_step, every_n_steps=100,
        task_label="chief/0", max_steps=1000, examples_per_step=32)

`ProgressLoggerHook` is harness's own (defined in `harness.telemetry.progress`):
one grep-able progress line every N steps, fetching tensors only on the
steps it logs. The experimental hooks of
tf.estimator 2.15 (`InMemoryEvaluatorHook`,
`make_stop_at_checkpoint_step_hook`) live here too.
"""

import os
import time

from absl import logging

from harness import errors
from harness import spec as spec_lib
from harness._tf import tf
from harness.core import evaluation
from harness.core import input_pipeline
from harness.core import train_graph
from harness.state import checkpoint_reader
from harness.telemetry.progress import ProgressLoggerHook

__all__ = [
    # tf.estimator's top-level hook names (TensorFlow's classes).
    "SessionRunHook",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunValues",
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "StepCounterHook",
    "LoggingTensorHook",
    "StopAtStepHook",
    "NanTensorHook",
    "NanLossDuringTrainingError",
    "SummarySaverHook",
    "GlobalStepWaiterHook",
    "FinalOpsHook",
    "FeedFnHook",
    "ProfilerHook",
    "SecondOrStepTimer",
    # tf.estimator.experimental.
    "InMemoryEvaluatorHook",
    "make_stop_at_checkpoint_step_hook",
    # harness's own.
    "ProgressLoggerHook",
]

_train = tf.compat.v1.train

# All of these still exist on TF 2.21 and 2.22 (checked by tests/test_hooks.py);
# SummarySaverHook, below, is a subclass keeping 2.15's constructor.
SessionRunHook = _train.SessionRunHook
SessionRunArgs = _train.SessionRunArgs
SessionRunContext = _train.SessionRunContext
SessionRunValues = _train.SessionRunValues
CheckpointSaverHook = _train.CheckpointSaverHook
CheckpointSaverListener = _train.CheckpointSaverListener
StepCounterHook = _train.StepCounterHook
LoggingTensorHook = _train.LoggingTensorHook
StopAtStepHook = _train.StopAtStepHook
NanTensorHook = _train.NanTensorHook
NanLossDuringTrainingError = _train.NanLossDuringTrainingError
GlobalStepWaiterHook = _train.GlobalStepWaiterHook
FinalOpsHook = _train.FinalOpsHook
FeedFnHook = _train.FeedFnHook
ProfilerHook = _train.ProfilerHook
SecondOrStepTimer = _train.SecondOrStepTimer


class SummarySaverHook(_train.SummarySaverHook):
  """TensorFlow's `SummarySaverHook` with tf.estimator 2.15's constructor.

  2.15 to 2.21 accept a hook with neither `output_dir` nor `summary_writer`:
  it runs the summary op and writes nothing. TF 2.22 raises `ValueError`
  there, so this subclass (what `harness.SummarySaverHook`,
  `tf.estimator.SummarySaverHook` and the 2.15 hooks modules name) hands
  TF's constructor an empty `output_dir`, which TF's `begin` reads as "no
  directory", and keeps 2.15's behaviour on every TensorFlow harness admits.
  Everything else (the scaffold / summary_op check, the writing) is TF's.
  """

  def __init__(self, save_steps=None, save_secs=None, output_dir=None,
               summary_writer=None, scaffold=None, summary_op=None):
    if output_dir is None and summary_writer is None:
      output_dir = ""  # 2.15: no writer; TF 2.22 would raise on None.
    super().__init__(save_steps=save_steps, save_secs=save_secs,
                     output_dir=output_dir, summary_writer=summary_writer,
                     scaffold=scaffold, summary_op=summary_op)


class InMemoryEvaluatorHook(SessionRunHook):
  """Evaluates the model being trained, in memory, every N training runs.

  As tf.estimator.experimental.InMemoryEvaluatorHook (2.15): the eval graph
  is built once in `begin`; at session creation, every `every_n_iter`
  `session.run` calls and at the end, the current variable values are copied
  from the training session into it (no checkpoint), the eval input is run
  to its end (or `steps` batches), and the metrics are written as events to
  `<model_dir>/eval` (or `eval_<name>`), where TensorBoard and the
  early-stopping hooks read them::

    evaluator = hooks.InMemoryEvaluatorHook(estimator, eval_input_fn)
    estimator.train(train_input_fn, hooks=[evaluator])

  Limits, as 2.15: single machine only, global variables only (no other
  saveables), no custom `Scaffold.saver` / `init_fn`; harness also refuses
  distribution strategies (NotSupportedError).
  """

  def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None,
               every_n_iter=100):
    """Creates the hook; see the class docstring.

    Raises:
      ConfigError: `every_n_iter` is not positive, or the config describes
        more than one machine.
      NotSupportedError: the estimator's config sets a distribution strategy.
    """
    if every_n_iter is None or every_n_iter <= 0:
      raise errors.ConfigError(
          f"invalid every_n_iter={every_n_iter}. Fix: pass a positive int.")
    config = estimator.config
    if config.num_ps_replicas > 0 or config.num_worker_replicas > 1:
      raise errors.ConfigError(
          "InMemoryEvaluator supports only single machine (aka Local) "
          f"setting; this config has num_ps_replicas={config.num_ps_replicas}"
          f", num_worker_replicas={config.num_worker_replicas}. Fix: run a "
          "separate evaluator task (train_and_evaluate) instead.")
    if (getattr(config, "train_distribute", None) is not None or
        getattr(config, "eval_distribute", None) is not None):
      raise errors.NotSupportedError(
          "InMemoryEvaluatorHook does not support a distribution strategy "
          "(RunConfig train_distribute / eval_distribute is set). Fix: use "
          "train_and_evaluate with an evaluator task, or drop the hook.")
    hooks = list(hooks or [])
    for hook in hooks:
      if not isinstance(hook, SessionRunHook):
        raise errors.ConfigError(
            f"Hooks must be a SessionRunHook, given: {hook!r}.")
    if steps is not None and steps <= 0:
      raise errors.ConfigError(f"Must specify steps > 0, given: {steps}.")
    self._estimator = estimator
    self._input_fn = input_fn
    self._steps = steps
    self._hooks = hooks
    self._every_n_iter = every_n_iter
    self._eval_dir = os.path.join(
        estimator.model_dir, "eval" if not name else "eval_" + name)
    self._timer = SecondOrStepTimer(every_steps=every_n_iter)
    self._graph = None
    self._iter_count = 0

  def begin(self):
    """Builds the eval graph, its metrics and the variable-copy ops."""
    self._timer.reset()
    self._iter_count = 0
    train_vars = {v.name: v for v in tf.compat.v1.global_variables()}
    self._graph = tf.Graph()
    with self._graph.as_default():
      global_step = train_graph.create_global_step(self._graph)
      features, labels, input_hooks = input_pipeline.features_and_labels(
          self._input_fn, spec_lib.ModeKeys.EVAL, self._estimator.params,
          self._estimator.config)
      spec = self._estimator.model_fn(
          features, labels, spec_lib.ModeKeys.EVAL, self._estimator.config)
      self._eval_dict, self._update_op = evaluation.eval_dict_from_spec(
          spec, global_step)
      # 2.15's ValueErrors: the evaluation graph copies variable values
      # from training, which a custom Saver or init_fn would bypass.
      fix = (" Fix: drop it from the EVAL EstimatorSpec's scaffold, or "
             "evaluate with train_and_evaluate instead of this hook.")
      if spec.scaffold.saver is not None:
        raise errors.ModelFnError(
            "InMemoryEvaluator does not support custom saver." + fix)
      if spec.scaffold.init_fn is not None:
        raise errors.ModelFnError(
            "InMemoryEvaluator does not support custom init_fn." + fix)
      if tf.compat.v1.get_collection(
          tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS):
        raise errors.ModelFnError(
            "InMemoryEvaluator does not support saveables other than global "
            "variables. Fix: keep the model's state in global variables.")
      eval_vars = tf.compat.v1.global_variables()
      shared = [v for v in eval_vars if v.name in train_vars]
      self._train_vars = {v.name: train_vars[v.name] for v in shared}
      self._placeholders = {
          v.name: tf.compat.v1.placeholder(v.dtype.base_dtype, v.shape)
          for v in shared}
      init_op = tf.group(
          [v.assign(self._placeholders[v.name]) for v in shared] +
          [tf.compat.v1.variables_initializer(
              [v for v in eval_vars if v.name not in train_vars])])
      keras_metric_vars = [
          var for metric in spec.eval_metric_ops.values()
          if isinstance(metric, tf.keras.metrics.Metric)
          for var in metric.variables]
      local_init_op = tf.group(
          tf.compat.v1.train.Scaffold.default_local_init_op(),
          tf.compat.v1.variables_initializer(keras_metric_vars))
      self._scaffold = tf.compat.v1.train.Scaffold(
          init_op=init_op, local_init_op=local_init_op,
          copy_from_scaffold=spec.scaffold)
      for hook in input_hooks:  # Their ops, before the graph is finalized.
        hook.begin()
      self._scaffold.finalize()
      self._all_hooks = (input_hooks + list(self._hooks) +
                         list(spec.evaluation_hooks))

  def after_create_session(self, session, coord):
    """Evaluates once before training starts."""
    del coord
    self._evaluate(session)

  def after_run(self, run_context, run_values):
    """Evaluates every `every_n_iter` training runs."""
    del run_values
    self._iter_count += 1
    if self._timer.should_trigger_for_step(self._iter_count):
      self._evaluate(run_context.session)

  def end(self, session):
    """Evaluates the final model."""
    self._evaluate(session)

  def _evaluate(self, train_session):
    values = train_session.run(self._train_vars)
    feed = {self._placeholders[name]: value for name, value in values.items()}
    scaffold = tf.compat.v1.train.Scaffold(
        init_feed_dict=feed, copy_from_scaffold=self._scaffold)
    final_ops = FinalOpsHook(self._eval_dict)
    runs = 0
    with self._graph.as_default():
      with tf.compat.v1.train.MonitoredSession(
          session_creator=tf.compat.v1.train.ChiefSessionCreator(
              scaffold=scaffold),
          hooks=self._all_hooks + [final_ops]) as session:
        while not session.should_stop():
          if self._steps is not None and runs >= self._steps:
            break
          session.run(self._update_op)
          runs += 1
    results = final_ops.final_ops_values
    step = int(results[evaluation.GLOBAL_STEP_KEY])
    evaluation.write_dict_to_summary(self._eval_dir, results, step)
    logging.info("eval | in-memory | step %d | %s", step, " | ".join(
        f"{k}={v}" for k, v in sorted(results.items())
        if k != evaluation.GLOBAL_STEP_KEY))
    self._timer.update_last_triggered_step(self._iter_count)
    return results


def _checkpoint_global_step(model_dir):
  """Global step of the latest checkpoint in `model_dir`, 0 if none."""
  path = tf.train.latest_checkpoint(model_dir)
  if path is None:
    return 0
  return int(checkpoint_reader.open_reader(path).get_tensor("global_step"))


class _StopAtCheckpointStepHook(SessionRunHook):
  """Stops a non-chief once a checkpoint at or past `last_step` exists."""

  def __init__(self, model_dir, last_step, wait_after_file_check_secs=30,
               sleep=None):
    if last_step is None:
      raise errors.ConfigError("last_step must be specified.")
    if model_dir is None:
      raise errors.ConfigError("model_dir must be specified.")
    self._model_dir = model_dir
    self._last_step = last_step
    self._wait_after_file_check_secs = wait_after_file_check_secs
    self._sleep = sleep
    self._global_step_tensor = None

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    if self._global_step_tensor is None:
      raise RuntimeError(
          "Global step should be created to use StopAtCheckpointStepHook.")

  def before_run(self, run_context):
    del run_context
    return SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context, run_values):
    if run_values.results + 1 < self._last_step:
      return
    # Stop only once the chief's last checkpoint is on disk, so that this
    # worker cannot finish before the model it helped train is saved.
    if _checkpoint_global_step(self._model_dir) >= self._last_step:
      run_context.request_stop()
    else:  # time.sleep looked up now, as 2.15 (tests patch it).
      (self._sleep or time.sleep)(self._wait_after_file_check_secs)


def make_stop_at_checkpoint_step_hook(estimator, last_step,
                                      wait_after_file_check_secs=30):
  """Returns a hook that stops training at `last_step`.

  As tf.estimator.experimental.make_stop_at_checkpoint_step_hook: the chief
  gets a `StopAtStepHook(last_step=last_step)`; other workers stop once the
  latest checkpoint in `estimator.model_dir` is at or past `last_step`,
  sleeping `wait_after_file_check_secs` between checks.
  """
  if estimator.config.is_chief:
    return StopAtStepHook(last_step=last_step)
  return _StopAtCheckpointStepHook(
      model_dir=estimator.model_dir, last_step=last_step,
      wait_after_file_check_secs=wait_after_file_check_secs)


class StopAtSecsHook(tf.compat.v1.train.SessionRunHook):
  """Requests a stop once `stop_after_secs` have passed since `begin`.

  2.15's `training._StopAtSecsHook`.
  """

  def __init__(self, stop_after_secs):
    self._stop_after_secs = stop_after_secs
    self._start_time = None

  def begin(self):
    self._start_time = time.time()

  def after_run(self, run_context, run_values):
    del run_values
    if time.time() - self._start_time >= self._stop_after_secs:
      run_context.request_stop()
