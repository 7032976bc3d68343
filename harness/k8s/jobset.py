"""A harness training cluster as a JobSet, or as a Kubeflow Trainer v2 job.

    objects = jobset.render_jobset(config)     # --output=jobset
    objects = jobset.render_trainjob(config)   # --output=trainjob

One JobSet (jobset.x-k8s.io/v1alpha2) per training job, a replicatedJob
per TF_CONFIG task type (chief, worker, ps, evaluator), each ONE Indexed
Job whose pods are that type's tasks. No TF_CONFIG is written: each pod's
template exposes its place (JobSet, replicatedJob, Job index, completion
index; downward API) and the task counts as variables, from which
`harness.cluster.jobset_env` builds TF_CONFIG with the stable DNS names of
`network.enableDNSHostnames`. Every pod also gets the JobSet's restart
attempt as `JOBSET_RESTART_ATTEMPT` (pod annotation
`jobset.sigs.k8s.io/restart-attempt`).

What every released JobSet (v0.11.1, v0.12.0) admits with its default
feature gates, and tests/k8s_admission.py checks:

* successPolicy: the JobSet succeeds when the chief (without one: every
  worker) and the evaluator have succeeded; JobSet then ends the rest (ps).
* Each Job's podFailurePolicy (`pods.pod_failure_policy`): exit status 2
  (a bad flag or TF_CONFIG) fails the Job at once; exit 143 (preempted,
  after the stop checkpoint) and evictions replace the pod without using
  a retry. A trainer Job (chief, worker, ps) has `backoffLimit: 0`: any
  other failed pod fails it. The evaluator's Job retries its own pod
  `--restarts_per_task` times first, so a failing evaluator never
  restarts the trainers.
* failurePolicy, first matching rule: a Job failed by its podFailurePolicy
  fails the JobSet; a failed trainer Job restarts the whole group, at most
  `--restarts_per_task` times (`maxRestarts`); an evaluator Job that used
  up its retries fails the JobSet (`FailJobSet`), or, with
  `--jobset_feature_gates=RestartJob` (JobSet >= v0.12.0, alpha gate on),
  is recreated alone (`RestartJob`).
* The evaluator's replicatedJob `dependsOn` the chief (without one: the
  workers) being Ready: it starts once there is a trainer to follow.
* `--output=trainjob`: the same JobSet spec as the template of a
  ClusterTrainingRuntime (`trainer.kubeflow.org/framework: tensorflow`)
  and a TrainJob referring to it (trainer.kubeflow.org/v1alpha1). The
  chief's replicatedJob (without a chief: the workers') carries the label
  `trainer.kubeflow.org/trainjob-ancestor-step: trainer` and its container
  is named `node`, as Trainer's runtime webhook requires of that label:
  Trainer injects its TrainJob-status variables there.

Pods keep harness's hardening (`k8s/policy.py`); the NetworkPolicy
selects them by the JobSet's own `jobset-name` label.

This module imports nothing from TensorFlow.
"""

import json

from harness.cluster import jobs
from harness.cluster import jobset_env
from harness.cluster import restart_attempt
from harness.k8s import config as config_lib
from harness.k8s import pods
from harness.k8s import policy

__all__ = ["render_jobset", "render_trainjob", "jobset_spec",
           "runtime_name", "JOBSET_API", "TRAINER_API", "ANCESTOR_LABEL",
           "TRAINER_CONTAINER"]

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
_TRAINER_GROUP = TRAINER_API.split("/")[0]
_FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
# The Job failure reason of a podFailurePolicy `FailJob` (exit status 2).
_POD_FAILURE_POLICY_REASON = "PodFailurePolicy"
# In the Job's failure message when a pod condition matched a `FailJob`
# rule ("Pod ns/p has condition DisruptionTarget matching FailJob rule at
# index 1"; Kubernetes pkg/controller/job/pod_failure_policy.go).
_DISRUPTION_MESSAGE = "condition DisruptionTarget matching FailJob rule"
# Kubeflow Trainer: the replicatedJob it treats as the trainer, and the
# container it requires there (pkg/constants/constants.go,
# pkg/webhooks/trainingruntime_webhook.go).
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
_ANCESTOR_TRAINER = "trainer"
TRAINER_CONTAINER = "node"


def _field_env(name, path):
  return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _place_env(config):
  """The variables `jobset_env` reads: the pod's place and the cluster."""
  tasks = {}
  for task_type, _ in config_lib.training_tasks(config):
    tasks[task_type] = tasks.get(task_type, 0) + 1
  return [
      _field_env(jobset_env.JOBSET_NAME_ENV,
                 f"metadata.labels['{jobset_env.JOBSET_NAME_LABEL}']"),
      _field_env(jobset_env.REPLICATED_JOB_ENV,
                 f"metadata.labels['{jobset_env.REPLICATED_JOB_LABEL}']"),
      _field_env(jobset_env.JOB_INDEX_ENV,
                 f"metadata.labels['{jobset_env.JOB_INDEX_LABEL}']"),
      _field_env(jobset_env.POD_INDEX_ENV, "metadata.annotations["
                 f"'{jobset_env.POD_INDEX_ANNOTATION}']"),
      {"name": jobset_env.TASKS_ENV, "value": json.dumps(tasks)},
      {"name": jobset_env.PORT_ENV, "value": str(config.port)},
      # The JobSet restart attempt, set by the JobSet controller on every
      # pod it creates (kubernetes-sigs/jobset pkg/constants/constants.go
      # RestartsKey); harness.main reads it (cluster/restart_attempt).
      _field_env(restart_attempt.RESTART_ATTEMPT_ENV, "metadata.annotations["
                 f"'{restart_attempt.RESTART_ATTEMPT_ANNOTATION}']"),
  ]


def _lead_type(config):
  """The replicatedJob whose task 0 leads: the chief, else the workers."""
  return jobs.CHIEF if config.chief else jobs.WORKER


def _replicated_job(config, task_type, count, *, trainer_runtime):
  """One Indexed Job of `count` pods, the tasks of `task_type`.

  `trainer_runtime`: for a Kubeflow Trainer runtime, whose trainer
  replicatedJob (the lead type's) is labelled and runs container `node`.
  """
  evaluator = task_type == jobs.EVALUATOR
  ancestor = trainer_runtime and task_type == _lead_type(config)
  name = TRAINER_CONTAINER if ancestor else config_lib.CONTAINER
  # Every task, ps too, gets the GPUs: harness.main checks that each task
  # sees --num_gpus_per_worker devices.
  container = pods.container(
      config, args=pods.MAIN + tuple(pods.main_args(config)),
      env=_place_env(config), gpus=config.num_gpus_per_worker,
      ports=not evaluator, name=name)
  component = "evaluator" if evaluator else "trainer"
  labels = dict(pods.labels(config, component),
                **{"harness.k8s/task-type": task_type})
  job_spec = {
      "completionMode": "Indexed", "completions": count,
      "parallelism": count,
      # A trainer's failed pod fails its Job at once: the JobSet restarts
      # the group. The evaluator retries its pod within its own Job.
      "backoffLimit": config.restarts_per_task if evaluator else 0,
      "podReplacementPolicy": "Failed",
      "podFailurePolicy": pods.pod_failure_policy(
          name, fail_on_disruption=not evaluator and (
              config.restart_policy == "group")),
      "template": {"metadata": {"labels": labels},
                   "spec": pods.pod_spec(config, container,
                                         restart_policy="Never",
                                         subdomain=False)},
  }
  job_labels = dict(labels)
  if ancestor:
    job_labels[ANCESTOR_LABEL] = _ANCESTOR_TRAINER
  result = {"name": task_type, "replicas": 1,
            "template": {"metadata": {"labels": job_labels},
                         "spec": job_spec}}
  if evaluator:  # Started once there is a trainer whose checkpoints to read.
    result["dependsOn"] = [{"name": _lead_type(config), "status": "Ready"}]
  return result


def _failure_policy(config, trainer_types):
  """The JobSet's failurePolicy; its first matching rule applies."""
  rules = []
  if config.restart_policy == "group":  # Before the bad-flags rule: the
    # same Job failure reason, told apart by Kubernetes' message.
    rules.append({"name": "disruptionRestartsTheGroup",
                  "action": "RestartJobSetAndIgnoreMaxRestarts",
                  "onJobFailureReasons": [_POD_FAILURE_POLICY_REASON],
                  "onJobFailureMessagePatterns": [_DISRUPTION_MESSAGE],
                  "targetReplicatedJobs": list(trainer_types)})
  rules.append({"name": "badFlagsFailTheJobSet", "action": "FailJobSet",
                "onJobFailureReasons": [_POD_FAILURE_POLICY_REASON]})
  if config.evaluator and "RestartJob" in config.feature_gates:
    rules.append({"name": "evaluatorRestartsAlone", "action": "RestartJob",
                  "targetReplicatedJobs": [jobs.EVALUATOR]})
  elif config.evaluator:  # Its pod's retries are used up: stop, say so.
    rules.append({"name": "evaluatorFailedFailsTheJobSet",
                  "action": "FailJobSet",
                  "targetReplicatedJobs": [jobs.EVALUATOR]})
  rules.append({"name": "trainerRestartsTheGroup", "action": "RestartJobSet",
                "targetReplicatedJobs": list(trainer_types)})
  return {"maxRestarts": config.restarts_per_task, "rules": rules}


def jobset_spec(config, *, trainer_runtime=False):
  """The JobSet spec of `config`.

  `trainer_runtime`: as a Kubeflow Trainer ClusterTrainingRuntime's
  template (`render_trainjob`).
  """
  counts = {}
  for task_type, _ in config_lib.training_tasks(config):
    counts[task_type] = counts.get(task_type, 0) + 1
  if config.evaluator:
    counts[jobs.EVALUATOR] = 1
  finishers = [_lead_type(config)]
  if config.evaluator:  # Its last evaluation and export follow the chief's.
    finishers.append(jobs.EVALUATOR)
  return {
      "network": {"enableDNSHostnames": True,
                  "publishNotReadyAddresses": True},
      "successPolicy": {"operator": "All", "targetReplicatedJobs": finishers},
      "failurePolicy": _failure_policy(
          config, [t for t in counts if t != jobs.EVALUATOR]),
      "replicatedJobs": [
          _replicated_job(config, task_type, count,
                          trainer_runtime=trainer_runtime)
          for task_type, count in counts.items()],
  }


def _network_policy(config):
  """Only pods of this JobSet (and `allow_cidr`) reach the TF port."""
  by_jobset = {jobset_env.JOBSET_NAME_LABEL: config.name}
  return policy.network_policy(
      name=f"{config.name}-tf", namespace=config.namespace,
      labels=by_jobset, instance_labels=by_jobset, port=config.port,
      allow_cidr=config.allow_cidr, metrics_port=config.metrics_port,
      metadata_labels=pods.labels(config, "trainer"))


def render_jobset(config):
  """[JobSet, NetworkPolicy] of `config` (`--output=jobset`)."""
  return [{"apiVersion": JOBSET_API, "kind": "JobSet",
           "metadata": pods.meta(config, config.name, "trainer"),
           "spec": jobset_spec(config)},
          _network_policy(config)]


def runtime_name(config):
  """The ClusterTrainingRuntime's name (cluster-scoped: has the namespace)."""
  return f"harness-tf-{config.namespace}-{config.name}"


def render_trainjob(config):
  """[ClusterTrainingRuntime, TrainJob, NetworkPolicy] (`--output=trainjob`).

  The runtime holds the whole JobSet spec: Trainer v2's TrainJob overrides
  (numNodes, image, args) address one `node` Job, and TensorFlow needs a
  Job per task type. Trainer names the JobSet after the TrainJob, so the
  pods' DNS names and TF_CONFIG are those of `--output=jobset`.
  """
  runtime_labels = dict(pods.labels(config, "trainer"),
                        **{_FRAMEWORK_LABEL: "tensorflow"})
  runtime = {"apiVersion": TRAINER_API, "kind": "ClusterTrainingRuntime",
             "metadata": {"name": runtime_name(config),
                          "labels": runtime_labels},
             "spec": {"template": {"metadata": {"labels": pods.labels(
                 config, "trainer")}, "spec": jobset_spec(
                     config, trainer_runtime=True)}}}
  trainjob = {"apiVersion": TRAINER_API, "kind": "TrainJob",
              "metadata": pods.meta(config, config.name, "trainer"),
              "spec": {"runtimeRef": {"apiGroup": _TRAINER_GROUP,
                                      "kind": "ClusterTrainingRuntime",
                                      "name": runtime_name(config)}}}
  return [runtime, trainjob, _network_policy(config)]
