"""What the released JobSet and Kubeflow Trainer admit, ported for the tests.

    objects = harness.k8s.render(config)
    admitted = k8s_admission.admit(objects, "jobset-v0.12.0")  # or Refused

A rendering is right when the engine users install admits it, and a CRD
schema is only part of admission. For each release in
tests/data/k8s/crds/released/ (`RELEASES`) this module runs, in the API
server's order: the CRD's structural defaults, its openAPIV3Schema (strict:
an unknown field fails, as `kubectl apply --validate=strict`), the CRD's
CEL rules that apply on create, then the release's mutating and validating
webhooks, ported rule by rule from the source at the tag (each rule cites
`file:line` at both tags). A refusal raises `Refused` with the engine's
own sentence. Kubeflow Trainer admits the ClusterTrainingRuntime and the
TrainJob (its webhooks: tests/k8s_trainer_admission.py), then its
controller builds the JobSet (`k8s_trainer_admission.trainer_jobset`,
ported from its source), which must pass the JobSet release Trainer
vendors.

Feature gates are the releases' defaults (all alpha gates off) unless a
test passes `gates`. Ported: the rules that can apply to what harness
renders. Not ported, because harness sets none of the fields they check:
`spec.managedBy`, `spec.network.subdomain`, `spec.coordinator`,
`spec.volumeClaimPolicies`, the in-place-restart rules (gate off), Trainer's
initializer and runtimePatches checks, and the ML-policy plugins'
validators (torch, mpi, jax, xgboost, flux return at once without their
mlPolicy; volcano without a podGroupPolicy). `unknown_cel_rules`
lists what a CRD gains a create-time CEL rule this module does not know.

Sources: kubernetes-sigs/jobset v0.11.1 (ecaf56ab) and v0.12.0 (f22e565a);
kubeflow/trainer v2.2.1 (c505fc7c) and v2.3.0 (658725bd).
"""

import copy
import dataclasses
import functools
import re

import jsonschema
import yaml

from tests import conftest
from tests import k8s_trainer_admission as trainer_lib

RELEASED_DIR = conftest.K8S_CRDS_DIR / "released"
_MAX_INT32 = 2**31 - 1
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
# batchv1 JobReason* (jobset_webhook.go:76-82 v0.11.1, :85-91 v0.12.0).
_JOB_FAILURE_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded",
                        "FailedIndexes", "MaxFailedIndexesExceeded",
                        "PodFailurePolicy")
# CEL messages of rules that only apply on update (transition rules).
_UPDATE_ONLY_CEL = ("self == oldSelf",)


@dataclasses.dataclass(frozen=True)
class Release:
  """One released engine: its CRDs, gates and (Trainer) vendored JobSet."""
  name: str
  tag: str
  commit: str
  gates: tuple  # Feature gates the release knows; every alpha one is off.
  jobset: str = ""  # Trainer: the JobSet release it vendors.


RELEASES = {r.name: r for r in (
    Release("jobset-v0.11.1", "v0.11.1",
            "ecaf56ab2dffb6edce074beda10ea092e71f62e5",
            ("InPlaceRestart",)),  # pkg/features/features.go:48-50
    Release("jobset-v0.12.0", "v0.12.0",
            "f22e565ac3cc3265c7c45ef67ecffdc689af5d77",
            # pkg/features/features.go:68-76 (TLSOptions: beta, on).
            ("InPlaceRestart", "RestartJob", "ElasticJobSet")),
    Release("trainer-v2.2.1", "v2.2.1",
            "c505fc7ccec98bb326cee56144bc5ee92be5048d",
            ("TrainJobStatus",), "jobset-v0.11.1"),  # features.go:48
    Release("trainer-v2.3.0", "v2.3.0",
            "658725bdae5c7e3a0854d93ac6ff492e109a22ab",
            ("TrainJobStatus",), "jobset-v0.12.0"),
)}
_CRD_FILES = {
    "JobSet": "jobset.x-k8s.io_jobsets.yaml",
    "TrainJob": "trainer.kubeflow.org_trainjobs.yaml",
    "ClusterTrainingRuntime":
        "trainer.kubeflow.org_clustertrainingruntimes.yaml",
}


class Refused(AssertionError):
  """An engine refused an object; the message holds its own sentence(s)."""


def _refuse(release, obj, errors):
  if errors:
    raise Refused(f"{release} refuses {obj['kind']} "
                  f"{obj['metadata'].get('name')!r}: " + "; ".join(errors))


# ------------------------------------------------------------ CRD part --

@functools.lru_cache(maxsize=None)
def crd(release, kind):
  """The served version of `kind`'s CRD in `release` (a dict; read-only)."""
  path = RELEASED_DIR / release / _CRD_FILES[kind]
  (version,) = [v for v in yaml.safe_load(path.read_text())["spec"][
      "versions"] if v["served"]]
  return version


def _strict(schema):
  """`schema` refusing unknown fields where the CRD lists the fields."""
  if isinstance(schema, list):
    return [_strict(s) for s in schema]
  if not isinstance(schema, dict):
    return schema
  result = {k: _strict(v) for k, v in schema.items()}
  if ("properties" in schema and "additionalProperties" not in schema
      and not schema.get("x-kubernetes-preserve-unknown-fields")):
    result["additionalProperties"] = False
  return result


def _default(schema, obj):
  """The API server's structural defaulting: `default` of absent fields."""
  if isinstance(obj, dict):
    for key, sub in schema.get("properties", {}).items():
      if key not in obj and "default" in sub:
        obj[key] = copy.deepcopy(sub["default"])
      if key in obj:
        _default(sub, obj[key])
  elif isinstance(obj, list) and "items" in schema:
    for item in obj:
      _default(schema["items"], item)


def _cel_rules(schema, found):
  """Every x-kubernetes-validations message in `schema`, into `found`."""
  if isinstance(schema, dict):
    for rule in schema.get("x-kubernetes-validations", ()):
      found.add((rule["message"], rule["rule"]))
    for value in schema.values():
      _cel_rules(value, found)
  elif isinstance(schema, list):
    for value in schema:
      _cel_rules(value, found)
  return found


def _jobset_cel(spec):
  """jobset.x-k8s.io_jobsets.yaml:10028-10030 (v0.11.1), 10031-10033
  (v0.12.0); the same rule on the runtimes' template spec."""
  if (spec.get("startupPolicy", {}).get("startupPolicyOrder") == "InOrder"
      and any("dependsOn" in rj for rj in spec.get("replicatedJobs", ()))):
    return ["StartupPolicy and DependsOn APIs are mutually exclusive"]
  return []


# The create-time CEL messages ported above.
PORTED_CEL = frozenset((
    "StartupPolicy and DependsOn APIs are mutually exclusive",
    "metadata.name must match RFC 1035 DNS label format",
    "metadata.name must be no more than 63 characters",
    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
    "kueue.x-k8s.io/multikueue if set",
    "Only one of the policy can be configured",
))
# Create-time CEL rules not ported: message -> the field they sit under,
# which harness never renders (checked by the tests on every rendering).
CEL_ON_UNRENDERED_FIELDS = {
    "namespace cannot be set for VolumeClaimPolicies templates":
        "volumeClaimPolicies",
    "NumProcPerNode in fluxPolicy must be >= 1": "mlPolicy",
    "containerNames must not include the main node container because PET_* "
    "envs are always injected into it": "mlPolicy",
    "lastUpdatedTime is required when trainerStatus is present": "status",
    "storageUri may be empty, or it must be a valid URI (scheme://...)":
        "initializer",
}


def unknown_cel_rules(release, kind):
  """Create-time CEL messages of `kind`'s CRD neither ported nor listed in
  `CEL_ON_UNRENDERED_FIELDS` (update-only `self == oldSelf` skipped)."""
  found = _cel_rules(crd(release, kind)["schema"], set())
  return sorted(m for m, r in found if r not in _UPDATE_ONLY_CEL
                and m not in PORTED_CEL and m not in CEL_ON_UNRENDERED_FIELDS)


@functools.lru_cache(maxsize=None)
def _validator(release, kind):
  schema = crd(release, kind)["schema"]["openAPIV3Schema"]
  return jsonschema.Draft7Validator(_strict(schema))


def _schema_admit(release, obj):
  """Defaults, then the strict schema; returns the defaulted copy."""
  obj = copy.deepcopy(obj)
  _default(crd(release, obj["kind"])["schema"]["openAPIV3Schema"], obj)
  try:
    _validator(release, obj["kind"]).validate(obj)
  except jsonschema.ValidationError as e:
    path = ".".join(map(str, e.absolute_path))
    raise Refused(f"{release} refuses {obj['kind']} "
                  f"{obj['metadata'].get('name')!r}: {path}: {e.message}"
                  ) from None
  return obj


# ------------------------------------------------------ JobSet webhook --

def jobset_default(js):
  """jobset_webhook.go Default: :113-167 (v0.11.1), :111-161 (v0.12.0)."""
  spec = js["spec"]
  spec.setdefault("successPolicy", {"operator": "All"})  # :119 / :113
  spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
  for rj in spec["replicatedJobs"]:  # :125-134 / :119-128
    rj["template"]["spec"].setdefault("completionMode", "Indexed")
    pod = rj["template"]["spec"]["template"]["spec"]
    if not pod.get("restartPolicy"):
      pod["restartPolicy"] = "OnFailure"
  network = spec.setdefault("network", {})  # :137-145 / :131-139
  network.setdefault("enableDNSHostnames", True)
  network.setdefault("publishNotReadyAddresses", True)
  for i, rule in enumerate(spec.get("failurePolicy", {}).get("rules", ())):
    if not rule.get("name"):  # :148-155 / :142-149
      rule["name"] = f"failurePolicyRule{i}"
  return js


def _dns1035(value, too_long):
  errors = []
  if len(value) > 63:
    errors.append(too_long)
  if not _DNS1035.match(value):
    errors.append("a lowercase RFC 1035 label must consist of lower case "
                  "alphanumeric characters or '-', start with an alphabetic "
                  "character, and end with an alphanumeric character")
  return errors


def _replicated_job_errors(js, index, rj):
  """ValidateCreate's per-replicatedJob rules: :226-274 (v0.11.1),
  :215-263 (v0.12.0)."""
  path = f"spec.replicatedJobs[{index}]"
  job, errors = rj["template"]["spec"], []
  if job.get("parallelism", 1) * rj["replicas"] > _MAX_INT32:  # :234 / :223
    errors.append("the product of replicas and parallelism must not exceed "
                  f"{_MAX_INT32} for replicatedJob '{rj['name']}'")
  for e in _dns1035(rj.get("groupName", ""), ".spec.replicatedJob[]."
                    "groupName is too long, must be less than 63 characters"):
    errors.append(f"{path}.groupName: Invalid value: {e}")  # :239 / :228
  longest_job = f"{js['metadata']['name']}-{rj['name']}-{rj['replicas'] - 1}"
  for e in _dns1035(longest_job, "JobSet name is too long, job names "
                    "generated for this JobSet will exceed 63 characters"):
    errors.append(f"{path}.name: Invalid value: {longest_job!r}: {e}")
  if job.get("completionMode") == "Indexed" and "completions" in job:
    pod = (f"{longest_job}-{job['completions'] - 1}-abcde")  # :260 / :249
    for e in _dns1035(pod, "JobSet name is too long, pod names generated "
                      "for this JobSet will exceed 63 characters"):
      errors.append(f"{path}.name: Invalid value: {longest_job!r}: {e}")
  return errors


def _failure_policy_errors(js, names, gates, tag):
  """validateFailurePolicy: :371-418 (v0.11.1), :425-494 (v0.12.0)."""
  policy, errors = js["spec"].get("failurePolicy"), []
  if policy is None:
    return errors
  rules = policy.get("rules", ())
  restart_job = any(r.get("action") in ("RestartJob",
                                        "RestartJobAndIgnoreMaxRestarts")
                    for r in rules)
  if tag == "v0.12.0" and restart_job and "RestartJob" not in gates:
    return ["RestartJob and RestartJobAndIgnoreMaxRestarts failure policy "
            "actions are not allowed when RestartJob feature gate is "
            "disabled"]  # :440-444 (v0.12.0); v0.11.1's CRD has no such enum.
  seen = {}
  for i, rule in enumerate(rules):
    name = rule.get("name", "")
    if not 1 <= len(name) <= 128:
      errors.append(f"invalid failure policy rule name of length {len(name)}"
                    ", the rule name must be at least 1 characters long and "
                    "at most 128 characters long")
    seen.setdefault(name, []).append(i)
    if not _RULE_NAME.match(name):
      errors.append(f"invalid failure policy rule name '{name}', a failure "
                    "policy rule name must start with an alphabetic "
                    "character, optionally followed by a string of "
                    "alphanumeric characters or '_,:', and must end with an "
                    "alphanumeric character or '_'")
    errors += [f"invalid replicatedJob name '{t}' in failure policy does not "
               "appear in .spec.ReplicatedJobs"
               for t in rule.get("targetReplicatedJobs", ()) if t not in names]
    errors += [f"invalid job failure reason '{r}' in failure policy is not a "
               "recognized job failure reason"
               for r in rule.get("onJobFailureReasons", ())
               if r not in _JOB_FAILURE_REASONS]
  errors += [f"rule names are not unique, rules with indices {idx} all have "
             f"the same name '{n}'" for n, idx in seen.items() if len(idx) > 1]
  return errors


def jobset_validate_create(js, tag, gates=()):
  """ValidateCreate: jobset_webhook.go:172-320 (v0.11.1), :166-308
  (v0.12.0); returns the engine's error sentences."""
  spec, errors, names = js["spec"], [], []
  if ("InPlaceRestart" not in gates and spec.get("failurePolicy", {}).get(
      "restartStrategy") == "InPlaceRestart"):  # :182-186 / :171-175
    errors.append("InPlaceRestart restart strategy cannot be set when "
                  "InPlaceRestart feature gate is disabled")
  rjobs = spec["replicatedJobs"]
  if rjobs and rjobs[0].get("dependsOn") is not None:  # :189 / :178
    errors.append("DependsOn can't be set for the first ReplicatedJob")
  for index, rj in enumerate(rjobs):
    names.append(rj["name"])
    errors += _replicated_job_errors(js, index, rj)
    errors += [f"replicatedJob: {rj['name']} cannot depend on replicatedJob: "
               f"{d['name']}" for d in rj.get("dependsOn", ())
               if d["name"] not in names]  # :270-274 / :259-263
  errors += [f"invalid replicatedJob name '{n}' does not appear in "
             ".spec.ReplicatedJobs"  # :296-300 / :285-289
             for n in spec["successPolicy"].get("targetReplicatedJobs", ())
             if n not in names]
  return errors + _failure_policy_errors(js, names, gates, tag)


def admit_jobset(obj, release, gates=()):
  """`obj` (a JobSet) through `release`'s CRD and webhook; the stored
  object (defaulted), or Refused."""
  tag = RELEASES[release].tag
  unknown = set(gates) - set(RELEASES[release].gates)
  if unknown:
    raise Refused(f"{release} has no feature gate {sorted(unknown)}")
  js = _schema_admit(release, obj)
  _refuse(release, js, _jobset_cel(js["spec"]))
  jobset_default(js)
  _refuse(release, js, jobset_validate_create(js, tag, gates))
  return js


# ----------------------------------------------------------- the door --

def admit(objects, release, gates=()):
  """`objects` applied in order to a cluster running `release`.

  Args:
    objects: the rendered objects (dicts); built-in kinds pass through
      (kubernetes-validate checks them elsewhere).
    release: a key of `RELEASES`.
    gates: alpha feature gates switched on (JobSet's and Trainer's names).

  Returns:
    The stored custom objects (defaulted), and for a Trainer release the
    JobSet its controller builds, admitted by the JobSet release it
    vendors.

  Raises:
    Refused: with the engine's own sentence.
  """
  info = RELEASES[release]
  jobset_release = info.jobset or release
  own = tuple(g for g in gates if g in info.gates) if info.jobset else ()
  jobset_gates = tuple(g for g in gates if g not in own)
  admitted, applied = [], []
  for obj in objects:
    kind = obj["kind"]
    if kind == "JobSet":
      admitted.append(admit_jobset(obj, jobset_release, jobset_gates))
    elif kind in ("TrainJob", "ClusterTrainingRuntime"):
      if not info.jobset:
        raise Refused(f"{release} has no {kind} CRD: install Kubeflow "
                      "Trainer for --output=trainjob")
      stored = _schema_admit(release, obj)
      if kind == "ClusterTrainingRuntime":
        _refuse(release, stored,
                _jobset_cel(stored["spec"]["template"]["spec"])
                + trainer_lib.runtime_cel(stored)
                + trainer_lib.runtime_validate_create(stored))
      else:
        _refuse(release, stored, trainer_lib.trainjob_cel(stored)
                + trainer_lib.trainjob_validate_create(stored, applied))
        (runtime,) = [o for o in admitted if o["metadata"]["name"] ==
                      stored["spec"]["runtimeRef"]["name"]]
        built = trainer_lib.trainer_jobset(runtime, stored, own)
        admitted.append(stored)
        admitted.append(admit_jobset(built, jobset_release, jobset_gates))
        continue
      admitted.append(stored)
    applied.append(obj)
  return admitted
