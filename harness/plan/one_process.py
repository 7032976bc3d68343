"""One-process jobs in a cluster: which task runs them, and its local plan.

    from harness import plan as plan_lib

    plan_lib.one_process_task(plan)      # "chief/0" ("local" alone)
    plan_lib.runs_one_process_job(plan)  # False: this task exits
    local = plan_lib.in_process(plan)    # the plan the runner runs with

Evaluating, predicting or exporting is one process's job. In a TF_CONFIG
cluster the chief (`harness.cluster.chief_task`: master, else chief,
else worker 0, as 2.15 chose it) runs it in-process as a local job:
nothing serves the task's own address (only training starts a server),
so 2.15's session target grpc://<this task> would wait for ever, and a
worker-only cluster without a strategy has no chief. The other tasks exit.
Decided here, from the job's plan, without planning again. No TensorFlow.
"""

import dataclasses

from harness import cluster as cluster_lib
from harness.cluster.strategy_kind import StrategyKind
from harness.plan import task

__all__ = ["one_process_task", "runs_one_process_job", "in_process"]


def one_process_task(plan):
  """The label of the task that runs a one-process job in `plan`'s
  cluster: its chief; "local" without a cluster; None if it has none
  (`cluster.validate` refuses that cluster)."""
  if not plan.role.in_cluster:
    return cluster_lib.LOCAL_LABEL
  chief = cluster_lib.chief_task(plan.cluster_info.cluster)
  return None if chief is None else cluster_lib.task_label(*chief)


def runs_one_process_job(plan):
  """Whether this task runs a one-process job (the others exit at once):
  it is `one_process_task`, and not an evaluator."""
  if not plan.role.in_cluster:
    return True
  return plan.role != task.Role.EVALUATOR and (
      plan.task_label == one_process_task(plan))


def in_process(plan):
  """`plan` as a local job: no cluster, no strategy, in-process sessions;
  TF_CONFIG's other keys, the model_dir and the knobs as decided."""
  if not plan.role.in_cluster:
    return plan
  info = dataclasses.replace(plan.cluster_info, cluster={}, task_type=None,
                             task_id=0, session_master=None,
                             eval_session_master=None)
  return dataclasses.replace(
      plan, cluster_info=info, role=task.Role.LOCAL,
      task_label=info.task_label,
      facts=cluster_lib.derive(info, has_strategy=False), is_chief=True,
      strategy=StrategyKind.DEFAULT, replicas=1, problems=())
