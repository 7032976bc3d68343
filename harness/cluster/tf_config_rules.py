"""TF_CONFIG rules: tf.estimator 2.15's, its distribute coordinator's, and
harness's own, each applied where it matters.

    from harness import cluster
    info = cluster.parse_tf_config(text)                   # types only
    cluster.validate_run_config(info, has_strategy=False)  # RunConfig's
    cluster.validate(info, has_strategy=True, strategy_kind="collective")

* `validate_run_config`: exactly what 2.15's RunConfig refused (RunConfig
  calls it); a strategy with a cluster deferred these to training.
* `validate`: everything a run needs, called before training, in
  `harness.main`'s plan and by the launcher.
* `check_servable`: what a server start needs.

Each error holds 2.15's sentence verbatim first (where 2.15 had one), then
harness's explanation and fix. Reached through the `harness.cluster` door;
`tf_config_checks.check_strategy_jobs` is the one check of the collective /
parameter-server job rules. No TensorFlow here.
"""

import difflib
import json

from harness.cluster.jobs import CHIEF
from harness.cluster.jobs import EVALUATOR
from harness.cluster.jobs import MASTER
from harness.cluster.jobs import PS
from harness.cluster.jobs import WORKER
from harness.cluster.tf_config_checks import check_addresses
from harness.cluster.tf_config_checks import check_job_counts
from harness.cluster.tf_config_checks import check_job_names
from harness.cluster.tf_config_checks import check_strategy_jobs
from harness.cluster.tf_config_checks import fail
from harness.cluster.tf_config_checks import fail_215
from harness.cluster.tf_config_checks import task_json

__all__ = ["validate_run_config", "validate", "check_servable"]


def _cluster_spec_text(cluster):
  """How 2.15's messages printed a `tf.train.ClusterSpec`."""
  return "ClusterSpec(%r)" % {j: list(cluster[j]) for j in sorted(cluster)}


_NOTE = ("\n\nNote that these values may be coming from the TF_CONFIG "
         "environment variable.")


def validate_run_config(info, *, has_strategy):
  """Exactly the TF_CONFIG rules tf.estimator 2.15's RunConfig enforced.

  Without a strategy (or with a legacy "master" job) 2.15 checked the task
  against the cluster when the RunConfig was built; with a strategy and a
  cluster it deferred every check to training (see `validate`). Each error
  holds 2.15's sentence verbatim, then harness's explanation and fix.

  Raises:
    ClusterConfigError: a TF_CONFIG 2.15's RunConfig refused too.
  """
  if info is None:
    return
  if not info.has_cluster:
    _check_task_without_cluster(info)
    return
  if has_strategy and MASTER not in info.cluster:
    return  # 2.15 left these to its distribute coordinator: see `validate`.
  chief_type = MASTER if MASTER in info.cluster else CHIEF
  _check_one_chief(info, chief_type)
  _check_task_set(info)
  if info.task_type == EVALUATOR:
    _check_evaluator_without_master(info, chief_type)
    return
  _check_task_in_cluster(info)


def _check_task_without_cluster(info):
  """2.15's rules for a "task" given without a "cluster"."""
  source, task_type, task_id = info.source, info.task_type, info.task_id
  if task_type not in (None, WORKER):
    fail_215(source, 'If "cluster" is not set in TF_CONFIG, task type '
              "must be WORKER.", f"it names task "
              f'{task_json(task_type, task_id)} but no "cluster".',
              'add the "cluster" (e.g. {"chief": ["h0:2222"], "worker": '
              '["h1:2222"]}) or drop "task" for local training.')
  if task_id != 0:
    fail_215(source, 'If "cluster" is not set in TF_CONFIG, task index '
              "must be 0.", f'it names task {task_json(task_type, task_id)}'
              ' but no "cluster".', 'add the "cluster", or drop "task" for '
              "local training.")


def _check_one_chief(info, chief_type):
  """Exactly one `chief_type` node, and no "chief" beside a "master"."""
  source, cluster = info.source, info.cluster
  if chief_type == MASTER and CHIEF in cluster:
    fail_215(source, "If `master` node exists in `cluster`, job `chief` is "
              "not supported.", "the cluster has both 'master' and 'chief' "
              "jobs.", "rename the legacy 'master' job to 'chief' (or drop "
              "'chief').")
  if chief_type not in cluster:
    fail_215(source, f'If "cluster" is set in TF_CONFIG, it must have one '
              f'"{chief_type}" node.', f"the cluster has jobs "
              f"{sorted(cluster)} but no chief (needed without a "
              "train_distribute strategy).", 'add "chief": ["host:port"], or '
              "use a train_distribute strategy (RunConfig(train_distribute="
              "...); harness.main: --strategy=collective or parameter_server)"
              " so that worker 0 acts as chief.")
  if len(cluster[chief_type]) > 1:
    fail_215(source, f'The "cluster" in TF_CONFIG must have only one '
              f'"{chief_type}" node.', f'cluster["{chief_type}"] lists '
              f"{len(cluster[chief_type])} addresses {cluster[chief_type]}.",
              f'keep one "{chief_type}" address (make the others workers).')


def _check_task_set(info):
  """With a cluster, the task has a type and a non-negative index."""
  source, cluster = info.source, info.cluster
  task_type, task_id = info.task_type, info.task_id
  if not task_type:
    fail_215(source, 'If "cluster" is set in TF_CONFIG, task type must be '
              "set.", 'it has a "cluster" but no task type.',
              f'add "task": {{"type": ..., "index": ...}} with a type of '
              f'{sorted(cluster)} or "evaluator".')
  if not info.has_index:
    fail_215(source, 'If "cluster" is set in TF_CONFIG, task index must be '
              "set.", f"task {json.dumps({'type': task_type})} has no index.",
              'add "index" to "task".')
  if task_id < 0:
    fail_215(source, "Task index must be non-negative number.",
              f"task {task_json(task_type, task_id)} has a negative index.",
              "count tasks of each job from 0.")


def _check_evaluator_without_master(info, chief_type):
  """2.15 refused an evaluator task beside a legacy "master" job."""
  if chief_type == MASTER:
    fail_215(info.source, "If `master` node exists in `cluster`, task_type "
              "`evaluator` is not supported.", "it names an evaluator "
              "task.", "rename the 'master' job to 'chief'.")


def _check_task_in_cluster(info):
  """The task's type is a job of the cluster and its index one of its tasks."""
  source, cluster = info.source, info.cluster
  task_type, task_id = info.task_type, info.task_id
  spec = _cluster_spec_text(cluster)
  if task_type not in cluster:
    fail_215(source, f"{task_type} is not a valid task_type in the "
              f"cluster_spec:\n{spec}{_NOTE}", f"task type {task_type!r} is "
              f"not a job of the cluster: valid task types are "
              f"{sorted(cluster) + [EVALUATOR]}.", f"use one of those, or add "
              f"a {task_type!r} job to the cluster.")
  count = info.num_tasks(task_type)
  if not 0 <= task_id < count:
    fail_215(source, f"{task_id} is not a valid task_id for task_type "
              f"{task_type} in the cluster_spec:\n{spec}{_NOTE}",
              f"task {task_json(task_type, task_id)} is not in the cluster: "
              f'cluster["{task_type}"] has {count} addresses (valid index '
              f"0..{count - 1}).", f'add the address to cluster["{task_type}"]'
              " or lower the index.")


def _check_coordinator_rules(info):
  """The distribute coordinator's checks (2.15, strategy and cluster)."""
  source, cluster = info.source, info.cluster
  task_type, task_id = info.task_type, info.task_id
  allowed = (CHIEF, WORKER, EVALUATOR, PS, None)
  disallowed = [j for j in cluster if j not in allowed]
  if disallowed:
    fail_215(source, "Disallowed task type found in cluster spec. Allowed "
              f"types are {allowed} and the cluster spec is "
              f"{_cluster_spec_text(cluster)}.", f"job(s) {disallowed} are "
              "not valid with a train_distribute strategy.", "rename them to "
              "chief, worker or ps.")
  if task_type not in allowed:
    fail_215(source, f"Unrecognized task_type: {task_type}, valid task "
              f"types are: {allowed}", f"task type {task_type!r} is not "
              "valid with a train_distribute strategy.",
              "use chief, worker, ps or evaluator.")
  if task_type is None:
    fail_215(source, 'If "cluster" is set in TF_CONFIG, task type must be '
              "set.", 'it has a "cluster" but no task type.',
              f'add "task": {{"type": ..., "index": ...}} with a type of '
              f'{sorted(cluster)} or "evaluator".')
  if task_type != EVALUATOR and task_type not in cluster:
    fail_215(source, f"`task_type` {task_type!r} not found in cluster_spec.",
              f"the cluster has jobs {sorted(cluster)}.",
              f"add a {task_type!r} job, or use one of those.")
  if len(cluster.get(CHIEF, ())) > 1:
    fail_215(source, "There must be at most one 'chief' job.",
              f'cluster["chief"] lists {len(cluster[CHIEF])} addresses.',
              'keep one "chief" address (make the others workers).')
  if task_id < 0:
    fail_215(source, "Task index must be non-negative number.",
              f"task {task_json(task_type, task_id)} has a negative index.",
              "count tasks of each job from 0.")
  if task_type in cluster and task_id >= info.num_tasks(task_type):
    count = info.num_tasks(task_type)
    fail_215(source, f"The `task_id` {task_id} exceeds the maximum id of "
              f"{task_type}.", f"task {task_json(task_type, task_id)} is not "
              f'in the cluster: cluster["{task_type}"] has {count} addresses '
              f"(valid index 0..{count - 1}).", f'add the address to cluster['
              f'"{task_type}"] or lower the index.')


def _check_value_types(info):
  for key in ("rpc_layer", "environment", "model_dir", "session_master",
              "eval_session_master"):
    value = getattr(info, key)
    if value is not None and not isinstance(value, str):
      fail(info.source, f'"{key}" is {value!r}; it must be a string.',
            f'set "{key}" to a string or leave it out.')


def check_servable(info):
  """What a server start needs: valid job names and addresses, one chief,
  and this task listed in the cluster.

  Raises:
    ClusterConfigError: naming the value, the rule and the fix.
  """
  source, cluster = info.source, info.cluster
  check_job_names(cluster, source)
  check_addresses(cluster, source)
  check_job_counts(cluster, source)
  count = info.num_tasks(info.task_type)
  if info.task_type != EVALUATOR and not 0 <= info.task_id < count:
    fail(source, f"task {task_json(info.task_type, info.task_id)} is not "
          f'in the cluster: cluster["{info.task_type}"] has {count} addresses'
          f" (valid index 0..{count - 1}); a server needs its own address.",
          "list the task's address, or correct the task.")


def validate(info, *, has_strategy, strategy_kind=None,
             require_cluster_for_task=False):
  """Checks that `info` can run: 2.15's rules and everything harness needs.

  Called once per process, by its plan (`harness.plan.plan_task`,
  for `harness.main` and every RunConfig), which keeps the error for the
  moment 2.15 raised it: before training (`run_config.
  check_supported_config`, from `Estimator.train` and
  `train_and_evaluate`). A server start (`python -m harness.server`,
  `harness.launch`) applies `check_servable`.

  Args:
    info: a `ClusterInfo` (None passes: local training).
    has_strategy: whether RunConfig has a `train_distribute` strategy.
    strategy_kind: its `StrategyKind` (`RunConfig.strategy_kind`; a
      `--strategy` string works too), or None.
    require_cluster_for_task: refuse a "task" without a "cluster" (2.15
      trained locally then; `harness.main` makes it a config error).

  Raises:
    ClusterConfigError: naming the value, the rule, the source and the fix.
  """
  if info is None:
    return
  source, cluster = info.source, info.cluster
  for wanted in ("cluster", "task"):
    near = difflib.get_close_matches(wanted, list(info.unknown_keys), n=1,
                                     cutoff=0.75)
    if near and (wanted == "cluster" and not info.has_cluster or
                 wanted == "task" and info.task_type is None):
      fail(source, f"has a key {near[0]!r} but no {wanted!r}: harness would "
            "silently ignore it.", f'rename {near[0]!r} to "{wanted}".')
  _check_value_types(info)
  validate_run_config(info, has_strategy=has_strategy)
  if not info.has_cluster:
    if require_cluster_for_task and info.task_type is not None:
      fail(source, f"names task {task_json(info.task_type, info.task_id)} "
            'but no "cluster": tf.estimator trained locally then, silently '
            "ignoring the task.", 'add the "cluster" (e.g. {"chief": '
            '["h0:2222"], "worker": ["h1:2222"]}), or drop "task" (or unset '
            "TF_CONFIG) for local training.")
    return
  coordinated = has_strategy and MASTER not in cluster
  if coordinated:  # 2.15's distribute coordinator checked these first.
    if CHIEF not in cluster and WORKER not in cluster:
      fail(source, f"cluster has jobs {sorted(cluster)}: a strategy needs a "
            '"chief" or a "worker" job.', 'add "worker": ["host:port", ...].')
    _check_coordinator_rules(info)
  check_job_names(cluster, source)
  check_addresses(cluster, source)
  check_job_counts(cluster, source)
  if info.task_type == EVALUATOR and info.task_id != 0:
    fail_215(source, "For distributed training, there can only be one "
              "`evaluator` task (with task id 0).  Given task id "
              f"{info.task_id}", f"task {task_json(EVALUATOR, info.task_id)}"
              ": there is at most one evaluator, so its index must be 0.",
              'run one evaluator with "index": 0.')
  check_strategy_jobs(strategy_kind, cluster, source=source)
