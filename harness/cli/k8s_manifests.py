"""The Kubernetes objects of a harness training cluster, from a `K8sConfig`.

    objects = k8s_manifests.render(config)   # a list of dicts
    text = k8s_manifests.to_yaml(objects)    # multi-document YAML

A headless Service, one Indexed Job (batch/v1) for the training cluster
(index i runs task i of chief, workers, ps), an Indexed Job for the
evaluator, a NetworkPolicy and optionally TensorBoard; `--standalone`
renders a StatefulSet of standard servers per role, `--tfjob` a Kubeflow
TFJob. Pod security and the NetworkPolicy come from `cli/k8s_policy.py`.
Re-exported by `harness.k8s` (`render`, `to_yaml`).

This module imports nothing from TensorFlow.
"""

import json
import shlex

from harness.cli import k8s_config
from harness.cli import k8s_policy

__all__ = ["render", "to_yaml", "layout_comment"]

_MAIN = ("python", "-m", "harness.main")
_SERVER = ("python", "-m", "harness.server")
_TENSORBOARD_PORT = 6006
_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
_HEADER_WIDTH = 100  # The command in the manifests' header, wrapped.


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


def _container(config, *, args, env, gpus, ports=True,
               name=k8s_config.CONTAINER, command=k8s_config.ENTRYPOINT):
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
    port_name = "tf" if name == k8s_config.CONTAINER else "tfjob-port"
    container["ports"] = [{"name": port_name,
                           "containerPort": config.port, "protocol": "TCP"}]
  if config.pvc:
    container["volumeMounts"].append({"name": "model",
                                      "mountPath": k8s_config.MODEL_MOUNT})
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
  return [{"name": k8s_config.CLUSTER_ENV,
           "value": json.dumps(k8s_config.cluster_addresses(config))}]


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
              "containerName": k8s_config.CONTAINER, "operator": "In",
              "values": [k8s_config.CONFIG_ERROR_EXIT_CODE]}},
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
  env = _cluster_env(config) + [{"name": k8s_config.TASK_TYPE_ENV,
                                 "value": "evaluator"}]
  container = _container(config, args=_MAIN + tuple(_main_args(config)),
                         env=env, gpus=config.num_gpus_per_worker,
                         ports=False)
  return _indexed_job(config, f"{config.name}-evaluator", "evaluator", 1,
                      container, subdomain=False)


def _training(config):
  tasks = k8s_config.training_tasks(config)
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
    count = len(k8s_config.cluster_addresses(config).get(task_type, ()))
    if not count:
      continue
    gpus = 0 if task_type == "ps" else config.num_gpus_per_worker
    env = _cluster_env(config) + [
        {"name": k8s_config.TASK_TYPE_ENV, "value": task_type},
        {"name": k8s_config.TASK_INDEX_ENV, "valueFrom": {"fieldRef": {
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
    count = len(k8s_config.cluster_addresses(config).get(task_type, ()))
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
  if config.standalone or config.tfjob:
    return "\n".join(lines)
  lines.append(f"Pods of Job {config.name} (hostname -> task):")
  for i, (task_type, index) in enumerate(k8s_config.training_tasks(config)):
    lines.append(f"  {config.name}-{i} -> {task_type}/{index}")
  return "\n".join(lines)
