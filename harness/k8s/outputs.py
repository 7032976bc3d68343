"""What each `--output` of `python -m harness.k8s` is: its traits, and how
its tasks are addressed.

    kind = outputs.Output("trainjob")
    kind.jobset             # True: a JobSet runs it (group restarts, gates)
    outputs.ADDRESSES[kind](config, 0, "worker", 0)  # "mnist-worker-0-0.mnist"

Code reads an output's traits (`config.kind.standalone`) or a table keyed by
it (this module's `ADDRESSES`, `manifests._RENDERERS`), never compares it.
No TensorFlow.
"""

import dataclasses
import enum

from harness.cluster import jobset_env

__all__ = ["Output", "OUTPUTS", "ADDRESSES"]


@dataclasses.dataclass(frozen=True)
class _OutputTraits:
  """What an `--output` implies (each False unless set)."""
  standalone: bool = False  # Standard servers only, no harness.main.
  jobset: bool = False  # A JobSet runs the job (group restarts, gates).
  # The layout comment lists each pod's hostname and task (harness names
  # the pods; a training operator names a TFJob's).
  layout: bool = False


class Output(str, enum.Enum):
  """`--output`: what the manifests are (`K8sConfig.kind`)."""
  __str__ = str.__str__
  __format__ = str.__format__

  JOBSET = "jobset"
  TRAINJOB = "trainjob"
  JOBS = "jobs"
  TFJOB = "tfjob"
  SERVERS = "servers"

  standalone = property(lambda self: _OUTPUT_TRAITS[self].standalone)
  jobset = property(lambda self: _OUTPUT_TRAITS[self].jobset)
  layout = property(lambda self: _OUTPUT_TRAITS[self].layout)


_OUTPUT_TRAITS = {
    Output.JOBSET: _OutputTraits(jobset=True, layout=True),
    Output.TRAINJOB: _OutputTraits(jobset=True, layout=True),
    Output.JOBS: _OutputTraits(layout=True),
    Output.TFJOB: _OutputTraits(),
    Output.SERVERS: _OutputTraits(standalone=True),
}
# `--output`'s values, in --help's order.
OUTPUTS = tuple(output.value for output in Output)


# `--output` -> the address of task `index` of `task_type`, the `i`th of
# `training_tasks`, without its port.
ADDRESSES = {
    # The address the training operator gives the task.
    Output.TFJOB: lambda config, i, task_type, index: (
        f"{config.name}-{task_type}-{index}.{config.namespace}.svc"),
    # A StatefulSet per role.
    Output.SERVERS: lambda config, i, task_type, index: (
        f"{config.name}-{task_type}-{index}.{config.service}"),
    # Pod `index` of the type's replicatedJob.
    Output.JOBSET: lambda config, i, task_type, index: (
        f"{jobset_env.hostname(config.name, task_type, index)}."
        f"{config.service}"),
    # Hostname of index i of the training Job.
    Output.JOBS: lambda config, i, task_type, index: (
        f"{config.name}-{i}.{config.service}"),
}
ADDRESSES[Output.TRAINJOB] = ADDRESSES[Output.JOBSET]  # A JobSet too.
