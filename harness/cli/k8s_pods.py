"""The building blocks of the pods `harness.k8s` renders, for every kind.

    container = k8s_pods.container(config, args=..., env=..., gpus=1)
    spec = k8s_pods.pod_spec(config, container, restart_policy="Never")

Labels and metadata, the harness container (entrypoint, environment,
resources, security, mounts, ports: `tf` and, with `--metrics_port`,
`metrics`), the pod spec around it, and harness.main's arguments. Used by
`cli/k8s_manifests.py` (Jobs, StatefulSets, TFJob, TensorBoard) and
`cli/k8s_jobset.py` (JobSet, Kubeflow Trainer runtime).

This module imports nothing from TensorFlow.
"""

from harness.cli import k8s_config
from harness.cli import k8s_policy

__all__ = ["MAIN", "labels", "meta", "main_args", "container", "pod_spec",
           "pod_failure_policy"]

MAIN = ("python", "-m", "harness.main")
_METRICS_BIND = "0.0.0.0"  # Scraped from other pods (Prometheus).


def labels(config, component):
  return {"app.kubernetes.io/name": "harness",
          "app.kubernetes.io/instance": config.name,
          "app.kubernetes.io/component": component,
          "app.kubernetes.io/managed-by": "harness.k8s"}


def meta(config, name, component):
  return {"name": name, "namespace": config.namespace,
          "labels": labels(config, component)}


def _resources(config, gpus):
  limits = {"memory": config.memory}
  if gpus:
    limits["nvidia.com/gpu"] = gpus
  return {"requests": {"cpu": config.cpu, "memory": config.memory},
          "limits": limits}


def main_args(config):
  """harness.main's flags: the user's, then model_dir, GPUs, metrics."""
  args = list(config.main_args)
  args.append(f"--model_dir={config.model_dir_path}")
  if config.num_gpus_per_worker and not any(
      a.startswith("--num_gpus_per_worker=") for a in args):
    args.append(f"--num_gpus_per_worker={config.num_gpus_per_worker}")
  if config.metrics_port:
    args += [f"--metrics_port={config.metrics_port}",
             f"--metrics_bind={_METRICS_BIND}"]
  return args


def container(config, *, args, env, gpus, ports=True, runs_main=True,
              name=k8s_config.CONTAINER, command=k8s_config.ENTRYPOINT):
  """The harness container.

  `ports`: it listens on the TF port; `runs_main`: it runs harness.main
  (which serves metrics on `--metrics_port` when that is set).
  """
  result = {"name": name, "image": config.image,
            "imagePullPolicy": "IfNotPresent"}
  if command:
    result["command"] = list(command)
  result.update({
      "args": list(args),
      "env": ([{"name": "PYTHONUNBUFFERED", "value": "1"}]
              + k8s_policy.scratch_env() + env),
      "resources": _resources(config, gpus),
      "securityContext": k8s_policy.container_security(),
      "volumeMounts": [k8s_policy.scratch_mount()],
  })
  container_ports = []
  if ports:
    port_name = "tf" if name == k8s_config.CONTAINER else "tfjob-port"
    container_ports.append({"name": port_name, "containerPort": config.port,
                            "protocol": "TCP"})
  if config.metrics_port and runs_main:
    container_ports.append({"name": "metrics",
                            "containerPort": config.metrics_port,
                            "protocol": "TCP"})
  if container_ports:
    result["ports"] = container_ports
  if config.pvc:
    result["volumeMounts"].append({"name": "model",
                                   "mountPath": k8s_config.MODEL_MOUNT})
  return result


def pod_spec(config, pod_container, *, restart_policy, subdomain=True):
  spec = {
      "restartPolicy": restart_policy,
      "enableServiceLinks": False,
      "containers": [pod_container],
  }
  if subdomain:
    spec["subdomain"] = config.service
  if config.pvc:
    spec["volumes"] = [{"name": "model", "persistentVolumeClaim": {
        "claimName": config.pvc}}]
  return k8s_policy.pod_security(spec)


def pod_failure_policy():
  """A Job's podFailurePolicy: a bad flag or TF_CONFIG (exit status
  `CONFIG_ERROR_EXIT_CODE`) fails the Job at once, a disrupted pod (evicted,
  preempted) is not counted against its retries."""
  return {"rules": [
      {"action": "FailJob", "onExitCodes": {
          "containerName": k8s_config.CONTAINER, "operator": "In",
          "values": [k8s_config.CONFIG_ERROR_EXIT_CODE]}},
      {"action": "Ignore", "onPodConditions": [
          {"type": "DisruptionTarget", "status": "True"}]}]}
