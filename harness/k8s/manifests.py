"""The Kubernetes objects of a harness training cluster, from a `K8sConfig`.

    objects = manifests.render(config)   # a list of dicts
    text = manifests.to_yaml(objects)    # multi-document YAML

`--output=jobset` (the default) and `--output=trainjob` are rendered by
`k8s/jobset.py`. `--output=jobs`: a headless Service, one Indexed Job
(batch/v1) for the training cluster (index i runs task i of chief, workers,
ps), an Indexed Job for the evaluator, a NetworkPolicy. Any output may add
TensorBoard; `--output=servers` renders a StatefulSet of standard servers
per role, `--output=tfjob` a Kubeflow TFJob. The pods' parts come from
`k8s/pods.py`, their security and the NetworkPolicy from
`k8s/policy.py`.
Re-exported by `harness.k8s` (`render`, `to_yaml`).

This module imports nothing from TensorFlow.
"""

import json
import shlex

from harness.cluster import jobset_env
from harness.k8s import config as config_lib
from harness.k8s import jobset
from harness.k8s import pods
from harness.k8s import policy

__all__ = ["render", "to_yaml", "layout_comment"]

_MAIN = pods.MAIN
_SERVER = ("python", "-m", "harness.server")
_TENSORBOARD_PORT = 6006
_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
_HEADER_WIDTH = 100  # The command in the manifests' header, wrapped.


def _cluster_env(config):
  return [{"name": config_lib.CLUSTER_ENV,
           "value": json.dumps(config_lib.cluster_addresses(config))}]


def _indexed_job(config, name, component, count, container, *,
                 trainer_count=None, subdomain=True):
  """An Indexed Job: each index retried alone, a bad flag fails at once."""
  spec = {
      "completionMode": "Indexed", "completions": count,
      "parallelism": count,
      "backoffLimitPerIndex": config.restarts_per_task,
      "maxFailedIndexes": 0,
      "podReplacementPolicy": "Failed",
      "podFailurePolicy": pods.pod_failure_policy(),
      "template": {"metadata": {"labels": pods.labels(config,
                                                      component)},
                   "spec": pods.pod_spec(config, container,
                                         subdomain=subdomain,
                                         restart_policy="Never")},
  }
  if trainer_count is not None and trainer_count < count:
    # ps never exit: the Job succeeds once chief and workers have, and
    # Kubernetes then terminates the lingering ps pods.
    last = trainer_count - 1
    spec["successPolicy"] = {"rules": [{"succeededIndexes": (
        "0" if last == 0 else f"0-{last}")}]}
  return {"apiVersion": "batch/v1", "kind": "Job",
          "metadata": pods.meta(config, name, component), "spec": spec}


def _headless_service(config, component):
  return {"apiVersion": "v1", "kind": "Service",
          "metadata": pods.meta(config, config.service, component),
          "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                   "selector": pods.labels(config, component),
                   "ports": [{"name": "tf", "port": config.port,
                              "targetPort": config.port,
                              "protocol": "TCP"}]}}


def _network_policy(config, component):
  """Only the job's own pods (and `allow_cidr`) reach the TF port."""
  labels = pods.labels(config, component)
  return policy.network_policy(
      name=f"{config.name}-tf", namespace=config.namespace, labels=labels,
      instance_labels={k: labels[k] for k in (
          "app.kubernetes.io/name", "app.kubernetes.io/instance")},
      port=config.port, allow_cidr=config.allow_cidr,
      metrics_port=0 if config.kind.standalone else config.metrics_port)


def _evaluator_job(config):
  env = _cluster_env(config) + [{"name": config_lib.TASK_TYPE_ENV,
                                 "value": "evaluator"}]
  container = pods.container(
      config, args=_MAIN + tuple(pods.main_args(config)), env=env,
      gpus=config.num_gpus_per_worker, ports=False)
  return _indexed_job(config, f"{config.name}-evaluator", "evaluator", 1,
                      container, subdomain=False)


def _training(config):
  tasks = config_lib.training_tasks(config)
  container = pods.container(
      config, args=_MAIN + tuple(pods.main_args(config)),
      env=_cluster_env(config), gpus=config.num_gpus_per_worker)
  trainers = sum(1 for task_type, _ in tasks if task_type != "ps")
  return [_headless_service(config, "trainer"),
          _indexed_job(config, config.name, "trainer", len(tasks), container,
                       trainer_count=trainers),
          _network_policy(config, "trainer")]


def _standalone(config):
  objects = [_headless_service(config, "server")]
  for task_type in ("chief", "worker", "ps"):
    count = len(config_lib.cluster_addresses(config).get(task_type, ()))
    if not count:
      continue
    gpus = 0 if task_type == "ps" else config.num_gpus_per_worker
    env = _cluster_env(config) + [
        {"name": config_lib.TASK_TYPE_ENV, "value": task_type},
        {"name": config_lib.TASK_INDEX_ENV, "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.labels['{_POD_INDEX_LABEL}']"}}}]
    args = _SERVER + (f"--num_cpu_devices={config.num_cpu_devices}",
                      f"--num_gpus_per_worker={gpus}")
    container = pods.container(config, args=args, env=env, gpus=gpus,
                               runs_main=False)
    labels = dict(pods.labels(config, "server"), **{
        "harness.k8s/task-type": task_type})
    objects.append({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": pods.meta(config, f"{config.name}-{task_type}",
                              "server"),
        "spec": {"serviceName": config.service, "replicas": count,
                 "podManagementPolicy": "Parallel",
                 "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": pods.pod_spec(
                                  config, container,
                                  restart_policy="Always")}}})
  return objects + [_network_policy(config, "server")]


def _tfjob(config):
  replicas = {}
  for task_type, replica_type in (("chief", "Chief"), ("worker", "Worker"),
                                  ("ps", "PS")):
    count = len(config_lib.cluster_addresses(config).get(task_type, ()))
    if count:
      # ps too: harness.main checks that every task sees the GPUs.
      container = pods.container(
          config, name="tensorflow", command=_MAIN,
          args=pods.main_args(config), env=[],
          gpus=config.num_gpus_per_worker, port_name="tfjob-port")
      replicas[replica_type] = {
          "replicas": count, "restartPolicy": "OnFailure",
          "template": {"metadata": {"labels": pods.labels(config,
                                                          "trainer")},
                       "spec": pods.pod_spec(config, container,
                                             restart_policy="OnFailure",
                                             subdomain=False)}}
  return [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": pods.meta(config, config.name, "trainer"),
           "spec": {"runPolicy": {"cleanPodPolicy": "Running",
                                  "backoffLimit": config.restarts_per_task},
                    "tfReplicaSpecs": replicas}},
          _network_policy(config, "trainer")]


def _tensorboard(config):
  name = f"{config.name}-tensorboard"
  container = pods.container(
      config, name="tensorboard", command=None, env=[], gpus=0, ports=False,
      runs_main=False,
      args=("tensorboard", f"--logdir={config.model_dir_path}", "--bind_all",
            f"--port={_TENSORBOARD_PORT}"))
  container["ports"] = [{"name": "http", "containerPort": _TENSORBOARD_PORT}]
  container["resources"] = {"requests": {"cpu": "250m", "memory": "1Gi"},
                            "limits": {"memory": "2Gi"}}
  selector = pods.labels(config, "tensorboard")
  return [{"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": pods.meta(config, name, "tensorboard"),
           "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                    "template": {"metadata": {"labels": pods.labels(
                        config, "tensorboard")}, "spec": pods.pod_spec(
                            config, container, restart_policy="Always",
                            subdomain=False)}}},
          {"apiVersion": "v1", "kind": "Service",
           "metadata": pods.meta(config, name, "tensorboard"),
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
  objects = _RENDERERS[config.output](config)
  if config.queue_name:
    _queue(objects, config.queue_name)
  if config.tensorboard and not config.kind.standalone:
    objects += _tensorboard(config)
  return objects


# Kinds Kueue admits, -> the path of their suspend flag (None: Kueue gates
# the pods instead). TensorBoard's Deployment stays outside the queue.
_QUEUED_KINDS = {"JobSet": ("spec",), "TrainJob": ("spec",),
                 "Job": ("spec",), "TFJob": ("spec", "runPolicy"),
                 "StatefulSet": None}


def _queue(objects, queue_name):
  """Puts every workload in Kueue's LocalQueue `queue_name`, suspended
  until Kueue admits it (what Kueue's own webhook would set)."""
  for obj in objects:
    if obj["kind"] not in _QUEUED_KINDS:
      continue
    obj["metadata"]["labels"] = dict(obj["metadata"].get("labels", {}), **{
        config_lib.QUEUE_LABEL: queue_name})
    path = _QUEUED_KINDS[obj["kind"]]
    if path is not None:
      target = obj
      for key in path:
        target = target[key]
      target["suspend"] = True


def _with_evaluator_job(render_tasks):
  """`render_tasks`, then the evaluator's own Job when there is one."""
  def render_all(config):
    objects = render_tasks(config)
    if config.evaluator:
      objects.append(_evaluator_job(config))
    return objects
  return render_all


# `--output` (`outputs.Output`) -> the objects of its tasks. A JobSet or
# TrainJob holds the evaluator as one of its replicatedJobs.
_RENDERERS = {
    "jobset": jobset.render_jobset,
    "trainjob": jobset.render_trainjob,
    "jobs": _with_evaluator_job(_training),
    "tfjob": _with_evaluator_job(_tfjob),
    "servers": _standalone,
}


def _command_lines(args, width=_HEADER_WIDTH):
  """"Rendered by: <command>", wrapped with shell line continuations."""
  lines, line = [], "Rendered by:"
  for word in map(shlex.quote, args):
    if len(line) + 1 + len(word) > width - 2 and line != "Rendered by:":
      lines.append(line + " \\")
      line = "   "
    line += " " + word
  return lines + [line]


def to_yaml(objects, *, header=""):
  """Multi-document YAML of `objects` (e.g. from `render`), `header` lines
  first as comments. Without PyYAML each document is written as JSON, which
  is YAML too (kubectl reads both)."""
  try:
    import yaml  # lazy: optional dependency (PyYAML)
    dump = lambda obj: yaml.safe_dump(obj, sort_keys=False, width=1000)
  except ImportError:
    dump = lambda obj: json.dumps(obj, indent=2) + "\n"
  out = [f"# {line}".rstrip() + "\n" for line in header.splitlines()]
  for obj in objects:  # Copied through JSON: shared dicts, no YAML anchors.
    out += ["---\n", dump(json.loads(json.dumps(obj)))]
  return "".join(out)


def layout_comment(config, argv):
  lines = _command_lines(["python", "-m", "harness.k8s", *argv]) + [""]
  if not config.kind.layout:
    return "\n".join(lines)
  tasks = config_lib.training_tasks(config)
  if not config.kind.jobset:
    lines.append(f"Pods of Job {config.name} (hostname -> task):")
    lines += [f"  {config.name}-{i} -> {task_type}/{index}"
              for i, (task_type, index) in enumerate(tasks)]
    return "\n".join(lines)
  lines.append(f"Pods of JobSet {config.name} (hostname -> task; TF_CONFIG "
               "is built in each pod from its place):")
  if config.evaluator:
    tasks.append(("evaluator", 0))
  lines += [f"  {jobset_env.hostname(config.name, task_type, index)} -> "
            f"{task_type}/{index}" for task_type, index in tasks]
  return "\n".join(lines)
