"""The training loop behind `Estimator.train`.

`core/train_graph`'s `build_local` / `build_distributed` build the TRAIN
graph. `run` then, the chief holding model_dir's lease, drives a
`MonitoredSession` with tf.estimator's hooks: NaN loss check, progress
logging, checkpoint saving on the chief (with listeners), summaries, steps/s.
"""

import dataclasses
import time

from absl import logging

from harness import _tf_private
from harness import spec as spec_lib
from harness._tf import tf
from harness.core import auto_loop
from harness.core import chief_hooks
from harness.core import step_loop
from harness.core import worker_session
from harness.guard import first_batch
from harness.guard import guard_hook
from harness.guard import preemption
from harness.guard import watchdog
from harness.spec import run_specs
from harness.state import checkpoint_reader
from harness.state import checkpoints
from harness.state import lease as lease_lib
from harness.state import retention
from harness.state import run_state
from harness.telemetry import live_metrics
from harness.telemetry import progress

__all__ = ["TrainContext", "StopAtStepHook", "run"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainContext:
  """Where and as whom this process trains.

  Attributes:
    master: session target ("" in-process, "grpc://..." for a server).
    is_chief: writes checkpoints and summaries.
    should_init: initialises (or restores) variables itself. True on the
      chief, and on every worker of a collective strategy (each holds its
      own copy); False on ps-style workers, which wait for the chief.
    session_config: ConfigProto for the session.
    task_label: "local", "chief/0", "worker/1", ... for log lines.
    recovery_wait_secs: poll interval of a worker waiting for the chief.
  """
  master: str
  is_chief: bool
  should_init: bool
  session_config: object
  task_label: str = "local"
  recovery_wait_secs: float = 1.0


class StopAtStepHook(tf.compat.v1.train.StopAtStepHook):
  """StopAtStepHook that runs no step when the session starts at last_step.

  TF's hook only checks after a step, so a task that joins when the global
  step is already at `last_step` would run (and count) one extra step.
  """

  steps_per_run = 1  # Set by train_loop.run under steps_per_loop.

  @property
  def last_step(self):
    """The step to stop at (known once the session exists)."""
    return self._last_step

  def after_create_session(self, session, coord):
    super().after_create_session(session, coord)
    step = session.run(self._global_step_tensor)
    if self._last_step is not None and step >= self._last_step:
      coord.request_stop()

  def after_run(self, run_context, run_values):
    # TF's hook checks for the last step once `read + 1` reaches it; a run
    # of the training loop advances up to `steps_per_run`.
    super().after_run(run_context, tf.compat.v1.train.SessionRunValues(
        results=run_values.results + self.steps_per_run - 1,
        options=run_values.options, run_metadata=run_values.run_metadata))


def _ensure_saver(scaffold, config):
  if scaffold.saver is not None or tf.compat.v1.get_collection(
      tf.compat.v1.GraphKeys.SAVERS):
    return
  tf.compat.v1.add_to_collection(
      tf.compat.v1.GraphKeys.SAVERS,
      _tf_private.RetentionSaver(
          sharded=True, max_to_keep=config.keep_checkpoint_max,
          keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
          defer_build=True, save_relative_paths=True))


class _LiveMetricsListener(tf.compat.v1.train.CheckpointSaverListener):
  """Tells the live metrics endpoint about each checkpoint save."""

  def after_save(self, session, global_step_value):
    del session
    live_metrics.record_checkpoint(int(global_step_value))


def _serve_live_metrics(config, context, saving_listeners):
  """Starts the task's metrics endpoint (if a port is set); with checkpoints
  on, adds the listener that reports their saves."""
  if not live_metrics.serve(port=config.metrics_port,
                            bind=config.metrics_bind,
                            task_label=context.task_label,
                            attempt=config.restart_attempt):
    return saving_listeners
  if context.is_chief and (config.save_checkpoints_secs or
                           config.save_checkpoints_steps):
    return saving_listeners + [_LiveMetricsListener()]
  return saving_listeners


def _auto_chooser(train_graph, context):
  """The KChooser of steps_per_loop="auto" (None: K is fixed)."""
  if train_graph.auto_bound is None or train_graph.loop is None:
    return None
  bound, reason = train_graph.auto_bound
  if train_graph.same_k_everywhere:
    logging.info("train | %s | steps_per_loop=auto: K=%d (%s; collective: "
                 "one K for all workers)", context.task_label, bound, reason)
    return None
  return auto_loop.KChooser(bound=bound, bound_reason=reason,
                            task_label=context.task_label)


def run(train_graph, *, model_dir, config, context, hooks, saving_listeners,
        max_steps=None):
  """Runs the training loop until a hook stops it; returns the last loss."""
  hooks = spec_lib.check_hooks(hooks, "hooks")
  saving_listeners = run_specs.check_saving_listeners(
      saving_listeners, run_specs.SAVING_LISTENERS_SENTENCE_TRAIN)
  held, guard = _hold_model_dir(model_dir, config, context), None
  try:
    saving_listeners = _serve_live_metrics(config, context, saving_listeners)
    _add_loss_summary(train_graph)
    worker_hooks, creator, guard = _assemble_hooks(
        train_graph, hooks, model_dir=model_dir, config=config,
        context=context, saving_listeners=saving_listeners,
        max_steps=max_steps, held=held)
    worker_hooks += [held.hook] if held is not None else []
    loss, steps_done = _run_session(
        train_graph, creator, worker_hooks, model_dir=model_dir,
        config=config, context=context)
  finally:
    if held is not None:
      held.release()
    # A hook that raised in after_create_session leaves MonitoredSession
    # without a session to close: release the SIGTERM handlers here.
    if guard is not None:
      guard.closed()
  _check_run_end(worker_hooks, guard, steps_done, context.task_label)
  return loss


def _hold_model_dir(model_dir, config, context):
  """The chief's lease of model_dir (None elsewhere); only once it is held do
  an earlier run's end marker and interrupted saves go (issue 37)."""
  if not context.is_chief:
    return None
  held = lease_lib.acquire(model_dir, task_label=context.task_label,
                           force_takeover=config.force_takeover)
  try:
    # Training (again): an old end mark must not stop a ps or an evaluator.
    run_state.clear_training_stopped(model_dir)
    retention.remove_leftovers(model_dir, started_at=time.time())
  except BaseException:
    held.release()
    raise
  return held


def _add_loss_summary(train_graph):
  """Adds the "loss" summary (unless model_fn made one) and LOSSES entry."""
  spec = train_graph.spec
  # tf.estimator's rule: a "loss" summary unless model_fn made one (in the
  # loop body too, whose summaries the loop's merged output replaced).
  summary_names = {s.op.name for s in tf.compat.v1.get_collection(
      tf.compat.v1.GraphKeys.SUMMARIES)}
  if train_graph.loop is not None:
    summary_names.update(train_graph.loop.summary_names)
  if "loss" not in summary_names:
    tf.compat.v1.summary.scalar("loss", spec.loss)
  tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.LOSSES, spec.loss)


def _assemble_hooks(train_graph, hooks, *, model_dir, config, context,
                    saving_listeners, max_steps, held=None):
  """Every hook of the run, in order (it matters), and the session creator.

  `held` (the chief's lease) checks before each save that model_dir is
  still the folder it holds.

  Returns:
    (worker hooks, session creator, preemption.TrainingGuard).
  """
  spec = train_graph.spec
  scaffold = spec.scaffold
  common = _common_hooks(
      train_graph, hooks, config=config, context=context,
      max_steps=max_steps)
  restore_from = None
  if context.should_init:
    restore_from = checkpoints.latest_usable_checkpoint(model_dir)
    # Before harness's Saver.
    checkpoint_reader.check_fits(restore_from, scaffold)
  _ensure_saver(scaffold, config)
  first = [held.saving_listener] if held is not None else []
  if config.remote_cluster is None:
    first.append(guard_hook.SaveStageListener())
  saver_hooks = chief_hooks.saver_hooks(
      common + list(spec.training_chief_hooks), model_dir=model_dir,
      config=config, scaffold=scaffold, saving_listeners=saving_listeners,
      first_listeners=first)
  worker_hooks = []
  if context.is_chief:
    # First: the Saver counts the checkpoints earlier runs left.
    worker_hooks.append(retention.RecoverCheckpointsHook(
        model_dir, scaffold, keep_checkpoint_max=config.keep_checkpoint_max,
        restore_from=restore_from))
    # 2.15 (estimator.py _train_with_estimator_spec -> MonitoredTraining-
    # Session): chief_only_hooks (saver, training_chief_hooks), steps/s and
    # summaries, then the worker hooks.
    worker_hooks.extend(saver_hooks + list(spec.training_chief_hooks))
    worker_hooks.extend(chief_hooks.summary_hooks(
        model_dir, config, scaffold, train_graph.examples_per_step))
  worker_hooks.extend(common)
  creator = _session_creator(scaffold, config, context, restore_from)
  _add_loop_hooks(worker_hooks, train_graph, config, context)
  # Last hook: SIGTERM -> stop (agreed across collective workers), raised
  # as TrainingPreemptedError after the chief's final save; lost peers ->
  # PeerLostError instead of an in-place session re-creation.
  guard = preemption.TrainingGuard.for_run(config, context, model_dir)
  creator = guard.wrap_creator(creator)
  if not guard.multi_task:  # A hung input_fn: progress lines, a bound.
    worker_hooks.append(first_batch.FirstBatchHook(
        task_label=context.task_label,
        timeout_secs=config.input_timeout_secs,
        report_secs=config.input_report_secs))
  worker_hooks.append(guard.hook)
  return worker_hooks, creator, guard


def _common_hooks(train_graph, hooks, *, config, context, max_steps):
  """Every task's first hooks: input, caller's, watchdogs, progress, model's."""
  spec = train_graph.spec
  worker_hooks = list(train_graph.input_hooks) + hooks
  # NaN loss and a global step that never moves stop the loop, each with an
  # error that says why (harness.guard.watchdog).
  worker_hooks.append(watchdog.NanLossHook(
      spec.loss, task_label=context.task_label,
      tensor_name=train_graph.loop.model_loss_name if train_graph.loop
      else None))
  worker_hooks.append(watchdog.NoProgressHook(
      max_runs=config.max_runs_without_progress,
      task_label=context.task_label))
  if config.log_step_count_steps is not None:
    worker_hooks.append(progress.ProgressLoggerHook(
        loss_tensor=spec.loss, global_step_tensor=train_graph.global_step,
        every_n_steps=config.log_step_count_steps,
        task_label=context.task_label, max_steps=max_steps))
    # 2.15: NaN check, LoggingTensorHook, training_hooks.
    worker_hooks.append(progress.loss_and_step_hook(
        spec.loss, train_graph.global_step, config.log_step_count_steps))
  worker_hooks.extend(spec.training_hooks)
  return worker_hooks


def _session_creator(scaffold, config, context, restore_from):
  """Initialises (or restores) on `should_init` tasks; else waits for it."""
  if context.should_init:
    return tf.compat.v1.train.ChiefSessionCreator(
        scaffold=scaffold, master=context.master,
        config=context.session_config,
        checkpoint_filename_with_path=restore_from)
  return worker_session.WaitForChiefSessionCreator(
      scaffold, context.master, context.session_config,
      config.session_creation_timeout_secs, context.recovery_wait_secs)


def _add_loop_hooks(worker_hooks, train_graph, config, context):
  """Tells the hooks K (steps a run) and, under a loop, adds its bound."""
  chooser = _auto_chooser(train_graph, context)
  step_loop.set_steps_per_run(worker_hooks, train_graph.steps_per_loop)
  if train_graph.loop is not None:
    worker_hooks.append(step_loop.LoopBoundHook(
        train_graph.loop,
        [h for h in worker_hooks if isinstance(h, StopAtStepHook)],
        config.save_checkpoints_steps, chooser=chooser,
        step_hooks=list(worker_hooks)))


def _run_session(train_graph, creator, worker_hooks, *, model_dir, config,
                 context):
  """Runs train_op until a hook stops; returns (last loss, runs made)."""
  spec = train_graph.spec
  loss = None
  steps_done = 0
  try:
    with tf.compat.v1.train.MonitoredSession(
        session_creator=creator, hooks=worker_hooks,
        stop_grace_period_secs=120) as session:
      fetches = [spec.train_op, spec.loss]
      while not session.should_stop():
        _, loss = session.run(fetches)
        steps_done += 1
  except (ValueError, TypeError, KeyError) as e:
    step_loop.raise_if_fetched_in_loop(e, train_graph.steps_per_loop)
  except tf.errors.ResourceExhaustedError as e:
    if context.is_chief and "No space left on device" in e.message:
      retention.remove_failed_saves(model_dir)  # Its partial _temp folder.
    raise
  finally:
    for hook in worker_hooks:  # A first run that raised: stop its watch.
      if isinstance(hook, first_batch.FirstBatchHook):
        hook.stop()
  return loss, steps_done


def _check_run_end(worker_hooks, guard, steps_done, task_label):
  """Raises a failed event write; warns when training made no steps."""
  for hook in worker_hooks:  # An event write failed: the loop stopped early.
    if isinstance(hook, step_loop.SummarySaverHook) and hook.write_error:
      raise hook.write_error
  made = guard.hook.end_step - guard.hook.start_step if (
      guard.hook.end_step is not None and guard.hook.start_step is not None
  ) else steps_done
  if not steps_done and not made:
    logging.warning(
        "train | %s | training made no steps: the input is empty or the "
        "model is already at max_steps.", task_label)
