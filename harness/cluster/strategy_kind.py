"""`StrategyKind`: the families of `tf.distribute` strategy, with their traits.

A `str` enum, so `StrategyKind.COLLECTIVE == "collective"` and the
`--strategy` flag's strings (`JobConfig.strategy`) compare equal to it.
`RunConfig.strategy_kind` holds the kind of its `train_distribute` (None
without one), computed once; `harness.core.strategy_classifier` classifies
a strategy object (that needs TensorFlow, this module does not).

Code asks a kind what it does, never which kind it is::

    kind = StrategyKind.of("collective")
    kind.lockstep         # True: every worker initialises, all step together
    kind.single_device    # False: one replica per device

A kind's behaviour is its row in `_TRAITS`. A new kind is a member, its row,
its `--strategy` spellings (`cli/flag_parsers.py`), its builder
(`distribute/strategies._BUILDERS`), its class in
`core/strategy_classifier.py` and, for a TF2 class, its v1 twin
(`distribute/graph_strategy._TO_V1`).
"""

import dataclasses
import enum

__all__ = ["StrategyKind", "MULTI_WORKER_KINDS", "BUILDABLE_KINDS"]


@dataclasses.dataclass(frozen=True)
class _Traits:
  """What a kind of strategy does (each flag False unless set)."""
  buildable: bool = False  # `--strategy` / `make_strategy` build it.
  no_op: bool = False  # Nothing to build or configure (the default).
  multi_worker: bool = False  # Trains across machines (TF_CONFIG, remote).
  # Trainers step together through all-reduce: each initialises its own
  # copy of the variables, all loop and stop at the same steps.
  lockstep: bool = False
  # One machine's devices in one graph: refuses several trainers.
  one_machine: bool = False
  single_device: bool = False  # One replica, whatever the devices.
  needs_ps: bool = False  # Variables live on a "ps" job, which it needs.
  refuses_ps: bool = False  # Variables live on the workers: no "ps" job.
  asynchronous: bool = False  # Each worker updates on its own.


class StrategyKind(str, enum.Enum):
  """The kinds harness tells apart (None means: no strategy).

  `enum.StrEnum` is Python 3.11+; setup.py promises 3.10. A `str` mix-in
  alone prints `StrategyKind.MIRRORED` from str() and (on 3.10-3.11)
  format(), so both are str's own: the bare value on every version.
  Members are in `--help`'s order.
  """
  __str__ = str.__str__
  __format__ = str.__format__

  DEFAULT = "default"  # tf.distribute's default (no-op) strategy.
  MIRRORED = "mirrored"
  COLLECTIVE = "collective"  # MultiWorkerMirroredStrategy (v1 or TF2).
  PARAMETER_SERVER = "parameter_server"
  CENTRAL_STORAGE = "central_storage"
  ONE_DEVICE = "one_device"
  TPU = "tpu"
  OTHER = "other"  # A strategy class harness does not know.

  @classmethod
  def of(cls, value):
    """The kind a `StrategyKind`, its string or None names (None: None).

    Raises:
      ValueError: `value` names no kind.
    """
    return None if value is None else cls(value)

  @property
  def traits(self):
    return _TRAITS[self]

  buildable = property(lambda self: self.traits.buildable)
  no_op = property(lambda self: self.traits.no_op)
  multi_worker = property(lambda self: self.traits.multi_worker)
  lockstep = property(lambda self: self.traits.lockstep)
  one_machine = property(lambda self: self.traits.one_machine)
  single_device = property(lambda self: self.traits.single_device)
  needs_ps = property(lambda self: self.traits.needs_ps)
  refuses_ps = property(lambda self: self.traits.refuses_ps)
  asynchronous = property(lambda self: self.traits.asynchronous)

  @property
  def in_graph(self):
    """All replicas in one graph of one task: in a cluster, only the chief
    trains (a one-machine kind, or no strategy at all)."""
    return self.one_machine or self.no_op


_K = StrategyKind
_TRAITS = {
    _K.DEFAULT: _Traits(buildable=True, no_op=True, single_device=True),
    _K.MIRRORED: _Traits(buildable=True, one_machine=True),
    _K.COLLECTIVE: _Traits(buildable=True, multi_worker=True, lockstep=True,
                           refuses_ps=True),
    _K.PARAMETER_SERVER: _Traits(buildable=True, multi_worker=True,
                                 needs_ps=True, asynchronous=True),
    _K.CENTRAL_STORAGE: _Traits(buildable=True, one_machine=True),
    _K.ONE_DEVICE: _Traits(buildable=True, one_machine=True,
                           single_device=True),
    _K.TPU: _Traits(),
    _K.OTHER: _Traits(),
}

# The kinds that train across machines (a TF_CONFIG or remote cluster).
MULTI_WORKER_KINDS = tuple(kind for kind in StrategyKind if kind.multi_worker)
# What `--strategy` and `strategies.make_strategy` build, in --help's order.
BUILDABLE_KINDS = tuple(kind for kind in StrategyKind if kind.buildable)
