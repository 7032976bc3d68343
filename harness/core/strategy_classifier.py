"""The one classifier of strategy objects: strategy -> `StrategyKind`.

`RunConfig` calls it once for its `train_distribute` (read
`config.strategy_kind` wherever a RunConfig is at hand); call it directly
only for a strategy that no RunConfig holds.
"""

from harness import errors
from harness._tf import tf
from harness.cluster.strategy_kind import StrategyKind

__all__ = ["strategy_kind"]

# The default strategy's classes are private; their names are stable since
# TF 2.0 and checking names needs no tensorflow.python import.
_DEFAULT_CLASS_NAMES = frozenset(
    {"_DefaultDistributionStrategy", "_DefaultDistributionStrategyV1"})


def _kind_classes():
  """(kind, classes) pairs, collective first (tested by class, not by a
  shared base)."""
  v2, v1 = tf.distribute, tf.compat.v1.distribute
  return (
      (StrategyKind.COLLECTIVE, (v2.MultiWorkerMirroredStrategy,
                                 v1.experimental.MultiWorkerMirroredStrategy)),
      (StrategyKind.MIRRORED, (v2.MirroredStrategy, v1.MirroredStrategy)),
      (StrategyKind.PARAMETER_SERVER, (
          v2.experimental.ParameterServerStrategy,
          v1.experimental.ParameterServerStrategy)),
      (StrategyKind.CENTRAL_STORAGE, (
          v2.experimental.CentralStorageStrategy,
          v1.experimental.CentralStorageStrategy)),
      (StrategyKind.ONE_DEVICE, (v2.OneDeviceStrategy, v1.OneDeviceStrategy)),
      (StrategyKind.TPU, (v2.TPUStrategy, v2.experimental.TPUStrategy,
                          v1.experimental.TPUStrategy)),
  )


def strategy_kind(strategy):
  """Which kind of `tf.distribute` strategy `strategy` is.

  Args:
    strategy: a `tf.distribute.Strategy` (TF2 or tf.compat.v1), or None.

  Returns:
    None (no strategy), or a `StrategyKind` (a str: "collective",
    "mirrored", "parameter_server", "central_storage", "one_device", "tpu",
    "default", or "other" for a strategy class harness does not know).

  Raises:
    ConfigError: `strategy` is not a strategy.
  """
  if strategy is None:
    return None
  for kind, classes in _kind_classes():
    if isinstance(strategy, classes):
      return kind
  if not isinstance(strategy, (tf.distribute.Strategy,
                               tf.compat.v1.distribute.Strategy)):
    raise errors.ConfigError(
        f"{strategy!r} is not a tf.distribute.Strategy: train_distribute and "
        "eval_distribute take a strategy object or None. Fix: pass e.g. "
        "tf.compat.v1.distribute.MirroredStrategy().")
  names = {c.__name__ for c in type(strategy).__mro__}
  if names & _DEFAULT_CLASS_NAMES:
    return StrategyKind.DEFAULT
  return StrategyKind.OTHER
