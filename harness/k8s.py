"""Kubernetes manifests for a harness training cluster, rendered from flags.

    python -m harness.k8s --name=mnist --workers=4 --evaluator \\
        --image=registry.example.com/harness:0.1 --pvc=harness-model -- \\
        --model_fn=mnist_mlp --input_fn=mnist --max_steps=10000 \\
      | kubectl apply -f -

prints multi-document YAML: a headless Service, one Indexed Job (batch/v1)
for the training cluster (index i runs task i of chief, workers, ps), an
Indexed Job for the evaluator, a NetworkPolicy and optionally TensorBoard.
The flags after `--` reach `python -m harness.main` unchanged. Each
container gets the cluster as JSON in `HARNESS_K8S_CLUSTER`; its entrypoint
runs `python -m harness.k8s tf-config`, which adds the pod's task from its
index and checks the result. `--standalone` renders standard servers (a
StatefulSet per role), `--tfjob` a Kubeflow TFJob; k8s/README.md explains
the choices. From Python::

    text = k8s.to_yaml(k8s.render(k8s.K8sConfig(
        name="mnist", workers=2, image="...", model_dir="gs://b/m")))

This module imports nothing from TensorFlow.
"""

import dataclasses
import json
import os
import re
import shlex
import sys

from harness import errors
from harness.cli import k8s_policy
from harness.cluster import tf_config as cluster_lib

__all__ = [
    "K8sConfig", "render", "to_yaml", "tf_config_from_environ",
    "training_tasks", "parse_args", "main",
    "CLUSTER_ENV", "TASK_TYPE_ENV", "TASK_INDEX_ENV", "JOB_INDEX_ENV",
    "CONTAINER", "MODEL_MOUNT", "SCRATCH_MOUNT", "ENTRYPOINT", "CONFIG_ERROR_EXIT_CODE",
]

CLUSTER_ENV = "HARNESS_K8S_CLUSTER"
TASK_TYPE_ENV = "HARNESS_K8S_TASK_TYPE"
TASK_INDEX_ENV = "HARNESS_K8S_TASK_INDEX"
JOB_INDEX_ENV = "JOB_COMPLETION_INDEX"  # Set by Kubernetes in Indexed Jobs.
CONTAINER = "harness"
MODEL_MOUNT = "/mnt/harness"
SCRATCH_MOUNT = k8s_policy.SCRATCH_MOUNT
CONFIG_ERROR_EXIT_CODE = 2  # harness binaries' "bad flag / TF_CONFIG" status.
# The container's command: TF_CONFIG from this pod's index, then exec args.
ENTRYPOINT = (
    "/bin/sh", "-c",
    'TF_CONFIG="$(python -m harness.k8s tf-config)" || exit '
    f'{CONFIG_ERROR_EXIT_CODE}; export TF_CONFIG; exec "$@"',
    "harness-k8s")
_MAIN = ("python", "-m", "harness.main")
_SERVER = ("python", "-m", "harness.server")
_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_MAX_NAME = 40  # Leaves room for "-evaluator-0" in a 63-character hostname.
_TENSORBOARD_PORT = 6006
_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


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
  evaluator: bool = _field(False, "Add an evaluator Job.")
  tensorboard: bool = _field(False, "Add a TensorBoard Deployment/Service.")
  num_gpus_per_worker: int = _field(0, "nvidia.com/gpu limit of each "
                                    "training/evaluator pod (ps: none); "
                                    "also passed to harness.main/server.")
  namespace: str = _field("default", "Namespace of every object.")
  pvc: str | None = _field(None, "An existing ReadWriteMany claim; "
                           f"model_dir is {MODEL_MOUNT}/<name> on it.")
  model_dir: str | None = _field(None, "A model_dir every pod reaches, "
                                 "e.g. gs://bucket/dir (instead of --pvc).")
  standalone: bool = _field(False, "Only standard servers (StatefulSets).")
  tfjob: bool = _field(False, "A Kubeflow TFJob (kubeflow.org/v1).")
  port: int = _field(2222, "The TF (gRPC) port of every task.")
  cpu: str = _field("2", "CPU request of each pod.")
  memory: str = _field("4Gi", "Memory request (and limit) of each pod.")
  num_cpu_devices: int = _field(1, "CPU devices of each standalone server.")
  restarts_per_task: int = _field(3, "Retries of one task before the job "
                                  "fails.")
  allow_cidr: tuple[str, ...] = _field((), "Extra source range admitted to "
                                       "the TF port: the standalone "
                                       "client's (e.g. 10.1.2.3/32) or a "
                                       "private load balancer's "
                                       "(repeatable; /0 is refused).")
  main_args: tuple[str, ...] = dataclasses.field(default=())

  def __post_init__(self):
    for flag in ("name", "namespace") + (("pvc",) if self.pvc else ()):
      value = getattr(self, flag)
      if not isinstance(value, str) or not _NAME_RE.match(value) or len(
          value) > (_MAX_NAME if flag == "name" else 63):
        _flag_error(flag, value, "must be a DNS label: lowercase letters, "
                    "digits and '-', starting with a letter (at most "
                    f"{_MAX_NAME if flag == 'name' else 63} characters).",
                    "e.g. --name=mnist-1.")
    if not self.image or not isinstance(self.image, str):
      _flag_error("image", self.image, "is required.",
                  "build k8s/Dockerfile and pass its tag.")
    for flag, low in (("workers", 0), ("ps", 0), ("num_gpus_per_worker", 0),
                      ("port", 1), ("num_cpu_devices", 1),
                      ("restarts_per_task", 0)):
      value = getattr(self, flag)
      if isinstance(value, bool) or not isinstance(value, int) or value < low:
        _flag_error(flag, value, f"must be an integer >= {low}.",
                    f"give --{flag}={max(low, 1)} or more.")
    k8s_policy.check_cidrs(self.allow_cidr)
    if not self.chief and self.workers == 0:
      _flag_error("workers", 0, "a cluster needs a chief or a worker.",
                  "use --workers=1 or more, or --chief.")
    if self.standalone and self.tfjob:
      _flag_error("tfjob", True, "cannot be combined with --standalone.",
                  "choose one of them.")
    if self.standalone:
      self._check_standalone()
    else:
      self._check_training()

  def _check_standalone(self):
    if self.evaluator:
      _flag_error("evaluator", True, "a standalone cluster runs only "
                  "servers.", "drop --evaluator (evaluate from your client).")
    if self.main_args:
      _flag_error("standalone", True, "runs no harness.main, but flags "
                  f"{list(self.main_args)} follow `--`.", "drop them.")

  def _check_training(self):
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
    """The headless Service's name: pods are `<host>.<service>` in DNS."""
    return self.name

  @property
  def model_dir_path(self):
    """model_dir as the pods see it (None for a standalone cluster)."""
    if self.standalone:
      return None
    return f"{MODEL_MOUNT}/{self.name}" if self.pvc else self.model_dir


# --------------------------------------------------------------- cluster --


def training_tasks(config):
  """[(task_type, index)] of the training cluster: chief, workers, ps.

  Index i of the training Job runs task i of this list.
  """
  tasks = [("chief", 0)] if config.chief else []
  tasks += [("worker", i) for i in range(config.workers)]
  return tasks + [("ps", i) for i in range(config.ps)]


def _cluster(config):
  """{job: [address, ...]} of the training cluster (no evaluator)."""
  result = {}
  for i, (task_type, index) in enumerate(training_tasks(config)):
    if config.tfjob:  # The address the training operator gives the task.
      address = f"{config.name}-{task_type}-{index}.{config.namespace}.svc"
    elif config.standalone:  # A StatefulSet per role.
      address = f"{config.name}-{task_type}-{index}.{config.service}"
    else:  # Hostname of index i of the training Job.
      address = f"{config.name}-{i}.{config.service}"
    result.setdefault(task_type, []).append(f"{address}:{config.port}")
  return result


def tf_config_from_environ(environ):
  """The pod's TF_CONFIG from its environment, as its entrypoint makes it.

  The cluster comes from `HARNESS_K8S_CLUSTER`. With `HARNESS_K8S_TASK_TYPE`
  set, the task is that type with index `HARNESS_K8S_TASK_INDEX` (else
  `JOB_COMPLETION_INDEX`); without it, the index counts through the
  cluster's tasks in the JSON's job order (an Indexed Job running the whole
  training cluster).

  Args:
    environ: a mapping such as `os.environ`.

  Returns:
    TF_CONFIG text, checked by `harness.cluster.tf_config.parse_tf_config`.

  Raises:
    ClusterConfigError: a variable is missing or malformed, or the index is
      outside the cluster.
  """
  source = f"{CLUSTER_ENV} (harness.k8s tf-config)"
  text = environ.get(CLUSTER_ENV)
  if not text:
    raise errors.ClusterConfigError(
        f"{CLUSTER_ENV} is not set: the pod has no cluster. Fix: render the "
        "manifests with `python -m harness.k8s` (it sets the variable).")
  cluster = cluster_lib.parse_remote_cluster(text, source=source)
  task_type = environ.get(TASK_TYPE_ENV) or None
  index_text = environ.get(TASK_INDEX_ENV) or environ.get(JOB_INDEX_ENV)
  if not index_text and task_type:  # StatefulSet without the index label.
    match = re.search(r"-(\d+)$", environ.get("HOSTNAME", ""))
    index_text = match.group(1) if match else None
  if not index_text or not index_text.strip().isdigit():
    raise errors.ClusterConfigError(
        f"The pod index is {index_text!r}: neither {TASK_INDEX_ENV} nor "
        f"{JOB_INDEX_ENV} holds a non-negative integer. Fix: run the pod "
        "from an Indexed Job or a StatefulSet rendered by harness.k8s.")
  index = int(index_text)
  if task_type is None:
    tasks = [(job, i) for job, addresses in cluster.items()
             for i in range(len(addresses))]
    if index >= len(tasks):
      raise errors.ClusterConfigError(
          f"{JOB_INDEX_ENV}={index} is outside the cluster's {len(tasks)} "
          f"tasks {tasks}. Fix: the Job's completions must equal the "
          "number of tasks; render the manifests again.")
    task_type, index = tasks[index]
  tf_config = {"cluster": cluster, "task": {"type": task_type,
                                            "index": index}}
  cluster_lib.parse_tf_config(tf_config, source=source)
  return json.dumps(tf_config, sort_keys=True)


# ------------------------------------------------------------- rendering --


def _labels(config, component):
  return {"app.kubernetes.io/name": "harness",
          "app.kubernetes.io/instance": config.name,
          "app.kubernetes.io/component": component,
          "app.kubernetes.io/managed-by": "harness.k8s"}


def _meta(config, name, component):
  return {"name": name, "namespace": config.namespace,
          "labels": _labels(config, component)}


def _resources(config, gpus):
  limits = {"memory": config.memory}
  if gpus:
    limits["nvidia.com/gpu"] = gpus
  return {"requests": {"cpu": config.cpu, "memory": config.memory},
          "limits": limits}


def _main_args(config):
  args = list(config.main_args)
  args.append(f"--model_dir={config.model_dir_path}")
  if config.num_gpus_per_worker and not any(
      a.startswith("--num_gpus_per_worker=") for a in args):
    args.append(f"--num_gpus_per_worker={config.num_gpus_per_worker}")
  return args


def _container(config, *, args, env, gpus, ports=True, name=CONTAINER,
               command=ENTRYPOINT):
  container = {"name": name, "image": config.image,
               "imagePullPolicy": "IfNotPresent"}
  if command:
    container["command"] = list(command)
  container.update({
      "args": list(args),
      "env": ([{"name": "PYTHONUNBUFFERED", "value": "1"}]
              + k8s_policy.scratch_env() + env),
      "resources": _resources(config, gpus),
      "securityContext": k8s_policy.container_security(),
      "volumeMounts": [k8s_policy.scratch_mount()],
  })
  if ports:
    container["ports"] = [{"name": "tf" if name == CONTAINER else "tfjob-port",
                           "containerPort": config.port, "protocol": "TCP"}]
  if config.pvc:
    container["volumeMounts"].append({"name": "model",
                                      "mountPath": MODEL_MOUNT})
  return container


def _pod_spec(config, container, *, restart_policy, subdomain=True):
  spec = {
      "restartPolicy": restart_policy,
      "enableServiceLinks": False,
      "containers": [container],
  }
  if subdomain:
    spec["subdomain"] = config.service
  if config.pvc:
    spec["volumes"] = [{"name": "model", "persistentVolumeClaim": {
        "claimName": config.pvc}}]
  return k8s_policy.pod_security(spec)


def _cluster_env(config):
  return [{"name": CLUSTER_ENV, "value": json.dumps(_cluster(config))}]


def _indexed_job(config, name, component, count, container, *,
                 trainer_count=None, subdomain=True):
  """An Indexed Job: each index retried alone, a bad flag fails at once."""
  spec = {
      "completionMode": "Indexed", "completions": count,
      "parallelism": count,
      "backoffLimitPerIndex": config.restarts_per_task,
      "maxFailedIndexes": 0,
      "podReplacementPolicy": "Failed",
      "podFailurePolicy": {"rules": [
          {"action": "FailJob", "onExitCodes": {
              "containerName": CONTAINER, "operator": "In",
              "values": [CONFIG_ERROR_EXIT_CODE]}},
          {"action": "Ignore", "onPodConditions": [
              {"type": "DisruptionTarget", "status": "True"}]}]},
      "template": {"metadata": {"labels": _labels(config, component)},
                   "spec": _pod_spec(config, container, subdomain=subdomain,
                                     restart_policy="Never")},
  }
  if trainer_count is not None and trainer_count < count:
    # ps never exit: the Job succeeds once chief and workers have, and
    # Kubernetes then terminates the lingering ps pods.
    last = trainer_count - 1
    spec["successPolicy"] = {"rules": [{"succeededIndexes": (
        "0" if last == 0 else f"0-{last}")}]}
  return {"apiVersion": "batch/v1", "kind": "Job",
          "metadata": _meta(config, name, component), "spec": spec}


def _headless_service(config, component):
  return {"apiVersion": "v1", "kind": "Service",
          "metadata": _meta(config, config.service, component),
          "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                   "selector": _labels(config, component),
                   "ports": [{"name": "tf", "port": config.port,
                              "targetPort": config.port,
                              "protocol": "TCP"}]}}


def _network_policy(config, component):
  """Only the job's own pods (and `allow_cidr`) reach the TF port."""
  labels = _labels(config, component)
  return k8s_policy.network_policy(
      name=f"{config.name}-tf", namespace=config.namespace, labels=labels,
      instance_labels={k: labels[k] for k in (
          "app.kubernetes.io/name", "app.kubernetes.io/instance")},
      port=config.port, allow_cidr=config.allow_cidr)


def _evaluator_job(config):
  env = _cluster_env(config) + [{"name": TASK_TYPE_ENV,
                                 "value": "evaluator"}]
  container = _container(config, args=_MAIN + tuple(_main_args(config)),
                         env=env, gpus=config.num_gpus_per_worker,
                         ports=False)
  return _indexed_job(config, f"{config.name}-evaluator", "evaluator", 1,
                      container, subdomain=False)


def _training(config):
  tasks = training_tasks(config)
  container = _container(config, args=_MAIN + tuple(_main_args(config)),
                         env=_cluster_env(config),
                         gpus=config.num_gpus_per_worker)
  trainers = sum(1 for task_type, _ in tasks if task_type != "ps")
  return [_headless_service(config, "trainer"),
          _indexed_job(config, config.name, "trainer", len(tasks), container,
                       trainer_count=trainers),
          _network_policy(config, "trainer")]


def _standalone(config):
  objects = [_headless_service(config, "server")]
  for task_type in ("chief", "worker", "ps"):
    count = len(_cluster(config).get(task_type, ()))
    if not count:
      continue
    gpus = 0 if task_type == "ps" else config.num_gpus_per_worker
    env = _cluster_env(config) + [
        {"name": TASK_TYPE_ENV, "value": task_type},
        {"name": TASK_INDEX_ENV, "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.labels['{_POD_INDEX_LABEL}']"}}}]
    args = _SERVER + (f"--num_cpu_devices={config.num_cpu_devices}",
                      f"--num_gpus_per_worker={gpus}")
    container = _container(config, args=args, env=env, gpus=gpus)
    labels = dict(_labels(config, "server"), **{
        "harness.k8s/task-type": task_type})
    objects.append({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": _meta(config, f"{config.name}-{task_type}", "server"),
        "spec": {"serviceName": config.service, "replicas": count,
                 "podManagementPolicy": "Parallel",
                 "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": _pod_spec(config, container,
                                                restart_policy="Always")}}})
  return objects + [_network_policy(config, "server")]


def _tfjob(config):
  replicas = {}
  for task_type, replica_type in (("chief", "Chief"), ("worker", "Worker"),
                                  ("ps", "PS")):
    count = len(_cluster(config).get(task_type, ()))
    if count:
      container = _container(
          config, name="tensorflow", command=_MAIN, args=_main_args(config),
          env=[], gpus=0 if task_type == "ps" else config.num_gpus_per_worker)
      replicas[replica_type] = {
          "replicas": count, "restartPolicy": "OnFailure",
          "template": {"metadata": {"labels": _labels(config, "trainer")},
                       "spec": _pod_spec(config, container,
                                         restart_policy="OnFailure",
                                         subdomain=False)}}
  return [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": _meta(config, config.name, "trainer"),
           "spec": {"runPolicy": {"cleanPodPolicy": "Running",
                                  "backoffLimit": config.restarts_per_task},
                    "tfReplicaSpecs": replicas}},
          _network_policy(config, "trainer")]


def _tensorboard(config):
  name = f"{config.name}-tensorboard"
  container = _container(
      config, name="tensorboard", command=None, env=[], gpus=0, ports=False,
      args=("tensorboard", f"--logdir={config.model_dir_path}", "--bind_all",
            f"--port={_TENSORBOARD_PORT}"))
  container["ports"] = [{"name": "http", "containerPort": _TENSORBOARD_PORT}]
  container["resources"] = {"requests": {"cpu": "250m", "memory": "1Gi"},
                            "limits": {"memory": "2Gi"}}
  selector = _labels(config, "tensorboard")
  return [{"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": _meta(config, name, "tensorboard"),
           "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                    "template": {"metadata": {"labels": _labels(
                        config, "tensorboard")}, "spec": _pod_spec(
                            config, container, restart_policy="Always",
                            subdomain=False)}}},
          {"apiVersion": "v1", "kind": "Service",
           "metadata": _meta(config, name, "tensorboard"),
           "spec": {"selector": selector, "ports": [
               {"name": "http", "port": _TENSORBOARD_PORT,
                "targetPort": _TENSORBOARD_PORT, "protocol": "TCP"}]}}]


def render(config):
  """The Kubernetes objects for `config`, in `kubectl apply` order.

  Args:
    config: a `K8sConfig`.

  Returns:
    A list of dicts, one per object.
  """
  if config.standalone:
    return _standalone(config)
  objects = _tfjob(config) if config.tfjob else _training(config)
  if config.evaluator:
    objects.append(_evaluator_job(config))
  if config.tensorboard:
    objects += _tensorboard(config)
  return objects


# ------------------------------------------------------------------ YAML --


def to_yaml(objects, *, header=""):
  """Multi-document YAML of `objects` (e.g. from `render`), `header` lines
  first as comments. Without PyYAML each document is written as JSON, which
  is YAML too (kubectl reads both)."""
  try:
    import yaml  # pylint: disable=g-import-not-at-top
    dump = lambda obj: yaml.safe_dump(obj, sort_keys=False, width=1000)
  except ImportError:
    dump = lambda obj: json.dumps(obj, indent=2) + "\n"
  out = [f"# {line}".rstrip() + "\n" for line in header.splitlines()]
  for obj in objects:  # Copied through JSON: shared dicts, no YAML anchors.
    out += ["---\n", dump(json.loads(json.dumps(obj)))]
  return "".join(out)


def _layout_comment(config, argv):
  lines = ["Rendered by: python -m harness.k8s " + shlex.join(argv), ""]
  if config.standalone or config.tfjob:
    return "\n".join(lines)
  lines.append(f"Pods of Job {config.name} (hostname -> task):")
  for i, (task_type, index) in enumerate(training_tasks(config)):
    lines.append(f"  {config.name}-{i} -> {task_type}/{index}")
  return "\n".join(lines)


# ---------------------------------------------------------------- binary --


def _flag_values():
  """absl FlagValues holding one flag per `K8sConfig` field."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  flag_values = flags.FlagValues()
  for field in dataclasses.fields(K8sConfig):
    if "help" not in field.metadata:
      continue
    define = {bool: flags.DEFINE_boolean, int: flags.DEFINE_integer}.get(
        field.type, flags.DEFINE_string)
    if field.name == "allow_cidr":
      define = flags.DEFINE_multi_string
    define(field.name, field.default, field.metadata["help"],
           flag_values=flag_values)
  return flag_values


def parse_args(argv):
  """`K8sConfig` from a command line (`argv[0]` is the program).

  Raises:
    FlagError: an unknown, missing or invalid flag.
  """
  from absl import flags  # pylint: disable=g-import-not-at-top
  flag_values = _flag_values()
  argv = list(argv)
  split = argv.index("--") if "--" in argv else len(argv)
  try:
    rest = flag_values(argv[:split])
  except flags.Error as e:
    raise errors.FlagError(f"{e}. Fix: see `python -m harness.k8s --help`."
                           ) from None
  if len(rest) > 1:
    raise errors.FlagError(
        f"unexpected arguments {rest[1:]} before `--`. Fix: put "
        "harness.main's flags after `--`.")
  values = {f.name: flag_values[f.name].value
            for f in dataclasses.fields(K8sConfig) if "help" in f.metadata}
  values["allow_cidr"] = tuple(values["allow_cidr"])
  return K8sConfig(main_args=tuple(argv[split + 1:]), **values)


def main(argv, *, environ=None, stdout=None, stderr=None):
  """Runs the binary; returns its exit status (2 on a usage error)."""
  environ = os.environ if environ is None else environ
  stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
  try:
    if argv[1:2] == ["tf-config"]:
      if len(argv) > 2:
        raise errors.FlagError(f"tf-config takes no arguments: {argv[2:]}.")
      stdout.write(tf_config_from_environ(environ) + "\n")
      return 0
    before_dashes = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    if any(a in ("--help", "-h", "--helpfull") for a in before_dashes):
      stdout.write(__doc__ + "\n" + _flag_values().get_help() + "\n")
      return 0
    config = parse_args(argv)
    stdout.write(to_yaml(render(config), header=_layout_comment(
        config, argv[1:])))
  except errors.ConfigError as e:
    stderr.write(f"harness.k8s: error: {e}\n")
    return CONFIG_ERROR_EXIT_CODE
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
