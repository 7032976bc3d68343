"""What tf.estimator 2.15's RunConfig derived for a task from TF_CONFIG.

`derive(info, has_strategy=...)` returns them all as one `TaskFacts`; the
single facts (`master_address`, `is_chief`, ...) are public too. No
TensorFlow here.
"""

import dataclasses

from harness.cluster.jobs import CHIEF
from harness.cluster.jobs import EVALUATOR
from harness.cluster.jobs import MASTER
from harness.cluster.jobs import PS
from harness.cluster.jobs import WORKER

__all__ = ["TaskFacts", "derive", "master_address", "evaluation_master",
           "is_chief", "num_worker_replicas", "num_ps_replicas",
           "global_id_in_cluster", "device_filters"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskFacts:
  """What tf.estimator 2.15's RunConfig derived for one task.

  With a strategy these are the values its distribute coordinator gave the
  config inside each worker (what `model_fn` saw as `config`).
  """
  task_type: str
  task_id: int
  master: str
  evaluation_master: str
  is_chief: bool
  num_worker_replicas: int
  num_ps_replicas: int
  global_id_in_cluster: int | None
  cluster: dict[str, list[str]]
  device_filters: tuple[str, ...] | None


def _local(info):
  return info is None or not info.has_cluster


def _uses_coordinator(info, has_strategy):
  return has_strategy and not _local(info) and MASTER not in info.cluster


def master_address(info, has_strategy=False):
  """The session target of this task ("" for in-process), as 2.15."""
  if _local(info):
    return (info.session_master if info else None) or ""
  if info.task_type == EVALUATOR:
    return ""
  coordinated = _uses_coordinator(info, has_strategy)
  if info.session_master is not None and not coordinated:
    return info.session_master
  training = info.training_cluster
  if not coordinated and len(training) == 1 and sum(
      len(a) for a in training.values()) == 1:
    return ""  # One node: a direct session beats an RPC one.
  return f"{info.rpc_layer}://{info.task_address}"


def evaluation_master(info, has_strategy=False):
  """The evaluator's session target ("" for in-process)."""
  if _local(info) or (info.task_type == EVALUATOR and not has_strategy):
    return (info.eval_session_master if info else None) or ""
  return ""


def is_chief(info, has_strategy=False):
  """Whether this task is the chief (writes checkpoints and summaries)."""
  if _local(info):
    return True
  if MASTER in info.cluster:
    return info.task_type == MASTER
  if has_strategy:
    return info.task_type in (CHIEF, EVALUATOR) or (
        CHIEF not in info.cluster and info.task_type == WORKER and
        info.task_id == 0)
  return info.task_type == CHIEF


def num_worker_replicas(info):
  """Chief (or master) plus workers; 1 when local, 0 for the evaluator."""
  if _local(info):
    return 1
  if info.task_type == EVALUATOR:
    return 0
  return sum(info.num_tasks(j) for j in info.worker_jobs)


def num_ps_replicas(info):
  """Parameter servers in the cluster; 0 when local or for the evaluator."""
  if _local(info) or info.task_type == EVALUATOR:
    return 0
  return info.num_tasks(PS)


def global_id_in_cluster(info):
  """Unique id: chief 0, other jobs by name, ps last; None for evaluator."""
  if _local(info):
    return 0
  if info.task_type == EVALUATOR:
    return None
  chief_type = MASTER if MASTER in info.cluster else CHIEF
  training = info.training_cluster
  order = [chief_type] if chief_type in training else []
  order += [j for j in sorted(training) if j not in (chief_type, PS)]
  order += [PS] if PS in training else []
  next_id = 0
  for job in order:
    if job == info.task_type:
      return next_id + info.task_id
    next_id += len(training[job])
  return None  # A task outside the cluster: `validate` refuses it.


def device_filters(info):
  """Devices a task should see (2.15's session-config device_filters)."""
  if _local(info):
    return None
  task_type = info.task_type
  if task_type in (MASTER, CHIEF):
    return ("/job:ps", f"/job:{task_type}")
  if task_type == WORKER:
    return ("/job:ps", f"/job:worker/task:{info.task_id}")
  if task_type == PS:
    return ("/job:ps", "/job:worker", "/job:chief", "/job:master")
  return None


def derive(info, *, has_strategy):
  """All derived facts of this task in one object.

  Args:
    info: a validated `ClusterInfo`, or None for local training.
    has_strategy: whether a `train_distribute` strategy is used.

  Returns:
    A `TaskFacts`.
  """
  local = _local(info)
  evaluator = not local and info.task_type == EVALUATOR
  return TaskFacts(
      task_type=WORKER if local else info.task_type,
      task_id=0 if local else info.task_id,
      master=master_address(info, has_strategy),
      evaluation_master=evaluation_master(info, has_strategy),
      is_chief=is_chief(info, has_strategy),
      num_worker_replicas=num_worker_replicas(info),
      num_ps_replicas=num_ps_replicas(info),
      global_id_in_cluster=global_id_in_cluster(info),
      cluster={} if local or evaluator else info.training_cluster,
      device_filters=device_filters(info))
