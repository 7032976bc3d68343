"""Kubeflow Trainer's webhooks and controller, ported for the k8s tests.

    errors = k8s_trainer_admission.runtime_validate_create(runtime)
    jobset = k8s_trainer_admission.trainer_jobset(runtime, trainjob)

The rules of the ClusterTrainingRuntime and TrainJob validating webhooks
that can apply to what `python -m harness.k8s --output=trainjob` renders,
and what the TrainJob controller does with that runtime when the TrainJob
arrives (which replicatedJob it scales, the labels it requires, the
variables it injects), ported from kubeflow/trainer at v2.2.1 (c505fc7c)
and v2.3.0 (658725bd), each citing `file:line`. Used by
tests/k8s_admission.py (`admit`), which runs the CRDs and the JobSet
webhook around them.
"""

import copy
import re

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# pkg/constants/constants.go:41 and :66 (both tags).
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
# trainingruntime_webhook.go:40-44 (both tags): ancestor -> its container.
_ANCESTOR_CONTAINERS = {"trainer": "node", "model-initializer":
                        "model-initializer", "dataset-initializer":
                        "dataset-initializer"}


def trainjob_cel(obj):
  """trainer.kubeflow.org_trainjobs.yaml:6012-6015 (v2.2.1), 6050-6053
  (v2.3.0); managedBy: :459-461 (v2.2.1)."""
  name, errors = obj["metadata"]["name"], []
  if not _DNS1035.match(name):
    errors.append("metadata.name must match RFC 1035 DNS label format")
  if len(name) > 63:
    errors.append("metadata.name must be no more than 63 characters")
  managed = obj["spec"].get("managedBy")
  if managed is not None and managed not in (
      "trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue"):
    errors.append("ManagedBy must be trainer.kubeflow.org/trainjob-controller"
                  " or kueue.x-k8s.io/multikueue if set")
  return errors


def runtime_cel(obj):
  """clustertrainingruntimes.yaml:115-116 (v2.2.1), 186-187 (v2.3.0); the
  template's JobSet rules are k8s_admission's."""
  policy, errors = obj["spec"].get("mlPolicy") or {}, []
  if sum(k in policy for k in ("torch", "mpi", "jax", "xgboost",
                               "flux")) > 1:
    errors.append("Only one of the policy can be configured")
  return errors


def runtime_validate_create(runtime):
  """validateReplicatedJobs: trainingruntime_webhook.go:66-105 (v2.2.1
  and v2.3.0), called by ClusterTrainingRuntime's ValidateCreate."""
  errors = []
  rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
  for index, rj in enumerate(rjobs):
    ancestor = rj["template"].get("metadata", {}).get("labels", {}).get(
        ANCESTOR_LABEL)
    if ancestor not in _ANCESTOR_CONTAINERS:
      continue
    path = f"spec.template.spec.replicatedJobs[{index}]"
    if rj.get("replicas", 1) != 1:  # :79-81
      errors.append(f"{path}.replicas: Invalid value: {rj['replicas']}: "
                    "always must be 1")
    containers = rj["template"]["spec"]["template"]["spec"]["containers"]
    if not any(c["name"] == _ANCESTOR_CONTAINERS[ancestor]
               for c in containers):  # :88-101
      errors.append(f"{path}.template.spec.template.spec.containers: "
                    "must contain the required container for the "
                    f"ancestor: {ancestor}")
  return errors


def trainjob_validate_create(trainjob, applied):
  """TrainJobValidator.ValidateCreate: trainjob_webhook.go:110-121 (both
  tags) -> ClusterTrainingRuntime.ValidateObjects
  (runtime/core/clustertrainingruntime.go:85-109 v2.2.1, :99-123 v2.3.0)
  -> the JobSet plugin's Validate (plugins/jobset/jobset.go:89 v2.2.1,
  :91 v2.3.0: initializer and runtimePatches rules, none set here)."""
  ref = trainjob["spec"]["runtimeRef"]
  key = f"{ref['kind']}.{ref['apiGroup']}"
  if key != "ClusterTrainingRuntime.trainer.kubeflow.org":
    return [f"unsupported runtime: {key}"]  # (TrainingRuntime: namespaced)
  if not any(o["kind"] == "ClusterTrainingRuntime"
             and o["metadata"]["name"] == ref["name"] for o in applied):
    return [f"spec.RuntimeRef: Invalid value: clustertrainingruntimes "
            f"\"{ref['name']}\" not found: specified clusterTrainingRuntime "
            "must be created before the TrainJob is created"]
  errors = []
  for key in ("initializer", "runtimePatches"):
    if trainjob["spec"].get(key):
      errors.append(f"spec.{key}: not ported (harness renders none)")
  return errors


# -------------------------------------------------- Trainer controller --

# plugins/trainjobstatus/trainjobstatus.go:43-51 (v2.3.0; v2.2.1 alike).
TRAINER_STATUS_ENV = ("KUBEFLOW_TRAINER_SERVER_URL",
                      "KUBEFLOW_TRAINER_SERVER_CA_CERT",
                      "KUBEFLOW_TRAINER_SERVER_TOKEN")
_STATUS_MOUNT = "/var/run/secrets/kubeflow/trainer"
_STATUS_VOLUME = "kubeflow-trainer-token"


def _upsert(items, item, key="name"):
  for i, old in enumerate(items):
    if old[key] == item[key]:
      items[i] = item
      return
  items.append(item)


def _status_plugin(trainjob, pod):
  """trainjobstatus.go EnforceMLPolicy :76-99: into every container of
  the trainer ancestor's pods, the variables and the token mount."""
  meta = trainjob["metadata"]
  values = (f"https://<status server>/apis/trainer.kubeflow.org/v1alpha1/"
            f"namespaces/{meta['namespace']}/trainjobs/{meta['name']}/status",
            f"{_STATUS_MOUNT}/ca.crt", f"{_STATUS_MOUNT}/token")
  for container in pod["containers"]:
    for name, value in zip(TRAINER_STATUS_ENV, values):
      _upsert(container.setdefault("env", []), {"name": name,
                                                "value": value})
    _upsert(container.setdefault("volumeMounts", []), {
        "name": _STATUS_VOLUME, "mountPath": _STATUS_MOUNT,
        "readOnly": True})
  _upsert(pod.setdefault("volumes", []), {"name": _STATUS_VOLUME,
                                          "projected": {"sources": [
      {"serviceAccountToken": {"audience": "trainer", "path": "token",
                               "expirationSeconds": 3600}},
      {"configMap": {"name": f"{meta['name']}-tls-config",
                     "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}})


def trainer_jobset(runtime, trainjob, gates=()):
  """The JobSet Kubeflow Trainer's controller builds when `trainjob` comes.

  Ported from v2.3.0 (v2.2.1 takes the same steps; lines differ):
  runtime/core/trainingruntime.go:141-249 newRuntimeInfo: the template's
  labels and annotations go to the JobSet (:144-145); a pod set per
  replicatedJob of `parallelism` pods (:189), or `mlPolicy.numNodes` for
  the `trainer` ancestor when the runtime has an mlPolicy (:193-195;
  harness's has none). plugins/plainml/plainml.go:46-71: TrainJob's
  `spec.trainer.numNodes` resizes the trainer ancestor's pod set, its env
  goes to the `node` container. plugins/trainjobstatus (gate
  TrainJobStatus, alpha, off by default): `_status_plugin`.
  plugins/jobset/jobset.go:302-323 SyncParallelCount (v2.2.1: Build
  :279-283): parallelism = completions = the pod set's count.
  plugins/jobset/builder.go:113-158 Trainer: the ancestor's replicas = 1;
  TrainJob's image, command, args and env into its `node` container.
  plugins/jobset/jobset.go:413-433 (v2.2.1 :308-328): the JobSet is named
  after the TrainJob, in its namespace, owned by it.
  """
  template = copy.deepcopy(runtime["spec"]["template"])
  job_trainer = trainjob["spec"].get("trainer") or {}
  for rj in template["spec"]["replicatedJobs"]:
    job = rj["template"]["spec"]
    pod = job["template"]["spec"]
    ancestor = rj["template"].get("metadata", {}).get("labels", {}).get(
        ANCESTOR_LABEL)
    count = job.get("parallelism", 1)
    if ancestor == "trainer":
      count = job_trainer.get("numNodes", count)
      if "TrainJobStatus" in gates:
        _status_plugin(trainjob, pod)
      rj["replicas"] = 1
      for container in pod["containers"]:
        if container["name"] != "node":
          continue
        for key in ("image", "command", "args"):
          if key in job_trainer:
            container[key] = job_trainer[key]
        for var in job_trainer.get("env", ()):
          _upsert(container.setdefault("env", []), var)
    job["parallelism"] = job["completions"] = count
  meta = trainjob["metadata"]
  return {"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": {
      "name": meta["name"], "namespace": meta["namespace"],
      "labels": dict(template.get("metadata", {}).get("labels", {})),
      "ownerReferences": [{"apiVersion": trainjob["apiVersion"],
                           "kind": "TrainJob", "name": meta["name"],
                           "uid": "<uid>", "controller": True,
                           "blockOwnerDeletion": True}]},
          "spec": template["spec"]}
