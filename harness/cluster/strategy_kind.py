"""`StrategyKind`: which family of `tf.distribute` strategy a run uses.

A `str` enum, so `StrategyKind.COLLECTIVE == "collective"` and the
`--strategy` flag's strings (`JobConfig.strategy`) compare equal to it.
`RunConfig.strategy_kind` holds the kind of its `train_distribute` (None
without one), computed once; `harness.core.strategy_classifier` classifies
a strategy object (that needs TensorFlow, this module does not).
"""

import enum

__all__ = ["StrategyKind", "MULTI_WORKER_KINDS", "BUILDABLE_KINDS", "LOCAL_KINDS",
           "IN_GRAPH_KINDS"]


class StrategyKind(str, enum.Enum):
  """The kinds harness tells apart (None means: no strategy).

  `enum.StrEnum` is Python 3.11+; setup.py promises 3.10. A `str` mix-in
  alone prints `StrategyKind.MIRRORED` from str() and (on 3.10-3.11)
  format(), so both are str's own: the bare value on every version.
  """
  __str__ = str.__str__
  __format__ = str.__format__

  COLLECTIVE = "collective"  # MultiWorkerMirroredStrategy (v1 or TF2).
  MIRRORED = "mirrored"
  PARAMETER_SERVER = "parameter_server"
  CENTRAL_STORAGE = "central_storage"
  ONE_DEVICE = "one_device"
  TPU = "tpu"
  DEFAULT = "default"  # tf.distribute's default (no-op) strategy.
  OTHER = "other"  # A strategy class harness does not know.


# The kinds that train across machines (a TF_CONFIG or remote cluster).
MULTI_WORKER_KINDS = (StrategyKind.COLLECTIVE, StrategyKind.PARAMETER_SERVER)
# What `--strategy` and `strategies.make_strategy` build, in --help's order.
BUILDABLE_KINDS = (StrategyKind.DEFAULT, StrategyKind.MIRRORED,
                   StrategyKind.COLLECTIVE, StrategyKind.PARAMETER_SERVER,
                   StrategyKind.CENTRAL_STORAGE, StrategyKind.ONE_DEVICE)
# One machine's devices: a cluster with several trainers is wrong for them.
LOCAL_KINDS = (StrategyKind.MIRRORED, StrategyKind.CENTRAL_STORAGE,
               StrategyKind.ONE_DEVICE)
# All replicas in one graph of one task: in a cluster, only the chief trains.
IN_GRAPH_KINDS = (*LOCAL_KINDS, StrategyKind.DEFAULT)
