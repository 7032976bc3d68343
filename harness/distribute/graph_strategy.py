"""TF2 strategy objects -> the tf.compat.v1 classes graph mode trains with.

`to_graph_strategy` rebuilds a TF2 strategy as its v1 equivalent (same
devices, same collective options) inside a throwaway graph (`v1_of` when
the kind is known, through a table keyed by kind); `make_strategy` (in
`strategies`) and the mapping share `local_resolver`, the cluster-less
resolver that keeps constructors from reading TF_CONFIG.
"""

from absl import logging

from harness import _tf_private
from harness import errors
from harness._tf import tf
from harness.cluster.strategy_kind import StrategyKind
from harness.core.strategy_classifier import strategy_kind

__all__ = ["to_graph_strategy", "v1_of", "is_v1", "local_resolver"]


def is_v1(strategy):
  """Whether `strategy` is a tf.compat.v1 strategy."""
  return isinstance(strategy, tf.compat.v1.distribute.Strategy)


def local_resolver(num_gpus):
  """A resolver with no cluster, so constructors read no TF_CONFIG."""
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec({}), num_accelerators={"GPU": num_gpus},
      rpc_layer="grpc")


def _num_visible_gpus():
  # Lists physical devices only: does not initialise the runtime.
  return len(tf.config.list_physical_devices("GPU"))


def _v1_collective(strategy):
  options = _tf_private.collective_communication_options(strategy)
  v1 = tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy(
      communication=options.implementation,
      cluster_resolver=local_resolver(_num_visible_gpus()))
  _tf_private.set_collective_communication_options(v1, options)
  return v1


def _v1_mirrored(strategy):
  return tf.compat.v1.distribute.MirroredStrategy(
      devices=list(strategy.extended.worker_devices),
      cross_device_ops=_tf_private.mirrored_cross_device_ops(strategy))


def _v1_one_device(strategy):
  return tf.compat.v1.distribute.OneDeviceStrategy(
      strategy.extended.worker_devices[0])


def _v1_central_storage(strategy):
  return tf.compat.v1.distribute.experimental.CentralStorageStrategy(
      compute_devices=list(strategy.extended.worker_devices),
      parameter_device=strategy.extended.parameter_devices[0])


def _refuse_tf2_parameter_server(strategy):
  raise errors.ConfigError(
      f"train_distribute is a TF2 {type(strategy).__name__} "
      "(tf.distribute.experimental.ParameterServerStrategy), which runs "
      "functions through a tf.distribute.experimental.coordinator."
      "ClusterCoordinator and cannot train a graph-mode (Estimator) "
      "model_fn. Fix: use "
      "tf.compat.v1.distribute.experimental.ParameterServerStrategy(), "
      "which reads the same TF_CONFIG.")


# Each kind whose TF2 class has a graph-mode (tf.compat.v1) twin, or a
# reason why it cannot have one.
_TO_V1 = {
    StrategyKind.COLLECTIVE: _v1_collective,
    StrategyKind.MIRRORED: _v1_mirrored,
    StrategyKind.ONE_DEVICE: _v1_one_device,
    StrategyKind.CENTRAL_STORAGE: _v1_central_storage,
    StrategyKind.PARAMETER_SERVER: _refuse_tf2_parameter_server,
}


def to_graph_strategy(strategy, *, kind=None):
  """The tf.compat.v1 strategy that trains like `strategy` in graph mode.

  v1 strategies are returned as they are. A TF2 strategy with a v1
  equivalent is rebuilt as that class with the same devices (and, for
  `MultiWorkerMirroredStrategy`, the same communication options; its
  cluster comes later from `configure_for_task`). The new object is built
  inside a throwaway graph, so building it starts no server and configures
  no collective ops in the eager context.

  Args:
    strategy: the user's strategy, or None.
    kind: `strategy`'s `StrategyKind` when the caller has it (a RunConfig's
      `strategy_kind`); None classifies `strategy` here. Ignored when
      `strategy` is None.

  Returns:
    A `tf.compat.v1.distribute.Strategy`, or None for None and for the
    default strategy (both mean: no strategy).

  Raises:
    ConfigError: for TF2 `ParameterServerStrategy` (it trains through a
      `ClusterCoordinator`, not in graph mode) or a non-strategy.
    NotSupportedError: for TPU and unknown TF2 strategy classes.
  """
  if strategy is None:
    return None
  return v1_of(strategy, kind or strategy_kind(strategy))


def v1_of(strategy, kind):
  """`to_graph_strategy` for a `strategy` of a known `kind` (a RunConfig's
  `strategy_kind`), None for None: nothing is classified again."""
  if strategy is None or kind.no_op:
    return None
  if is_v1(strategy):
    return strategy
  name = type(strategy).__name__
  if kind not in _TO_V1:
    raise errors.NotSupportedError(
        f"train_distribute is a TF2 {name} (kind {str(kind)!r}), which harness "
        "cannot run in graph mode: it maps only MirroredStrategy, "
        "MultiWorkerMirroredStrategy, OneDeviceStrategy and "
        "CentralStorageStrategy to their tf.compat.v1 classes. Fix: pass a "
        "tf.compat.v1.distribute strategy.")
  with tf.Graph().as_default():
    v1 = _TO_V1[kind](strategy)
  logging.info("strategy | TF2 %s trains as %s", name, type(v1).__name__)
  return v1
