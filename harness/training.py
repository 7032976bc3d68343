"""TrainSpec, EvalSpec and `train_and_evaluate`, dispatched by task role.

Usage::

    train_spec = harness.TrainSpec(train_input_fn, max_steps=1000)
    eval_spec = harness.EvalSpec(eval_input_fn, steps=10, exporters=[...])
    metrics, export_results = harness.train_and_evaluate(
        estimator, train_spec, eval_spec)

Without a TF_CONFIG cluster it trains locally and evaluates (and exports)
after each new checkpoint, at most once per `throttle_secs`, and always
after the last one. With TF_CONFIG, the role in its plan picks the runner
(`_RUNNERS`; a trainer's by its task type: chief, worker, master).
"""

import os
import time

from absl import logging

from harness import errors
from harness import estimator as estimator_lib
from harness import plan as plan_lib
from harness import run_config as run_config_lib
from harness import spec as spec_lib
from harness._tf import tf
from harness.cluster import jobs
from harness.cluster import tf_config
from harness.distribute import checkpoint_evaluator
from harness.distribute import eval_result
from harness.distribute import evaluator as evaluator_lib
from harness.distribute import roles
from harness.distribute import save_listener
from harness.guard.stop_signal import STOP_SIGNAL
from harness.spec.run_specs import EvalSpec  # 2.15's path: re-exported.
from harness.spec.run_specs import TrainSpec  # 2.15's path: re-exported.
from harness.state import checkpoint_reader

__all__ = ["TrainSpec", "EvalSpec", "train_and_evaluate"]


def train_and_evaluate(estimator, train_spec, eval_spec):
  """Trains and evaluates `estimator` as its RunConfig's task says.

  As tf.estimator 2.15: `_TrainingExecutor(...).run()` runs `run_<task>`
  for the RunConfig's task (`run_local` without a TF_CONFIG cluster, and
  for a standalone client). harness's cluster rules
  (`check_supported_config`) are checked first, for every task.

  Returns:
    (eval metrics dict or None, list of export results) for the local and
    evaluator roles; (None, []) for chief, worker and ps tasks.
  """
  _check_eval_spec(eval_spec)
  executor = _TrainingExecutor(
      estimator=estimator, train_spec=train_spec, eval_spec=eval_spec)
  config = estimator.config
  role, _, task_id = _task_of(config)
  if role == plan_lib.Role.EVALUATOR and task_id > 0:
    raise errors.ClusterConfigError(
        "For distributed training, there can only be one `evaluator` task "
        f"(with task id 0).  Given task id {task_id}\nFix: run one "
        'evaluator with "index": 0 in TF_CONFIG.')
  if isinstance(config, run_config_lib.RunConfig):
    # 2.15's task checks and sentences first, then harness's cluster rules,
    # for every task before anything starts.
    executor.task_to_run()
    run_config_lib.check_supported_config(config)
  return executor.run()


def _check_eval_spec(eval_spec):
  """2.15's TypeError for a missing or wrong EvalSpec where one is needed."""
  if not isinstance(eval_spec, EvalSpec):
    raise errors.ConfigTypeError(
        "`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
        f"{type(eval_spec)}\nFix: pass harness.EvalSpec(...) (tf.estimator."
        "EvalSpec under harness.compat).")


# The runner of each role; a trainer's is `run_<its task type>` (chief,
# worker, master, or a type a subclass adds a runner for).
_RUNNERS = {plan_lib.Role.LOCAL: "run_local",
            plan_lib.Role.CLIENT: "run_local", plan_lib.Role.PS: "run_ps",
            plan_lib.Role.EVALUATOR: "run_evaluator"}


def _task_of(config):
  """(role, task type, task id) of the task the executor runs: the plan's.
  2.15's tests hand in stand-ins (a Mock with `task_type` set, a RunConfig
  subclass, which may override a task property): for those alone, the 2.15
  properties are read, with 2.15's rule."""
  if type(config) is run_config_lib.RunConfig:  # Not a subclass.
    plan = config.plan
    return plan.role, plan.facts.task_type, plan.facts.task_id
  task_type = config.task_type
  if isinstance(config, run_config_lib.RunConfig) and (
      config.remote_cluster is not None):
    role = plan_lib.Role.CLIENT  # A standalone client: it trains remotely.
  elif not config.cluster_spec and task_type != jobs.EVALUATOR:
    role = plan_lib.Role.LOCAL  # No TF_CONFIG cluster.
  else:
    role = {jobs.PS: plan_lib.Role.PS, jobs.EVALUATOR: (
        plan_lib.Role.EVALUATOR)}.get(task_type, plan_lib.Role.TRAINER)
  return role, task_type, config.task_id


_ContinuousEvalListener = eval_result.ContinuousEvalListener  # 2.15's name.


class _TrainingExecutor:
  """Runs one task of `train_and_evaluate` (tf.estimator 2.15's executor).

  `run()` picks `run_<task>` for the RunConfig's task (`run_local` without
  a TF_CONFIG cluster) with 2.15's checks and sentences; a subclass may
  override one of them or add `run_<type>` for a task type of its own.
  Chief, worker and master start this task's server first
  (`_start_std_server`), then a worker waits (`roles.start_delay`), then
  they train; `train_hooks` join `train_spec.hooks` there.
  """

  def __init__(self, estimator, train_spec, eval_spec, train_hooks=None,
               continuous_eval_listener=None):
    if not isinstance(estimator, estimator_lib.Estimator):
      raise errors.ConfigTypeError(
          "`estimator` must have type `tf.estimator.Estimator`. Got: "
          f"{type(estimator)}\nFix: pass a harness.Estimator (tf.estimator."
          "Estimator under harness.compat), or a canned estimator.")
    if not isinstance(train_spec, TrainSpec):
      raise errors.ConfigTypeError(
          "`train_spec` must have type `tf.estimator.TrainSpec`. Got: "
          f"{type(train_spec)}\nFix: pass harness.TrainSpec(...).")
    if eval_spec and not isinstance(eval_spec, EvalSpec):
      raise errors.ConfigTypeError(
          "`eval_spec` must be either `None` or have type "
          f"`tf.estimator.EvalSpec`. Got: {type(eval_spec)}\nFix: pass "
          "harness.EvalSpec(...).")
    self._train_hooks = tuple(spec_lib.check_hooks(
        train_hooks, "train_hooks", sentence=spec_lib.HOOKS_SENTENCE_SPECS))
    if continuous_eval_listener and not isinstance(
        continuous_eval_listener, _ContinuousEvalListener):
      raise errors.ConfigTypeError(
          "`continuous_eval_listener` must have type "
          "`_ContinuousEvalListener`. Fix: subclass training."
          "_ContinuousEvalListener, or pass None.")
    self._estimator = estimator
    self._train_spec = train_spec
    self._eval_spec = eval_spec
    self._continuous_eval_listener = (
        continuous_eval_listener or _ContinuousEvalListener())

  @property
  def estimator(self):
    return self._estimator

  def run(self):
    """Runs this task's `run_<task>`; returns what it returns."""
    return getattr(self, self.task_to_run())()

  def task_to_run(self):
    """The name of this task's `run_<task>` method, after 2.15's checks:
    the runner of its plan's role (`_task_of`), a trainer's by its type.

    Raises:
      ClusterConfigError (a ValueError): no task type, `local`, or a type
        with no `run_<type>` method (2.15's sentences).
    """
    role, task_type, _ = _task_of(self._estimator.config)
    if _RUNNERS.get(role) == "run_local":
      return "run_local"
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
    tasks = [name[len("run_"):] for name in dir(self)
             if name.startswith("run_") and name != "run_local" and
             callable(getattr(self, name))]
    runner = _RUNNERS.get(role, "run_" + task_type)
    if runner[len("run_"):] not in tasks:
      raise errors.ClusterConfigError(  # 2.15's sentence, on one line.
          f"Task type {task_type} is not supported. Supported task "
          f"types are {tasks}. Fix: use one of those; without `cluster` and "
          "`task` in TF_CONFIG, it trains in this process.")
    return runner

  def run_chief(self):
    """The chief: trains, saves checkpoints, marks the end of training."""
    self._start_distributed_training(
        saving_listeners=self._train_spec.saving_listeners)
    return None, []

  def run_worker(self):
    """A worker: trains (RunConfig.is_chief tells it from the chief)."""
    self._start_distributed_training()
    return None, []

  def run_master(self):
    """Legacy `master` job: the chief, also evaluating after checkpoints."""
    _check_eval_spec(self._eval_spec)
    evaluator = checkpoint_evaluator.CheckpointEvaluator(
        self._estimator, self._eval_spec, self._train_spec.max_steps)
    listener = save_listener.NewCheckpointListener(
        evaluator, self._eval_spec.throttle_secs)
    self._start_distributed_training(saving_listeners=tuple(
        self._train_spec.saving_listeners) + (listener,))
    return listener.eval_result, listener.export_results

  def run_evaluator(self):
    """The `evaluator` task: evaluate new checkpoints until training ends."""
    _check_eval_spec(self._eval_spec)
    logging.info("train_and_evaluate | %s | watching %s",
                 self._estimator.config.task_label, self._estimator.model_dir)
    STOP_SIGNAL.stage = "waiting for a new checkpoint (the evaluator)"
    return evaluator_lib.run_continuous(
        self._estimator, self._train_spec, self._eval_spec,
        continuous_eval_listener=self._continuous_eval_listener)

  def run_ps(self):
    """A parameter server: serves until every trainer has finished."""
    self._start_std_server(self._estimator.config)
    STOP_SIGNAL.stage = "serving as a parameter server"
    return roles.run_ps(self._estimator)

  def run_local(self):
    """Trains here, evaluating (and exporting) after new checkpoints."""
    _check_eval_spec(self._eval_spec)
    estimator, eval_spec = self._estimator, self._eval_spec
    config = estimator.config
    if config.remote_cluster is not None:
      logging.info("train_and_evaluate | client | training on the remote "
                   "cluster %s, evaluating in this process",
                   config.remote_cluster)
    else:
      logging.info("train_and_evaluate | local | training and evaluating in "
                   "this process (no TF_CONFIG cluster)")
    every = (f"{config.save_checkpoints_steps} steps"
             if config.save_checkpoints_steps else
             f"{config.save_checkpoints_secs} s"
             if config.save_checkpoints_secs else "- (none saved)")
    logging.info(
        "train_and_evaluate | %s | checkpoint every %s, then evaluate "
        "(throttle_secs=%s)", config.task_label, every,
        eval_spec.throttle_secs)
    evaluator = checkpoint_evaluator.CheckpointEvaluator(
        estimator, eval_spec, self._train_spec.max_steps)
    evaluator.check_writable()  # Before hours of training, not after.
    listener = save_listener.NewCheckpointListener(
        evaluator, eval_spec.throttle_secs,
        continuous_eval_listener=self._continuous_eval_listener)
    estimator.train(
        input_fn=self._train_spec.input_fn,
        max_steps=self._train_spec.max_steps, hooks=self._hooks(),
        saving_listeners=tuple(self._train_spec.saving_listeners) + (
            listener,))
    if not listener.saw_a_save:
      # Training was skipped: model_dir is at max_steps already (2.15
      # returned no metrics). Evaluate what is there.
      return evaluator.evaluate_and_export()
    return listener.eval_result, listener.export_results

  def _hooks(self):
    return list(self._train_spec.hooks) + list(self._train_hooks)

  def _start_std_server(self, config):
    """Starts this task's server (once a process); returns it, or None.

    2.15's checks and sentences first. Without a master, a one-task
    cluster starts none (training then runs in this process).
    """
    if (not config.cluster_spec or not config.task_type or
        config.task_id is None):
      raise errors.ServerStartError(
          "Could not start server; be sure to specify cluster_spec, "
          "task_type, and task in RunConfig or set the TF_CONFIG environment "
          'variable. Fix: TF_CONFIG needs "cluster" and "task": {"type": '
          '..., "index": ...}.')
    if not config.master:
      job_names = config.cluster_spec.jobs
      if (len(job_names) == 1 and
          len(config.cluster_spec.job_tasks(job_names[0])) == 1 and
          config.task_type in jobs.TRAINER_JOBS):
        logging.info("server | %s | a one-task cluster: its server starts "
                     "with training", config.task_label)
        return None
      raise errors.ServerStartError(
          "Could not start server; be sure to specify master in RunConfig or"
          " set the TF_CONFIG environment variable. Fix: TF_CONFIG's cluster "
          "must list this task's address.")
    return roles.prepare_task(config).server

  def _start_distributed_training(self, saving_listeners=None):
    """Starts the server, waits (a worker), trains: 2.15's order."""
    config = self._estimator.config
    if not _is_google_env():
      self._start_std_server(config)
    delay = roles.start_delay(config)
    if delay:
      logging.info("train | %s | waiting %d s before starting",
                   config.task_label, delay)
      time.sleep(delay)
    self._estimator.train(
        input_fn=self._train_spec.input_fn,
        max_steps=self._train_spec.max_steps, hooks=self._hooks(),
        saving_listeners=saving_listeners)


def _is_google_env():
  """TF_CONFIG's "environment" is "google": 2.15 started no server there."""
  info = tf_config.from_environ(os.environ)
  return info is not None and info.environment == "google"


def load_global_step_from_checkpoint_dir(checkpoint_dir):
  """The global step of the latest checkpoint in `checkpoint_dir`.

  2.15's `estimator._load_global_step_from_checkpoint_dir`: 0 when there is
  no checkpoint or it cannot be read.
  """
  try:
    step = checkpoint_reader.global_step_of(
        tf.train.latest_checkpoint(checkpoint_dir))
  except (tf.errors.OpError, ValueError, TypeError):
    return 0
  return step or 0
