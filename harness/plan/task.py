"""`TaskPlan`: what this process is in its job, decided once, below both doors.

    from harness import plan as plan_lib

    plan = plan_lib.plan_task(info, strategy="collective",
                              run_config_model_dir="/m", environ=os.environ)
    plan.role, plan.task_label, plan.is_chief, plan.replicas, plan.knobs
    plan_lib.raise_problem(plan, plan_lib.Stage.TRAIN)  # 2.15's error

The binary (`harness.cli.plan`, which adds the flags' own problems) and
the library (`harness.RunConfig`) both plan a task here. `plan_task` is
the one function that decides this process's role, task label and chief
(2.15's task facts, `harness.cluster.derive`), the model_dir and where it
came from (`harness.state.paths.merge_model_dirs`, the one rule, over the
binary's --model_dir or RunConfig's and TF_CONFIG's), the replicas, the
knobs with an environment fallback (`harness.plan.knobs`) and the
one-machine rule, and runs the cluster rules.
A rule that does not hold is kept as a `Problem` tagged with the moment
tf.estimator 2.15 raised it (`Stage`): the binary reports every problem at
once, RunConfig raises each at its moment with 2.15's type and sentence.
"""

import dataclasses
import enum

from harness import cluster as cluster_lib
from harness import errors
from harness.cluster import tf_config_checks
from harness.cluster.strategy_kind import StrategyKind
from harness.plan import knobs as knobs_lib
from harness.state import paths

__all__ = ["Role", "Stage", "Problem", "TaskPlan", "plan_task",
           "raise_problem", "RUN_CONFIG_RULES", "CLUSTER_RULES", "MODEL_DIR",
           "ONE_MACHINE"]


class Role(str, enum.Enum):
  """What this process does in its job (str() is the bare value)."""
  __str__ = str.__str__
  __format__ = str.__format__

  LOCAL = cluster_lib.LOCAL_LABEL  # No cluster: trains (evaluates ...) alone.
  CLIENT = cluster_lib.CLIENT_LABEL  # Drives a remote cluster's servers.
  TRAINER = "trainer"  # A chief, worker or master task of TF_CONFIG.
  PS = cluster_lib.PS  # Serves the trainers' variables.
  EVALUATOR = cluster_lib.EVALUATOR  # Evaluates checkpoints as they come.

  @property
  def in_cluster(self):
    """A task of a TF_CONFIG cluster (trainer, ps or evaluator)."""
    return self in (Role.TRAINER, Role.PS, Role.EVALUATOR)


class Stage(str, enum.Enum):
  """When tf.estimator 2.15 raised a rule's error."""
  RUN_CONFIG = "RunConfig()"  # Building the RunConfig.
  TRAIN = "train()"  # Before training (Estimator.train, train_and_evaluate).


@dataclasses.dataclass(frozen=True)
class Problem:
  """A rule that does not hold: `error` is the exception with 2.15's type
  and sentence (str(error) is the line the binary reports), raised at
  `stage`; `rule` names it ("tf_config", a knob's name, ...)."""
  stage: Stage
  rule: str
  error: Exception


# The rules of `Problem.rule` (a knob's is its name, `knobs.RESTART_ATTEMPT`).
RUN_CONFIG_RULES = "tf_config_run_config"  # 2.15's RunConfig's (a subset).
CLUSTER_RULES = "tf_config"  # Every TF_CONFIG rule (cluster.validate).
MODEL_DIR = "model_dir"  # The model_dirs given agree (merge_model_dirs).
ONE_MACHINE = "one_machine"  # A one-machine strategy, one trainer.


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskPlan:
  """The facts of one process of a job, resolved once.

  Attributes:
    cluster_info: TF_CONFIG as parsed once (`harness.cluster.ClusterInfo`),
      None without TF_CONFIG.
    remote_cluster: the standalone client's {job: [address]}, or None.
    role: a `Role`.
    task_label: "chief/0", "worker/1", "local" or "client": the one label.
    is_chief: this task writes checkpoints and summaries (2.15's chief for
      its strategy).
    facts: 2.15's task facts (`harness.cluster.TaskFacts`: task_type,
      master, num_worker_replicas, ...) that RunConfig's properties show.
    model_dir: the run's model_dir, None: the run makes a temporary one.
    model_dir_source: where it came from (a `harness.state.paths.FROM_*`).
    strategy: the `StrategyKind` (DEFAULT without a strategy).
    replicas: `num_replicas_in_sync` of that strategy on this cluster.
    knobs: {field name: seconds} of every `harness.fields` field with an
      environment fallback: the value, else the variable, else the default.
    restart_attempt: $JOBSET_RESTART_ATTEMPT, None outside a JobSet.
    problems: the rules that do not hold (`Problem`s), in 2.15's order;
      not compared.
  """
  cluster_info: cluster_lib.ClusterInfo | None
  remote_cluster: dict[str, list[str]] | None
  role: Role
  task_label: str
  is_chief: bool
  facts: cluster_lib.TaskFacts
  model_dir: str | None
  model_dir_source: str
  strategy: StrategyKind
  replicas: int
  knobs: dict[str, float]
  restart_attempt: int | None = None
  problems: tuple[Problem, ...] = dataclasses.field(default=(),
                                                    compare=False)


def raise_problem(plan, stage, rule=None):
  """Raises the first problem of `plan` tagged `stage` (and `rule`, if
  given): 2.15's exception, at 2.15's moment."""
  for problem in plan.problems:
    if problem.stage == stage and rule in (None, problem.rule):
      raise problem.error


def plan_task(info, *, environ, strategy=None, has_strategy=None,
              remote_cluster=None, num_devices_per_worker=1,
              run_config_model_dir=None, estimator_model_dir=None,
              knob_values=None,
              require_cluster_for_task=False):
  """The `TaskPlan` of this process; its broken rules in `plan.problems`.

  Args:
    info: TF_CONFIG's `ClusterInfo`, or None.
    environ: mapping read for the knobs' variables and
      $JOBSET_RESTART_ATTEMPT.
    strategy: the `StrategyKind` (or its value), None: no strategy.
    has_strategy: whether a strategy is given (default: `strategy` is not
      the no-op kind); RunConfig passes `train_distribute is not None`.
    remote_cluster: the standalone client's {job: [address]}, or None.
    num_devices_per_worker: devices each trainer replicates over.
    run_config_model_dir: RunConfig's `model_dir` argument, or None.
    estimator_model_dir: the Estimator's `model_dir` argument (the
      binary's --model_dir), or None. The plan's model_dir is these and
      TF_CONFIG's merged (`harness.state.paths.merge_model_dirs`); two
      that differ are a `Problem` of RunConfig() (2.15's error), the most
      specific given then taken.
    knob_values: {field name: value or None} of the fields with an
      environment fallback (missing: None, the variable, else the default).
    require_cluster_for_task: a "task" without a "cluster" breaks a rule
      (the binary's; 2.15 trained locally).

  Returns:
    A `TaskPlan`.
  """
  kind = StrategyKind(strategy or StrategyKind.DEFAULT)
  if has_strategy is None:
    has_strategy = not kind.no_op
  # A client's rules are its caller's (in their words).
  problems = [] if remote_cluster else _cluster_problems(
      info, has_strategy=has_strategy,
      strategy_kind=kind if has_strategy else None,
      require_cluster_for_task=require_cluster_for_task)
  problems += _one_machine_problems(kind if has_strategy else None,
                                    _trainer_jobs(info, remote_cluster))
  role = _role(info, remote_cluster)
  facts = cluster_lib.derive(None if remote_cluster else info,
                             has_strategy=has_strategy or bool(remote_cluster))
  waiting = []  # The knobs' problems come first (RunConfig's order).
  knobs, attempt = knobs_lib.resolve(knob_values or {}, environ, waiting)
  waiting = [Problem(Stage.RUN_CONFIG, rule, e) for rule, e in waiting]
  try:  # The one model_dir rule.
    model_dirs = paths.merge_model_dirs(
        argument=estimator_model_dir, run_config=run_config_model_dir,
        tf_config=info.model_dir if info else None)
  except errors.ConfigError as e:  # First, at RunConfig() (2.15's order).
    waiting.insert(0, Problem(Stage.RUN_CONFIG, MODEL_DIR, e))
    model_dirs = ((estimator_model_dir, paths.FROM_ARGUMENT)
                  if estimator_model_dir else
                  (run_config_model_dir, paths.FROM_RUN_CONFIG))
  return TaskPlan(
      cluster_info=info, remote_cluster=remote_cluster, role=role,
      task_label=(cluster_lib.CLIENT_LABEL if remote_cluster else
                  cluster_lib.LOCAL_LABEL if info is None else
                  info.task_label),
      is_chief=facts.is_chief, facts=facts, model_dir=model_dirs[0],
      model_dir_source=model_dirs[1], strategy=kind,
      replicas=_replicas(kind, num_devices_per_worker,
                         _trainer_jobs(info, remote_cluster)),
      knobs=knobs, restart_attempt=attempt,
      problems=tuple(waiting + problems))


def _cluster_problems(info, **rules):
  """TF_CONFIG's rules as `Problem`s: 2.15's RunConfig's, then all."""
  problems = []
  try:
    cluster_lib.validate_run_config(info, has_strategy=rules["has_strategy"])
  except errors.ClusterConfigError as e:
    problems.append(Problem(Stage.RUN_CONFIG, RUN_CONFIG_RULES, e))
  try:
    cluster_lib.validate(info, **rules)
  except errors.ClusterConfigError as e:
    problems.append(Problem(Stage.TRAIN, CLUSTER_RULES, e))
  return problems


def _one_machine_problems(kind, jobs):
  """The one-machine rule: a one-machine strategy, several trainers."""
  try:
    tf_config_checks.check_one_machine_strategy(kind, jobs)
  except errors.NotSupportedError as e:
    return [Problem(Stage.TRAIN, ONE_MACHINE, e)]
  return []


def _role(info, remote_cluster):
  if remote_cluster:
    return Role.CLIENT
  if info is None or info.task_label == cluster_lib.LOCAL_LABEL:
    return Role.LOCAL
  return {cluster_lib.PS: Role.PS, cluster_lib.EVALUATOR: Role.EVALUATOR}.get(
      info.task_type, Role.TRAINER)


def _trainer_jobs(info, remote_cluster):
  """{job: [address]} the trainers train on: the remote cluster, else
  TF_CONFIG's training jobs, else none."""
  if remote_cluster:
    return remote_cluster
  if info is not None and info.has_cluster:
    return info.training_cluster
  return {}


def _replicas(kind, devices, jobs):
  """`num_replicas_in_sync`: 1 on a single device, devices per worker times
  the training tasks in lockstep (collective), else the devices per worker
  (a parameter server's workers update on their own)."""
  if kind.single_device:
    return 1
  if not kind.lockstep:
    return devices
  return devices * max(1, cluster_lib.num_trainers(jobs))
