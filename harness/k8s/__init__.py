"""Kubernetes manifests for a harness training cluster, rendered from flags.

    python -m harness.k8s --name=mnist --workers=4 --evaluator \\
        --image=registry.example.com/harness:0.1 --pvc=harness-model -- \\
        --model_fn=mnist_mlp --input_fn=mnist --max_steps=10000 \\
      | kubectl apply -f -

or, from Python::

    import harness.k8s
    text = harness.k8s.to_yaml(harness.k8s.render(harness.k8s.K8sConfig(
        name="mnist", workers=2, image="...", model_dir="gs://b/m")))

prints multi-document YAML: by default (`--output=jobset`) one JobSet with a
replicatedJob per task type (chief, worker, ps, evaluator) and a
NetworkPolicy, admitted by every released JobSet with its default feature
gates; each pod's TF_CONFIG is built from its place in the JobSet
(`harness.cluster.jobset_env`). `--output=trainjob` renders the same JobSet
as a Kubeflow Trainer v2 ClusterTrainingRuntime plus a TrainJob;
`--output=jobs` a headless Service, one Indexed Job (batch/v1) for the
training cluster (index i runs task i of chief, workers, ps; the cluster
as JSON in `HARNESS_K8S_CLUSTER`) and one for the evaluator. The flags
after `--` reach `python -m harness.main` unchanged; each container's
entrypoint runs `python -m harness.k8s tf-config`, which works out the
pod's TF_CONFIG and checks it. `--output=servers` renders standard servers
(a StatefulSet per role), `--output=tfjob` a Kubeflow TFJob; k8s/README.md
explains the choices.

The package: `config` (`K8sConfig`, the tasks, the pods' variables),
`manifests` (the objects and their YAML; JobSet and Trainer in `jobset`,
the pods' parts in `pods`, their security settings in `policy`),
`entrypoint` (`tf-config`), `cli` (the binary's flags and `main`, run by
`__main__`). This door re-exports their public names; nothing else in
harness imports this package.

This package imports nothing from TensorFlow.
"""

import importlib as _importlib

# The names, each under the module that defines it, loaded on first access:
# `python -m harness.k8s.start` (a pod's PID 1) installs its SIGTERM handler
# before anything of this package loads.
_BY_MODULE = {
    # The config and the contract with the pods.
    "harness.k8s.config": (
        "CLUSTER_ENV", "CONFIG_ERROR_EXIT_CODE", "CONTAINER", "ENTRYPOINT",
        "JOB_INDEX_ENV", "K8sConfig", "MODEL_MOUNT", "TASK_INDEX_ENV",
        "TASK_TYPE_ENV", "training_tasks"),
    "harness.k8s.policy": ("SCRATCH_MOUNT",),
    # Rendering.
    "harness.k8s.manifests": ("render", "to_yaml"),
    # The pod's entrypoint and the binary.
    "harness.k8s.entrypoint": ("tf_config_from_environ",),
    "harness.k8s.cli": ("main", "parse_args"),
}
_MODULE_OF = {name: module for module, names in _BY_MODULE.items()
              for name in names}


def __getattr__(name):
  module = _MODULE_OF.get(name)
  if module is None:
    raise AttributeError(f"module 'harness.k8s' has no attribute {name!r}")
  value = getattr(_importlib.import_module(module), name)
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    # The config and the contract with the pods.
    "K8sConfig", "training_tasks",
    "CLUSTER_ENV", "TASK_TYPE_ENV", "TASK_INDEX_ENV", "JOB_INDEX_ENV",
    "CONTAINER", "MODEL_MOUNT", "SCRATCH_MOUNT", "ENTRYPOINT",
    "CONFIG_ERROR_EXIT_CODE",
    # Rendering.
    "render", "to_yaml",
    # The pod's entrypoint and the binary.
    "tf_config_from_environ", "parse_args", "main",
]
