"""The pod's TF_CONFIG, as `python -m harness.k8s tf-config` prints it.

    TF_CONFIG="$(python -m harness.k8s tf-config)"   # the pod's entrypoint
    text = entrypoint.tf_config_from_environ(os.environ)

Every rendered container starts with `config.ENTRYPOINT`, which runs the
command above: the cluster and the task come from the variables the
manifests set (`config.CLUSTER_ENV`, `TASK_TYPE_ENV`, `TASK_INDEX_ENV`) or
Kubernetes sets (`JOB_COMPLETION_INDEX`, a JobSet pod's place). A bad
variable is a `ClusterConfigError`, which the binary turns into exit status
`CONFIG_ERROR_EXIT_CODE`. Re-exported by `harness.k8s`.

This module imports nothing from TensorFlow.
"""

import json
import re

from harness import cluster as cluster_lib
from harness import errors
from harness.cluster import jobset_env
from harness.k8s.config import CLUSTER_ENV
from harness.k8s.config import JOB_INDEX_ENV
from harness.k8s.config import TASK_INDEX_ENV
from harness.k8s.config import TASK_TYPE_ENV

__all__ = ["tf_config_from_environ"]


def tf_config_from_environ(environ):
  """The pod's TF_CONFIG from its environment, as its entrypoint makes it.

  The cluster comes from `HARNESS_K8S_CLUSTER` (`--output=jobs`,
  `--output=servers`). With `HARNESS_K8S_TASK_TYPE` set, the task is that type
  with index `HARNESS_K8S_TASK_INDEX` (else `JOB_COMPLETION_INDEX`);
  without it, the index counts through the cluster's tasks in the JSON's
  job order (an Indexed Job running the whole training cluster). Without
  `HARNESS_K8S_CLUSTER` it is `harness.cluster.tf_config.from_environ`'s:
  an explicit TF_CONFIG, else the one built from a JobSet pod's place
  (`--output=jobset|trainjob`).

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
