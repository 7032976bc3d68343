"""What `python -m harness.k8s` renders: `K8sConfig`, its checks, the tasks.

    config = config_lib.K8sConfig(name="mnist", workers=2, image="...",
                                  model_dir="gs://b/m")
    config_lib.training_tasks(config)  # [("worker", 0), ("worker", 1)]

One field per flag of the binary (its `metadata["help"]` is the flag's
help); a bad value raises `FlagError` naming the flag, the rule and the fix.
The constants are the contract between the manifests (`k8s/manifests.py`)
and the pod's entrypoint (`python -m harness.k8s tf-config`): the variables
that carry the cluster and the task, the mounts, the exit status of a bad
flag. Re-exported by `harness.k8s`.

This module imports nothing from TensorFlow.
"""

import dataclasses
import re

from harness import errors
from harness.k8s import outputs
from harness.k8s import policy

__all__ = [
    "K8sConfig", "JOBSET_GATES", "REMOVED_FLAGS",
    "RESTART_POLICIES",
    "training_tasks", "cluster_addresses",
    "CLUSTER_ENV", "TASK_TYPE_ENV", "TASK_INDEX_ENV", "JOB_INDEX_ENV",
    "CONTAINER", "MODEL_MOUNT", "ENTRYPOINT", "QUEUE_LABEL",
    "CONFIG_ERROR_EXIT_CODE",
]

CLUSTER_ENV = "HARNESS_K8S_CLUSTER"
TASK_TYPE_ENV = "HARNESS_K8S_TASK_TYPE"
TASK_INDEX_ENV = "HARNESS_K8S_TASK_INDEX"
JOB_INDEX_ENV = "JOB_COMPLETION_INDEX"  # Set by Kubernetes in Indexed Jobs.
CONTAINER = "harness"
# Kueue admits a workload by this label (kueue.x-k8s.io/queue-name).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MODEL_MOUNT = "/mnt/harness"
# harness binaries' "bad flag / TF_CONFIG" status (`errors.EXIT_BAD_CONFIG`).
CONFIG_ERROR_EXIT_CODE = errors.EXIT_BAD_CONFIG
# The container's command: TF_CONFIG from this pod's place, then exec args;
# no shell as PID 1, SIGTERM handled from the first instant (k8s/start.py).
ENTRYPOINT = ("python", "-m", "harness.k8s.start", "--")

# `--restart_policy`: what a disruption of one training pod restarts.
RESTART_POLICIES = ("pod", "group")
# `--jobset_feature_gates`: gate -> (what it needs, what it adds).
JOBSET_GATES = {
    "RestartJob": (
        "needs JobSet >= v0.12.0 (Kubeflow Trainer >= v2.3.0) with the alpha "
        "feature gate RestartJob on",
        "a failed evaluator Job is recreated alone (failurePolicy action "
        "RestartJob) instead of failing the JobSet"),
}
# Gates harness.k8s knows but does not render for: gate -> why not.
_UNUSED_GATES = {
    "InPlaceRestart": "it needs JobSet's in-place-restart agent sidecar in "
                      "each pod and the alpha RestartPod action, which "
                      "harness does not render",
}
# The flags `--output` replaced: flag -> what to write instead.
REMOVED_FLAGS = {
    "kind": "--output=jobset, --output=trainjob or --output=jobs",
    "standalone": "--output=servers",
    "tfjob": "--output=tfjob",
}
# The stop bound harness.main applies after SIGTERM (`--stop_timeout_secs`'s
# default, harness/guard/stop_signal.py) and the least time left after it
# for the stop checkpoint within the pod's grace period.
_DEFAULT_STOP_TIMEOUT_SECS = 10
_MIN_SAVE_SECS = 20
_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_MAX_NAME = 40  # Leaves room for "-evaluator-0-0" in a 63-character host.
# An image reference: registry/path:tag or @digest, no spaces or quotes.
_IMAGE_RE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]*$", re.IGNORECASE)
# Kubernetes quantities as harness.k8s takes them (integers or decimals).
_MEMORY_RE = re.compile(r"^[0-9]+(\.[0-9]+)?([kMGTPE]i?|[eE][0-9]+)?$")
_CPU_RE = re.compile(r"^([0-9]+(\.[0-9]+)?|[0-9]+m)$")


def _field(default, help_text):
  return dataclasses.field(default=default, metadata={"help": help_text})


def _flag_error(flag, value, rule, fix):
  raise errors.FlagError(f"flag --{flag}={value!r}: {rule} Fix: {fix}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class K8sConfig:
  """What to render: one field per flag of `python -m harness.k8s`.

  Each field's `metadata["help"]` is its flag's help. `workers`, `chief`,
  `ps` and `evaluator` are the tasks, as in `harness.launch`; exactly one of
  `pvc` and `model_dir` gives training its shared model_dir; `main_args` are
  the flags after `--` for `python -m harness.main`.
  """
  name: str = _field(None, "The job's name, a DNS label; it prefixes every "
                     "object and pod.")
  image: str = _field(None, "The container image (k8s/Dockerfile).")
  workers: int = _field(1, "Worker tasks.")
  chief: bool = _field(False, "Add a chief task.")
  ps: int = _field(0, "Parameter server tasks.")
  evaluator: bool = _field(False, "Add an evaluator task (a Job of its own).")
  tensorboard: bool = _field(False, "Add a TensorBoard Deployment/Service.")
  output: str = _field("jobset", "What to render: jobset (one JobSet, "
                       "jobset.x-k8s.io/v1alpha2; the default), trainjob (a "
                       "Kubeflow Trainer v2 TrainJob and its "
                       "ClusterTrainingRuntime), jobs (Indexed batch/v1 "
                       "Jobs, no controller needed), tfjob (a Kubeflow "
                       "TFJob, kubeflow.org/v1) or servers (standard TF "
                       "servers in StatefulSets, for a standalone client).")
  jobset_feature_gates: str = _field(
      "", "Comma list of JobSet alpha feature gates your controller runs "
      "with, for the extras they allow (jobset, trainjob). Default: none, "
      "what a stock install admits. RestartJob "
      + JOBSET_GATES["RestartJob"][0] + ": " + JOBSET_GATES["RestartJob"][1]
      + ".")
  num_gpus_per_worker: int = _field(0, "nvidia.com/gpu limit of every "
                                    "training pod (chief, worker, ps: "
                                    "harness.main checks the devices in "
                                    "each task) and of the evaluator; "
                                    "servers: chief and worker only. Also "
                                    "passed to harness.main/server.")
  namespace: str = _field("default", "Namespace of every object.")
  pvc: str | None = _field(None, "An existing ReadWriteMany claim; "
                           f"model_dir is {MODEL_MOUNT}/<name> on it.")
  model_dir: str | None = _field(None, "A model_dir every pod reaches, "
                                 "e.g. gs://bucket/dir (instead of --pvc).")
  port: int = _field(2222, "The TF (gRPC) port of every task.")
  cpu: str = _field("2", "CPU request of each pod.")
  memory: str = _field("4Gi", "Memory request (and limit) of each pod.")
  num_cpu_devices: int = _field(1, "CPU devices of each standalone server.")
  restarts_per_task: int = _field(3, "Retries of one task before the job "
                                  "fails (jobset, trainjob: restarts of the "
                                  "whole group; the evaluator retries its "
                                  "own pod as often). Preemptions (exit "
                                  "143, evictions) are not counted.")
  termination_grace_secs: int = _field(
      60, "terminationGracePeriodSeconds of every pod: SIGTERM, then this "
      "long to stop (harness.main's --stop_timeout_secs to the step "
      f"boundary, then the stop checkpoint: at least {_MIN_SAVE_SECS} s "
      "more) before SIGKILL.")
  metrics_port: int = _field(0, "harness.main's --metrics_port in each pod "
                             "(0: off); also passes --metrics_bind=0.0.0.0 "
                             "and declares a container port named metrics.")
  allow_cidr: tuple[str, ...] = _field((), "Extra source range admitted to "
                                       "the TF port: the standalone "
                                       "client's (e.g. 10.1.2.3/32) or a "
                                       "private load balancer's "
                                       "(repeatable; /0 is refused).")
  restart_policy: str = _field(
      "pod", "jobset, trainjob: on a disruption (a pod with the "
      "DisruptionTarget condition: evicted, preempted) replace that pod "
      "(pod; the others stop at the same step and are replaced too) or "
      "restart the whole group at once (group: JobSet's "
      "RestartJobSetAndIgnoreMaxRestarts, not counted). Other outputs "
      "cannot express group.")
  queue_name: str | None = _field(None, "A Kueue LocalQueue in the "
                                  "namespace: every workload (JobSet, "
                                  "TrainJob, Job, TFJob, StatefulSet) gets "
                                  f"the label {QUEUE_LABEL}, and the "
                                  "suspendable ones spec.suspend: true "
                                  "until Kueue admits them.")
  main_args: tuple[str, ...] = dataclasses.field(default=())

  def __post_init__(self):
    for flag in ("name", "namespace") + (("pvc",) if self.pvc else ()) + (
        ("queue_name",) if self.queue_name is not None else ()):
      value = getattr(self, flag)
      if not isinstance(value, str) or not _NAME_RE.match(value) or len(
          value) > (_MAX_NAME if flag == "name" else 63):
        _flag_error(flag, value, "must be a DNS label: lowercase letters, "
                    "digits and '-', starting with a letter (at most "
                    f"{_MAX_NAME if flag == 'name' else 63} characters).",
                    f"e.g. --{flag}="
                    f"{'team-a' if flag == 'queue_name' else 'mnist-1'}.")
    self._check_text()
    for flag, low in (("workers", 0), ("ps", 0), ("num_gpus_per_worker", 0),
                      ("port", 1), ("num_cpu_devices", 1),
                      ("restarts_per_task", 0), ("metrics_port", 0),
                      ("termination_grace_secs", 1)):
      value = getattr(self, flag)
      if isinstance(value, bool) or not isinstance(value, int) or value < low:
        _flag_error(flag, value, f"must be an integer >= {low}.",
                    f"give --{flag}={max(low, 1)} or more.")
    for flag in ("port", "metrics_port"):
      if getattr(self, flag) > 65535:
        _flag_error(flag, getattr(self, flag), "must be a TCP port <= 65535.",
                    f"give --{flag}=2222, for example.")
    if self.metrics_port == self.port:
      _flag_error("metrics_port", self.metrics_port, "is the TF port "
                  f"(--port={self.port}); both cannot listen on it.",
                  "pick another port, e.g. --metrics_port=9090.")
    policy.check_cidrs(self.allow_cidr)
    if not self.chief and self.workers == 0:
      _flag_error("workers", 0, "a cluster needs a chief or a worker.",
                  "use --workers=1 or more, or --chief.")
    self._check_gates()
    if self.restart_policy not in RESTART_POLICIES or (
        self.restart_policy == "group" and not self.kind.jobset):
      _flag_error("restart_policy", self.restart_policy, "must be pod, or "
                  "group with --output=jobset or trainjob (only a JobSet "
                  "restarts a group of Jobs).", "give --restart_policy=pod.")
    if self.kind.standalone:
      self._check_standalone()
    else:
      self._check_training()

  def _check_text(self):
    """The free-text flags: each must be what Kubernetes accepts."""
    if not self.image or not isinstance(self.image, str):
      _flag_error("image", self.image, "is required.",
                  "build k8s/Dockerfile and pass its tag.")
    if not _IMAGE_RE.match(self.image):
      _flag_error("image", self.image, "is not an image reference (letters, "
                  "digits and . _ / : @ -, no spaces or quotes).",
                  "e.g. --image=registry.example.com/harness:0.1.")
    if not isinstance(self.memory, str) or not _MEMORY_RE.match(self.memory):
      _flag_error("memory", self.memory, "is not a Kubernetes memory "
                  "quantity (a number with an optional suffix such as Mi, "
                  "Gi, M, G).", "e.g. --memory=4Gi.")
    if not isinstance(self.cpu, str) or not _CPU_RE.match(self.cpu):
      _flag_error("cpu", self.cpu, "is not a Kubernetes CPU quantity (cores "
                  "as a number, or millicores with m).",
                  "e.g. --cpu=2 or --cpu=500m.")
    if self.output not in outputs.OUTPUTS:
      _flag_error("output", self.output, f"must be one of "
                  f"{', '.join(outputs.OUTPUTS)}.", "e.g. --output=jobset (or "
                  "--output=jobs without the JobSet controller).")

  def _check_gates(self):
    """`jobset_feature_gates`: known gates, and only where a JobSet runs."""
    if not isinstance(self.jobset_feature_gates, str):
      _flag_error("jobset_feature_gates", self.jobset_feature_gates,
                  "must be a comma-separated string of gate names.",
                  "e.g. --jobset_feature_gates=RestartJob.")
    for gate in self.feature_gates:
      if gate not in JOBSET_GATES:
        why = _UNUSED_GATES.get(gate, "harness.k8s does not know it")
        _flag_error("jobset_feature_gates", self.jobset_feature_gates,
                    f"{gate!r} is not a gate harness.k8s renders for: {why}"
                    f" (it uses {', '.join(JOBSET_GATES)}).", "drop it; the "
                    "default (no gate) is what a stock JobSet install "
                    "admits.")
      if not self.kind.jobset:
        _flag_error("jobset_feature_gates", self.jobset_feature_gates,
                    f"only --output=jobset and trainjob run a JobSet, not "
                    f"--output={self.output}.", "drop the flag.")

  def _check_grace(self):
    """The grace period holds the stop bound and the stop checkpoint."""
    stop_secs = _DEFAULT_STOP_TIMEOUT_SECS
    for arg in self.main_args:
      name, _, value = arg.partition("=")
      if name == "--stop_timeout_secs":
        try:
          stop_secs = float(value)
        except ValueError:
          return  # harness.main refuses it in the pod, naming the flag.
    if self.termination_grace_secs < stop_secs + _MIN_SAVE_SECS:
      _flag_error("termination_grace_secs", self.termination_grace_secs,
                  f"leaves less than {_MIN_SAVE_SECS} s for the stop "
                  f"checkpoint after the {stop_secs:g} s stop bound "
                  "(harness.main's --stop_timeout_secs): a preempted pod "
                  "would be killed before it saves.",
                  f"give --termination_grace_secs="
                  f"{int(stop_secs + _MIN_SAVE_SECS + 0.999)} or more, or a "
                  "smaller --stop_timeout_secs after `--`.")

  def _check_standalone(self):
    if self.evaluator:
      _flag_error("evaluator", True, "a standalone cluster runs only "
                  "servers.", "drop --evaluator (evaluate from your client).")
    if self.main_args:
      _flag_error("output", self.output, "runs no harness.main, but flags "
                  f"{list(self.main_args)} follow `--`.", "drop them.")

  def _check_training(self):
    self._check_grace()
    if bool(self.pvc) == bool(self.model_dir):
      _flag_error("pvc", self.pvc, f"with --model_dir={self.model_dir!r}: "
                  "training needs exactly one shared model_dir, a "
                  "ReadWriteMany claim or a bucket path.",
                  "pass --pvc=<claim> or --model_dir=gs://bucket/dir.")
    for arg in self.main_args:
      if arg.split("=")[0] in ("--model_dir", "-model_dir"):
        _flag_error("model_dir", arg, "is set by harness.k8s from --pvc / "
                    "--model_dir, so it cannot follow `--`.",
                    "move it before `--`.")
      if arg.split("=")[0] == "--num_gpus_per_worker" and arg != (
          f"--num_gpus_per_worker={self.num_gpus_per_worker}"):
        _flag_error("num_gpus_per_worker", self.num_gpus_per_worker,
                    f"disagrees with {arg!r} after `--`; the GPU limit and "
                    "the flag must match.", "give it once, before `--`.")

  @property
  def service(self):
    """The DNS subdomain: pods are `<host>.<service>` (a headless Service,
    or the one a JobSet makes under its own name)."""
    return self.name

  @property
  def kind(self):
    """`output` as an `outputs.Output`, whose traits say what it implies."""
    return outputs.Output(self.output)

  @property
  def feature_gates(self):
    """The gates of `jobset_feature_gates`, a tuple of names."""
    return tuple(g.strip() for g in self.jobset_feature_gates.split(",")
                 if g.strip())

  @property
  def model_dir_path(self):
    """model_dir as the pods see it (None for a standalone cluster)."""
    if self.kind.standalone:
      return None
    return f"{MODEL_MOUNT}/{self.name}" if self.pvc else self.model_dir


def training_tasks(config):
  """[(task_type, index)] of the training cluster: chief, workers, ps.

  Index i of the training Job runs task i of this list.
  """
  tasks = [("chief", 0)] if config.chief else []
  tasks += [("worker", i) for i in range(config.workers)]
  return tasks + [("ps", i) for i in range(config.ps)]


def cluster_addresses(config):
  """{job: [address, ...]} of the training cluster (no evaluator)."""
  address_of = outputs.ADDRESSES[config.kind]
  result = {}
  for i, (task_type, index) in enumerate(training_tasks(config)):
    result.setdefault(task_type, []).append(
        f"{address_of(config, i, task_type, index)}:{config.port}")
  return result
