"""`TaskPlan`: what this process is in its job, decided once, below both doors.

    from harness import task_plan

    plan = task_plan.plan_task(info, strategy="collective", model_dir="/m",
                               eval_poll_secs=1.0, environ=os.environ)
    plan.role, plan.task_label, plan.is_chief, plan.replicas
    task_plan.raise_problem(plan, task_plan.Stage.TRAIN)  # 2.15's error

The binary (`harness.cli.plan`, which adds the flags' own problems) and
the library (`harness.RunConfig`) both plan a task here. `plan_task` is
the one function that decides this process's role, task label and chief
(2.15's task facts, `harness.cluster.derive`), the model_dir and where it
came from (`harness.state.paths.merge_model_dirs`, the one rule, over the
binary's --model_dir or RunConfig's and TF_CONFIG's), the replicas and the
waiting knobs, and runs the cluster rules.
A rule that does not hold is kept as a `Problem` tagged with the moment
tf.estimator 2.15 raised it (`Stage`): the binary reports every problem at
once, RunConfig raises each at its moment with 2.15's type and sentence.

A root module, not `cluster/` (which may not import `state/paths`) nor
`run_config/` (whose door loads TensorFlow: the binary's flags, `--help`
and dry run import this module and stay TensorFlow-free).
"""

import dataclasses
import enum

from harness import cluster as cluster_lib
from harness import errors
from harness.cluster import env_knobs
from harness.cluster import restart_attempt
from harness.cluster.strategy_kind import StrategyKind
from harness.state import paths

__all__ = ["Role", "Stage", "Problem", "TaskPlan", "plan_task",
           "raise_problem", "RUN_CONFIG_RULES", "CLUSTER_RULES", "MODEL_DIR",
           "RESTART_ATTEMPT"]


class Role(str, enum.Enum):
  """What this process does in its job (str() is the bare value)."""
  __str__ = str.__str__
  __format__ = str.__format__

  LOCAL = cluster_lib.LOCAL_LABEL  # No cluster: trains (evaluates ...) alone.
  CLIENT = cluster_lib.CLIENT_LABEL  # Drives a remote cluster's servers.
  TRAINER = "trainer"  # A chief, worker or master task of TF_CONFIG.
  PS = cluster_lib.PS  # Serves the trainers' variables.
  EVALUATOR = cluster_lib.EVALUATOR  # Evaluates checkpoints as they come.


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


# The rules of `Problem.rule`.
RUN_CONFIG_RULES = "tf_config_run_config"  # 2.15's RunConfig's (a subset).
CLUSTER_RULES = "tf_config"  # Every TF_CONFIG rule (cluster.validate).
MODEL_DIR = "model_dir"  # The model_dirs given agree (merge_model_dirs).
RESTART_ATTEMPT = "restart_attempt"


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
    peer_timeout_secs, restart_wait_secs: the value, else the variable of
      `harness.cluster.env_knobs`, else its default (seconds).
    eval_poll_secs: how often an evaluator looks for a new checkpoint.
    restart_attempt: $JOBSET_RESTART_ATTEMPT, None outside a JobSet.
    trainer_status_endpoint: the Kubeflow Trainer status endpoint (the
      binary's; `harness.telemetry.trainer_status.Endpoint`), None without.
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
  peer_timeout_secs: float
  restart_wait_secs: float
  eval_poll_secs: float
  restart_attempt: int | None = None
  trainer_status_endpoint: object = None
  problems: tuple[Problem, ...] = dataclasses.field(default=(),
                                                    compare=False)

  @property
  def clustered(self):
    """True in a task of a TF_CONFIG cluster."""
    return self.role in (Role.TRAINER, Role.PS, Role.EVALUATOR)


def raise_problem(plan, stage, rule=None):
  """Raises the first problem of `plan` tagged `stage` (and `rule`, if
  given): 2.15's exception, at 2.15's moment."""
  for problem in plan.problems:
    if problem.stage == stage and rule in (None, problem.rule):
      raise problem.error


def plan_task(info, *, environ, strategy=None, has_strategy=None,
              remote_cluster=None, num_devices_per_worker=1, model_dir=None,
              model_dir_argument=None, peer_timeout_secs=None,
              restart_wait_secs=None, eval_poll_secs,
              require_cluster_for_task=False, trainer_status_endpoint=None):
  """The `TaskPlan` of this process; its broken rules in `plan.problems`.

  Args:
    info: TF_CONFIG's `ClusterInfo`, or None.
    environ: mapping read for the waiting knobs' variables and
      $JOBSET_RESTART_ATTEMPT.
    strategy: the `StrategyKind` (or its value), None: no strategy.
    has_strategy: whether a strategy is given (default: `strategy` is one
      other than DEFAULT); RunConfig passes `train_distribute is not None`.
    remote_cluster: the standalone client's {job: [address]}, or None.
    num_devices_per_worker: devices each trainer replicates over.
    model_dir: RunConfig's `model_dir` argument, or None.
    model_dir_argument: the Estimator's `model_dir` argument (the binary's
      --model_dir), or None. The plan's model_dir is these and TF_CONFIG's
      merged (`harness.state.paths.merge_model_dirs`); two that differ are
      a `Problem` of RunConfig() (2.15's error), the most specific given
      then taken.
    peer_timeout_secs, restart_wait_secs: the values given (None: the
      variable, else the default); eval_poll_secs: seconds.
    require_cluster_for_task: a "task" without a "cluster" breaks a rule
      (the binary's; 2.15 trained locally).
    trainer_status_endpoint: the binary's Kubeflow Trainer status endpoint.

  Returns:
    A `TaskPlan`.
  """
  kind = StrategyKind(strategy or StrategyKind.DEFAULT)
  if has_strategy is None:
    has_strategy = kind != StrategyKind.DEFAULT
  # A client's rules are its caller's (in their words).
  problems = [] if remote_cluster else _cluster_problems(
      info, has_strategy=has_strategy,
      strategy_kind=kind if has_strategy else None,
      require_cluster_for_task=require_cluster_for_task)
  role = _role(info, remote_cluster)
  facts = cluster_lib.derive(None if remote_cluster else info,
                             has_strategy=has_strategy or bool(remote_cluster))
  replicas = _replicas(kind, num_devices_per_worker, info, remote_cluster)
  waiting = []  # The waiting knobs' problems come first (RunConfig's order).
  knobs, attempt = _waiting(environ, waiting, peer_timeout_secs=(
      peer_timeout_secs), restart_wait_secs=restart_wait_secs)
  try:  # The one model_dir rule.
    model_dirs = paths.merge_model_dirs(
        argument=model_dir_argument, run_config=model_dir,
        tf_config=info.model_dir if info else None)
  except errors.ConfigError as e:  # First, at RunConfig() (2.15's order).
    waiting.insert(0, Problem(Stage.RUN_CONFIG, MODEL_DIR, e))
    model_dirs = ((model_dir_argument, paths.FROM_ARGUMENT)
                  if model_dir_argument else (model_dir, paths.FROM_RUN_CONFIG))
  return TaskPlan(
      cluster_info=info, remote_cluster=remote_cluster, role=role,
      task_label=(cluster_lib.CLIENT_LABEL if role == Role.CLIENT else
                  cluster_lib.LOCAL_LABEL if info is None else
                  info.task_label),
      is_chief=facts.is_chief, facts=facts, model_dir=model_dirs[0],
      model_dir_source=model_dirs[1], strategy=kind, replicas=replicas,
      eval_poll_secs=float(eval_poll_secs), restart_attempt=attempt,
      trainer_status_endpoint=trainer_status_endpoint,
      problems=tuple(waiting + problems), **knobs)


def _waiting(environ, problems, **values):
  """({knob: seconds}, restart attempt) from the values, else `environ`;
  a bad one is a `Problem` of RunConfig() in `problems` (the default,
  None, in its place)."""
  knobs = {}
  for knob in (env_knobs.PEER_TIMEOUT, env_knobs.RESTART_WAIT):
    try:
      knobs[knob.name] = env_knobs.resolve_secs(values[knob.name], knob,
                                                environ)
    except errors.ConfigError as e:
      problems.append(Problem(Stage.RUN_CONFIG, knob.name, e))
      knobs[knob.name] = knob.default
  try:
    return knobs, restart_attempt.from_environ(environ)
  except errors.ConfigError as e:
    problems.append(Problem(Stage.RUN_CONFIG, RESTART_ATTEMPT, e))
    return knobs, None


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


def _role(info, remote_cluster):
  if remote_cluster:
    return Role.CLIENT
  if info is None or info.task_label == cluster_lib.LOCAL_LABEL:
    return Role.LOCAL
  if info.task_type == cluster_lib.PS:
    return Role.PS
  if info.task_type == cluster_lib.EVALUATOR:
    return Role.EVALUATOR
  return Role.TRAINER


def _replicas(kind, devices, info, remote_cluster):
  """`num_replicas_in_sync`: 1 on a single device, devices per worker times
  the training tasks in lockstep (collective), else the devices per worker
  (a parameter server's workers update on their own)."""
  if kind.single_device:
    return 1
  if not kind.lockstep:
    return devices
  if remote_cluster:
    jobs = remote_cluster
  elif info is not None and info.has_cluster:
    jobs = info.cluster
  else:
    jobs = {}
  return devices * max(1, cluster_lib.num_trainers(jobs))
