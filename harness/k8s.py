"""Kubernetes manifests for a harness training cluster, rendered from flags.

    python -m harness.k8s --name=mnist --workers=4 --evaluator \\
        --image=registry.example.com/harness:0.1 --pvc=harness-model -- \\
        --model_fn=mnist_mlp --input_fn=mnist --max_steps=10000 \\
      | kubectl apply -f -

prints multi-document YAML: by default (`--kind=jobset`) one JobSet with a
replicatedJob per task type (chief, worker, ps, evaluator) and a
NetworkPolicy; each pod's TF_CONFIG is built from its place in the JobSet
(`harness.cluster.jobset_env`). `--kind=trainjob` renders the same JobSet
as a Kubeflow Trainer v2 ClusterTrainingRuntime plus a TrainJob;
`--kind=jobs` a headless Service, one Indexed Job (batch/v1) for the
training cluster (index i runs task i of chief, workers, ps; the cluster
as JSON in `HARNESS_K8S_CLUSTER`) and one for the evaluator. The flags
after `--` reach `python -m harness.main` unchanged; each container's
entrypoint runs `python -m harness.k8s tf-config`, which works out the
pod's TF_CONFIG and checks it. `--standalone` renders standard servers (a
StatefulSet per role), `--tfjob` a Kubeflow TFJob; k8s/README.md explains
the choices. From Python::

    text = k8s.to_yaml(k8s.render(k8s.K8sConfig(
        name="mnist", workers=2, image="...", model_dir="gs://b/m")))

Rendering lives in `cli/k8s_manifests.py` (JobSet and Trainer in
`cli/k8s_jobset.py`, the pods' parts in `cli/k8s_pods.py`), the config and
the pods' variables in `cli/k8s_config.py`, the pod security settings in
`cli/k8s_policy.py`; this module re-exports their public names and is the
binary.

This module imports nothing from TensorFlow.
"""

import dataclasses
import json
import os
import re
import sys

from absl import flags

from harness import errors
from harness.cli import bad_flags as cli
from harness.cli import k8s_manifests
from harness.cli import log_format
from harness.cluster import jobset_env
from harness.cluster import tf_config as cluster_lib
# Re-exported: `harness.k8s.X` is the documented path of these names.
from harness.cli.k8s_config import CLUSTER_ENV
from harness.cli.k8s_config import CONFIG_ERROR_EXIT_CODE
from harness.cli.k8s_config import CONTAINER
from harness.cli.k8s_config import ENTRYPOINT
from harness.cli.k8s_config import JOB_INDEX_ENV
from harness.cli.k8s_config import K8sConfig
from harness.cli.k8s_config import MODEL_MOUNT
from harness.cli.k8s_config import SCRATCH_MOUNT
from harness.cli.k8s_config import TASK_INDEX_ENV
from harness.cli.k8s_config import TASK_TYPE_ENV
from harness.cli.k8s_config import training_tasks
from harness.cli.k8s_manifests import render
from harness.cli.k8s_manifests import to_yaml

__all__ = [
    "K8sConfig", "render", "to_yaml", "tf_config_from_environ",
    "training_tasks", "parse_args", "main",
    "CLUSTER_ENV", "TASK_TYPE_ENV", "TASK_INDEX_ENV", "JOB_INDEX_ENV",
    "CONTAINER", "MODEL_MOUNT", "SCRATCH_MOUNT", "ENTRYPOINT", "CONFIG_ERROR_EXIT_CODE",
]


def tf_config_from_environ(environ):
  """The pod's TF_CONFIG from its environment, as its entrypoint makes it.

  The cluster comes from `HARNESS_K8S_CLUSTER` (`--kind=jobs`,
  `--standalone`). With `HARNESS_K8S_TASK_TYPE` set, the task is that type
  with index `HARNESS_K8S_TASK_INDEX` (else `JOB_COMPLETION_INDEX`);
  without it, the index counts through the cluster's tasks in the JSON's
  job order (an Indexed Job running the whole training cluster). Without
  `HARNESS_K8S_CLUSTER` it is `harness.cluster.tf_config.from_environ`'s:
  an explicit TF_CONFIG, else the one built from a JobSet pod's place
  (`--kind=jobset|trainjob`).

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
    info = cluster_lib.from_environ(environ)
    if info is None:
      raise errors.ClusterConfigError(
          f"neither {CLUSTER_ENV}, TF_CONFIG nor {jobset_env.JOBSET_NAME_ENV}"
          " is set: the pod has no cluster. Fix: render the manifests with "
          "`python -m harness.k8s` (it sets the variables).")
    return info.to_json()
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


# ---------------------------------------------------------------- binary --


_HELP = """\
usage: python -m harness.k8s --name=N --workers=W --image=I [flags] \\
           -- [harness.main flags]

Prints Kubernetes manifests (multi-document YAML) for a harness training
cluster: a headless Service, an Indexed Job for the training tasks, one for
the evaluator, a NetworkPolicy and optionally TensorBoard. The flags after
`--` reach `python -m harness.main` in every pod unchanged.

    python -m harness.k8s --name=mnist --workers=4 --evaluator \\
        --image=registry.example.com/harness:0.1 --pvc=harness-model -- \\
        --model_fn=mnist_mlp --input_fn=mnist --max_steps=10000 \\
      | kubectl apply -f -

`--standalone` renders standard servers, `--tfjob` a Kubeflow TFJob;
k8s/README.md explains the choices.
"""


def _flag_values():
  """absl FlagValues holding one flag per `K8sConfig` field."""
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
    if cli.wants_help(list(argv[1:])):
      flag_values = _flag_values()
      stdout.write(_HELP + "\nflags:\n"
                   + cli.flag_help(flag_values, list(flag_values)) + "\n")
      return 0
    config = parse_args(argv)
    stdout.write(to_yaml(render(config), header=k8s_manifests.layout_comment(
        config, argv[1:])))
  except errors.ConfigError as e:
    stderr.write(log_format.fold(f"harness.k8s: error: {e}") + "\n")
    return CONFIG_ERROR_EXIT_CODE
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
