"""TF_CONFIG from a JobSet pod's place, when no TF_CONFIG is set.

    tf_config = jobset_env.tf_config_dict(os.environ)   # None outside JobSet

A pod of a JobSet (jobset.x-k8s.io, also what Kubeflow Trainer v2 runs)
knows its JobSet, its replicatedJob and its Job's index from labels the
controller sets, and its index in the Job from the Indexed Job's
completion index. `python -m harness.k8s --output=jobset|trainjob` exposes
them through the downward API as the variables below, together with the
number of pods of each trainer type and the TF port. From them this module
builds the cluster with the stable DNS names JobSet gives its pods
(`network.enableDNSHostnames`):
`<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>:<port>`.

The only caller is `cluster.tf_config.from_environ`, so every binary that
reads TF_CONFIG sees the derived one; an explicit TF_CONFIG wins.

This module imports nothing from TensorFlow.
"""

import json

from harness import errors
from harness.cluster import jobs

__all__ = [
    "JOBSET_NAME_ENV", "REPLICATED_JOB_ENV", "JOB_INDEX_ENV", "POD_INDEX_ENV",
    "COMPLETION_INDEX_ENV", "TASKS_ENV", "PORT_ENV", "SUBDOMAIN_ENV",
    "JOBSET_NAME_LABEL", "REPLICATED_JOB_LABEL", "JOB_INDEX_LABEL",
    "POD_INDEX_ANNOTATION", "SOURCE", "TRAINER_TYPES",
    "in_jobset_pod", "hostname", "tf_config_dict",
]

# Where the controller writes the pod's place (read via the downward API).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
POD_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"

# The variables the rendered pod template sets from them.
JOBSET_NAME_ENV = "HARNESS_JOBSET_NAME"
REPLICATED_JOB_ENV = "HARNESS_JOBSET_REPLICATED_JOB"
JOB_INDEX_ENV = "HARNESS_JOBSET_JOB_INDEX"
POD_INDEX_ENV = "HARNESS_JOBSET_POD_INDEX"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"  # Kubernetes' own fallback.
# Rendered as values: {"chief": 1, "worker": 2, "ps": 1} and the TF port.
TASKS_ENV = "HARNESS_JOBSET_TASKS"
PORT_ENV = "HARNESS_JOBSET_PORT"
SUBDOMAIN_ENV = "HARNESS_JOBSET_SUBDOMAIN"  # Unset: the JobSet's name.

SOURCE = f"the JobSet pod's environment ({JOBSET_NAME_ENV}, ...)"
TRAINER_TYPES = (jobs.CHIEF, jobs.WORKER, jobs.PS)  # The cluster's order.


def _fail(rule, fix):
  raise errors.ClusterConfigError(f"{SOURCE}: {rule} Fix: {fix}")


def in_jobset_pod(environ):
  """Whether `environ` names a JobSet (the pod template sets the variable)."""
  return bool((environ.get(JOBSET_NAME_ENV) or "").strip())


def hostname(jobset, replicated_job, pod_index, job_index=0):
  """The pod's hostname in a JobSet with `network.enableDNSHostnames`."""
  return f"{jobset}-{replicated_job}-{job_index}-{pod_index}"


def _index(environ, *names):
  """The first of `names` set in `environ`, as a non-negative integer."""
  for name in names:
    text = (environ.get(name) or "").strip()
    if text:
      if not text.isdigit():
        _fail(f"{name}={text!r} is not a non-negative integer.",
              "set it from the pod's labels as harness.k8s renders it.")
      return int(text)
  _fail(f"{' / '.join(names)} is not set.",
        "render the JobSet with `python -m harness.k8s --output=jobset` (its "
        "pod template sets it through the downward API).")


def _tasks(environ):
  """{trainer type: pod count} from TASKS_ENV, in cluster order."""
  text = environ.get(TASKS_ENV) or ""
  try:
    tasks = json.loads(text)
  except (ValueError, RecursionError):  # Not JSON, or nested too deep.
    tasks = None
  if not isinstance(tasks, dict) or not tasks or any(
      job not in TRAINER_TYPES or isinstance(n, bool) or not isinstance(
          n, int) or n < 1 for job, n in tasks.items()):
    _fail(f"{TASKS_ENV}={text!r} must be a JSON object mapping chief, worker "
          "or ps to a pod count >= 1.",
          'e.g. {"chief": 1, "worker": 2}, as harness.k8s renders it.')
  return {job: tasks[job] for job in TRAINER_TYPES if job in tasks}


def _port(environ):
  text = (environ.get(PORT_ENV) or "").strip()
  if not text.isdigit() or not 0 < int(text) < 65536:
    _fail(f"{PORT_ENV}={text!r} is not a TCP port (1-65535).",
          "render the JobSet with harness.k8s, which sets it from --port.")
  return int(text)


def tf_config_dict(environ):
  """The TF_CONFIG of a JobSet pod, or None outside a JobSet.

  Args:
    environ: a mapping such as `os.environ`.

  Returns:
    {"cluster": {...}, "task": {"type": ..., "index": ...}}: the trainer
    types of TASKS_ENV with their pods' DNS names, and this pod's task (its
    replicatedJob's name and its index in the Job), or None when
    JOBSET_NAME_ENV is unset.

  Raises:
    ClusterConfigError: a variable is missing or malformed, or the pod's
      replicatedJob or index is not part of the cluster.
  """
  if not in_jobset_pod(environ):
    return None
  jobset = environ[JOBSET_NAME_ENV].strip()
  replicated_job = (environ.get(REPLICATED_JOB_ENV) or "").strip()
  tasks, port = _tasks(environ), _port(environ)
  if replicated_job not in tuple(tasks) + (jobs.EVALUATOR,):
    _fail(f"{REPLICATED_JOB_ENV}={replicated_job!r} is none of the task "
          f"types {list(tasks) + [jobs.EVALUATOR]}.",
          "name each replicatedJob after its TF_CONFIG task type.")
  job_index = _index(environ, JOB_INDEX_ENV)
  pod_index = _index(environ, POD_INDEX_ENV, COMPLETION_INDEX_ENV)
  if job_index != 0:
    _fail(f"{JOB_INDEX_ENV}={job_index}: harness runs each task type as ONE "
          "Indexed Job (replicas: 1) whose pods are the tasks.",
          "set the replicatedJob's replicas to 1 and its parallelism to the "
          "task count.")
  count = tasks.get(replicated_job, 1)
  if pod_index >= count:
    _fail(f"pod index {pod_index} of {replicated_job!r} is outside its "
          f"{count} task(s) in {TASKS_ENV}.",
          "keep the Job's completions equal to the task count.")
  subdomain = (environ.get(SUBDOMAIN_ENV) or "").strip() or jobset
  cluster = {job: [f"{hostname(jobset, job, i)}.{subdomain}:{port}"
                   for i in range(n)] for job, n in tasks.items()}
  return {"cluster": cluster,
          "task": {"type": replicated_job, "index": pod_index}}
