"""The security settings of the manifests `harness.k8s` renders.

Every pod runs as a non-root user (uid 1000, as k8s/Dockerfile's image),
with a read-only root filesystem, no capabilities, no privilege escalation,
the runtime's default seccomp profile and no service-account token; HOME
and TMPDIR point at a small writable `emptyDir` (`SCRATCH_MOUNT`). The
NetworkPolicy admits the TF port only from the job's own pods and the
source ranges given with `--allow_cidr` (the standalone client's). Used by
`harness.k8s`; checked field by field in tests/test_k8s.py::SecurityTest.

This module imports nothing from TensorFlow.
"""

import ipaddress

from harness import errors

__all__ = [
    "SCRATCH_MOUNT", "UID", "check_cidrs", "container_security",
    "scratch_env", "scratch_mount", "pod_security", "network_policy",
]

# The one writable path besides model_dir (root filesystems are read-only).
SCRATCH_MOUNT = "/tmp"
_SCRATCH_VOLUME = "scratch"
_SCRATCH_SIZE = "1Gi"
UID = 1000  # k8s/Dockerfile's user.


def check_cidrs(cidrs):
  """Raises FlagError for a malformed range or one that admits everyone."""
  for cidr in cidrs:
    try:
      network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
      raise errors.FlagError(
          f"flag --allow_cidr={cidr!r}: is not an address range. Fix: give "
          "one such as 10.1.2.3/32 or 10.0.0.0/8.") from None
    if network.prefixlen == 0:
      raise errors.FlagError(
          f"flag --allow_cidr={cidr!r}: admits every address to the TF port, "
          "whose servers run any graph sent to them. Fix: give the client's "
          "own range, e.g. 10.1.2.3/32.")


def scratch_env():
  """HOME (~/.keras, caches) and TMPDIR on the writable scratch volume."""
  return [{"name": "HOME", "value": SCRATCH_MOUNT},
          {"name": "TMPDIR", "value": SCRATCH_MOUNT}]


def scratch_mount():
  return {"name": _SCRATCH_VOLUME, "mountPath": SCRATCH_MOUNT}


def container_security():
  return {"allowPrivilegeEscalation": False,
          "readOnlyRootFilesystem": True,
          "runAsNonRoot": True,
          "capabilities": {"drop": ["ALL"]}}


def pod_security(spec):
  """Adds the pod-level settings and the scratch volume to a pod `spec`."""
  spec["automountServiceAccountToken"] = False  # No API access from pods.
  spec["securityContext"] = {"runAsNonRoot": True, "runAsUser": UID,
                             "runAsGroup": UID, "fsGroup": UID,
                             "seccompProfile": {"type": "RuntimeDefault"}}
  spec.setdefault("volumes", []).insert(0, {
      "name": _SCRATCH_VOLUME, "emptyDir": {"sizeLimit": _SCRATCH_SIZE}})
  return spec


def network_policy(*, name, namespace, labels, instance_labels, port,
                   allow_cidr, metrics_port=0, metadata_labels=None):
  """Ingress to pods with `labels`: the TF port, from the job's pods only.

  Args:
    name, namespace: the policy's.
    labels: the labels of the pods that listen (the policy's podSelector).
    instance_labels: labels every pod of this job has (the admitted peers).
    port: the TF port.
    allow_cidr: extra admitted source ranges (e.g. the standalone client's).
    metrics_port: harness.main's metrics port (0: none), admitted from pods
      of any namespace (a Prometheus scraper); it serves read-only numbers.
    metadata_labels: the policy's own labels (default: `labels`).
  """
  peers = [{"podSelector": {"matchLabels": dict(instance_labels)}}]
  peers += [{"ipBlock": {"cidr": cidr}} for cidr in allow_cidr]
  ingress = [{"from": peers, "ports": [{"protocol": "TCP", "port": port}]}]
  if metrics_port:
    ingress.append({"from": [{"namespaceSelector": {}}],
                    "ports": [{"protocol": "TCP", "port": metrics_port}]})
  return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": name, "namespace": namespace,
                       "labels": dict(metadata_labels or labels)},
          "spec": {"podSelector": {"matchLabels": dict(labels)},
                   "policyTypes": ["Ingress"], "ingress": ingress}}
