"""Job names of a cluster and the one spelling of a task ("worker/1").

No TensorFlow here (cluster/'s rule).
"""

__all__ = ["CHIEF", "WORKER", "PS", "EVALUATOR", "MASTER", "TRAINER_JOBS",
           "CHIEF_ORDER", "chief_task", "num_trainers", "LOCAL_LABEL",
           "CLIENT_LABEL", "TASK_RESTARTS_ENV", "task_label",
           "split_task_label"]

CHIEF, WORKER, PS, EVALUATOR, MASTER = (
    "chief", "worker", "ps", "evaluator", "master")
# The jobs that run training steps, chief first.
TRAINER_JOBS = (CHIEF, MASTER, WORKER)


# Who is the chief, as tf.estimator 2.15's RunConfig decided it: the master
# task, else the chief, else (a strategy's chief) worker 0.
CHIEF_ORDER = (MASTER, CHIEF, WORKER)


def chief_task(jobs):
  """The task of `jobs` ({job: [address]}) that is the job's chief, as
  (job, 0): master/0, else chief/0, else worker/0; None without any."""
  for job in CHIEF_ORDER:
    if jobs.get(job):
      return job, 0
  return None


def num_trainers(cluster):
  """How many tasks of `cluster` ({job: [address]}) run training steps."""
  return sum(len(cluster.get(job, ())) for job in TRAINER_JOBS)


# The label of a process outside any cluster.
LOCAL_LABEL = "local"
# The label of a standalone client driving a remote cluster.
CLIENT_LABEL = "client"
# How many times a supervisor (harness.launch) started this task before this
# process; read by the live metrics endpoint (harness_restarts).
TASK_RESTARTS_ENV = "HARNESS_TASK_RESTARTS"


def task_label(task_type, task_id):
  """The one spelling of a task in logs, markers and peers: "worker/1"."""
  return f"{task_type}/{task_id}"


def split_task_label(label):
  """`task_label`'s inverse: "worker/1" -> ("worker", 1)."""
  job, _, index = label.partition("/")
  return job, int(index)
