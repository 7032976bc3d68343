"""The building blocks of the pods `harness.k8s` renders, for every kind.

    container = pods.container(config, args=..., env=..., gpus=1)
    spec = pods.pod_spec(config, container, restart_policy="Never")

Labels and metadata, the harness container (entrypoint, environment,
resources, security, mounts, ports: `tf` and, with `--metrics_port`,
`metrics`), the pod spec around it, and harness.main's arguments. Used by
`k8s/manifests.py` (Jobs, StatefulSets, TFJob, TensorBoard) and
`k8s/jobset.py` (JobSet, Kubeflow Trainer runtime).

This module imports nothing from TensorFlow.
"""

from harness import errors
from harness.k8s import config as config_lib
from harness.k8s import policy

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
              name=config_lib.CONTAINER, command=config_lib.ENTRYPOINT,
              port_name="tf"):
  """The harness container.

  `ports`: it listens on the TF port (named `port_name`); `runs_main`: it
  runs harness.main (which serves metrics on `--metrics_port` when that
  is set).
  """
  result = {"name": name, "image": config.image,
            "imagePullPolicy": "IfNotPresent"}
  if command:
    result["command"] = list(command)
  result.update({
      "args": list(args),
      "env": ([{"name": "PYTHONUNBUFFERED", "value": "1"}]
              + policy.scratch_env() + env),
      "resources": _resources(config, gpus),
      "securityContext": policy.container_security(),
      "volumeMounts": [policy.scratch_mount()],
  })
  container_ports = []
  if ports:
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
                                   "mountPath": config_lib.MODEL_MOUNT})
  return result


def pod_spec(config, pod_container, *, restart_policy, subdomain=True):
  """The pod spec around `pod_container`, hardened (`k8s/policy.py`).

  `terminationGracePeriodSeconds` is `--termination_grace_secs`: after
  SIGTERM, harness.main (PID 1: the entrypoint `exec`s it) stops at the
  next step boundary within `--stop_timeout_secs` and saves its stop
  checkpoint before Kubernetes sends SIGKILL.
  """
  spec = {
      "restartPolicy": restart_policy,
      "enableServiceLinks": False,
      "terminationGracePeriodSeconds": config.termination_grace_secs,
      "containers": [pod_container],
  }
  if subdomain:
    spec["subdomain"] = config.service
  if config.pvc:
    spec["volumes"] = [{"name": "model", "persistentVolumeClaim": {
        "claimName": config.pvc}}]
  return policy.pod_security(spec)


def pod_failure_policy(container_name=config_lib.CONTAINER, *,
                       fail_on_disruption=False):
  """A Job's podFailurePolicy: harness's exit-status contract.

  From `harness/errors.py`: `EXIT_BAD_CONFIG` (2, a bad flag or TF_CONFIG)
  fails the Job at once (no retry can fix it); `EXIT_PREEMPTED` (143, a
  SIGTERM after the stop checkpoint) and a disrupted pod (the
  `DisruptionTarget` condition: evicted, preempted) are ignored, so the
  pod is replaced without using up a retry; any other failure counts
  against the Job's retries. `EXIT_DONE` (0) is a success, no rule.
  `fail_on_disruption` (`--restart_policy=group`): a disrupted pod fails
  the Job instead (its failure message names `DisruptionTarget`), for the
  JobSet to restart the whole group.
  """
  disrupted = [{"type": "DisruptionTarget", "status": "True"}]
  rules = [
      {"action": "FailJob", "onExitCodes": {
          "containerName": container_name, "operator": "In",
          "values": [errors.EXIT_BAD_CONFIG]}},
      {"action": "Ignore", "onExitCodes": {
          "containerName": container_name, "operator": "In",
          "values": [errors.EXIT_PREEMPTED]}},
      {"action": "Ignore", "onPodConditions": disrupted}]
  if fail_on_disruption:  # Before the 143 rule: a disrupted pod exits 143.
    rules = [rules[0], {"action": "FailJob", "onPodConditions": disrupted},
             rules[1]]
  return {"rules": rules}
