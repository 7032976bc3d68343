"""TensorFlow internals of the v1 distribution strategies harness drives.

Part of `harness._tf_private` (see its door for the rule).
"""

import contextlib
import sys

from harness._tf import tf

__all__ = [
    "override_collective_local_devices",
    "collective_communication_options",
    "set_collective_communication_options",
    "collective_num_devices_per_worker",
    "mirrored_cross_device_ops",
    "set_ps_gpus_per_worker",
    "started_in_process_server",
    "localize_tf_config_resolver",
    "reinitialize_collective_local",
    "set_collective_key_base",
    "loss_scaled_by_optimizer",
    "scale_loss_for_estimator",
    "server_class",
    "worker_input_context",
    "ps_task_count",
    "ps_variable_placement",
]

# Task types whose TF_CONFIG the patched resolver hides from strategies.
_LOCALIZED_TASK_TYPES = set()
_ORIGINAL_CLUSTER_SPEC = []


@contextlib.contextmanager
def override_collective_local_devices(strategy, num_devices, device_type):
  """Makes a v1 collective strategy use `num_devices` local devices.

  Why private: `CollectiveAllReduceExtended._initialize_local_devices` decides
  the devices of one worker when the strategy is configured for a cluster,
  and it hard-codes ONE device when the type is CPU (and counts physical GPUs
  otherwise). No argument of `configure()` changes that, so while the
  context is active the method is shadowed by an instance attribute that
  returns `num_devices` devices of `device_type` on the worker.

  Args:
    strategy: a `tf.compat.v1.distribute.experimental.MultiWorkerMirrored
      Strategy`.
    num_devices: devices per worker, >= 1.
    device_type: "CPU" or "GPU".

  Yields:
    None.
  """
  extended = strategy.extended

  def local_devices(unused_cluster_resolver, worker_device):
    return (tuple(f"{worker_device}/device:{device_type}:{i}"
                  for i in range(num_devices)), device_type)

  extended._initialize_local_devices = local_devices  # pylint: disable=protected-access
  try:
    yield
  finally:
    del extended._initialize_local_devices  # pylint: disable=protected-access


def collective_communication_options(strategy):
  """The `tf.distribute.experimental.CommunicationOptions` of a strategy.

  Why private: TF2 `MultiWorkerMirroredStrategy` takes the options in its
  constructor but exposes no getter; mapping it to the v1 class must keep
  them (implementation, timeout, bytes per pack).
  """
  return strategy.extended._communication_options  # pylint: disable=protected-access


def set_collective_communication_options(strategy, options):
  """Gives a v1 collective strategy full `CommunicationOptions`.

  Why private: the v1 constructor takes only the implementation (RING,
  NCCL, AUTO). The options are read again when the strategy is configured
  for a cluster, so setting the attribute before `configure()` is enough.
  """
  strategy.extended._communication_options = options  # pylint: disable=protected-access


def collective_num_devices_per_worker(strategy):
  """(count, device type) a collective strategy uses on each worker.

  Why private: `num_replicas_in_sync` is public, but before configuration it
  counts one worker only and gives no device type.
  """
  extended = strategy.extended
  return (extended._num_devices_per_worker,  # pylint: disable=protected-access
          extended._local_device_type)  # pylint: disable=protected-access


def mirrored_cross_device_ops(strategy):
  """The `cross_device_ops` a (TF2) MirroredStrategy was constructed with.

  Why private: no getter; None means "choose automatically", which the v1
  class does the same way.
  """
  return getattr(strategy.extended, "_cross_device_ops", None)


def set_ps_gpus_per_worker(strategy, num_gpus):
  """Sets the GPUs per worker a v1 ParameterServerStrategy configures.

  Why private: `configure()` reuses the GPU count detected at construction
  (`_num_gpus_per_worker`), which is 0 on a CPU machine and all visible
  GPUs otherwise; there is no argument to choose it.
  """
  strategy.extended._num_gpus_per_worker = num_gpus  # pylint: disable=protected-access


def started_in_process_server(strategy):
  """Whether constructing `strategy` started a gRPC server in this process.

  Why private: a collective strategy (v1 or TF2) constructed in eager mode
  while TF_CONFIG names a cluster starts the task's server itself, on the
  task's port, through the eager context (and, for TF2, a coordination
  service and a health-check thread). Nothing public says so; the flag
  below is what TensorFlow's own distribute coordinator checked.
  """
  return bool(getattr(strategy.extended, "_std_server_started", False))


def localize_tf_config_resolver(task_types):
  """Hides TF_CONFIG's cluster from strategies when the task is of a type.

  Why a patch: every strategy constructed without a `cluster_resolver`
  reads TF_CONFIG through `tf.distribute.cluster_resolver.
  TFConfigClusterResolver`, in its constructor, with no switch to turn that
  off. For an evaluator, which takes no part in training, that either fails
  (`KeyError: 'evaluator'` when TF_CONFIG's cluster does not list it) or
  starts a server and a health-check thread on the evaluator's port. The
  patched `cluster_spec()` returns an empty `ClusterSpec` while TF_CONFIG's
  task type (read at call time) is one of `task_types`, so such strategies
  initialise for local training. Any other task is unaffected. Installing
  again only adds task types.

  Args:
    task_types: iterable of task type names, e.g. {"evaluator"}.
  """
  resolver_class = tf.distribute.cluster_resolver.TFConfigClusterResolver
  _LOCALIZED_TASK_TYPES.update(task_types)
  if _ORIGINAL_CLUSTER_SPEC:
    return
  original = resolver_class.cluster_spec
  _ORIGINAL_CLUSTER_SPEC.append(original)

  def cluster_spec(self):
    if self.task_type in _LOCALIZED_TASK_TYPES:
      return tf.train.ClusterSpec({})
    return original(self)

  cluster_spec.__doc__ = original.__doc__
  resolver_class.cluster_spec = cluster_spec


def reinitialize_collective_local(strategy, devices):
  """Re-initialises a v1 collective strategy for one machine on `devices`.

  Why private: the public constructor takes no device list (TensorFlow's
  own `_from_local_devices` classmethod calls this same method), and a
  local collective strategy otherwise gets one CPU or all GPUs. Call it
  inside a graph: in eager mode it configures the context's collective ops.

  Args:
    strategy: a `tf.compat.v1.distribute.experimental.MultiWorkerMirrored
      Strategy` with no cluster.
    devices: local device names, e.g. ["/device:CPU:0", "/device:CPU:1"].
  """
  extended = strategy.extended
  extended._initialize_local(  # pylint: disable=protected-access
      extended._cluster_resolver, devices=devices)  # pylint: disable=protected-access


def set_collective_key_base(strategy, key_base):
  """Makes a v1 collective strategy number its collective groups from here.

  Why private: the v1 strategy starts its group
  keys at `extended._collective_key_base + 1` when configured, and no
  argument sets that base. Servers keep collective state (group caches,
  step sequences, pending receive buffers) across clients; when a client
  killed mid-step is followed by one using the same keys, the new
  all-reduces can meet what the old one left ("Second consumer arrived for
  key 1:100:...", or a silent hang: seen in 1 of 9 kill/restart cycles on
  TF 2.21, none in 11 with a fresh base per client).
  """
  strategy.extended._collective_key_base = key_base  # pylint: disable=protected-access


def loss_scaled_by_optimizer(graph):
  """Whether v1 optimizers in `graph` scale each replica's loss (1/N).

  Why private: `_is_loss_scaled_by_optimizer` is the graph flag TF's v1
  strategies set; no public accessor.
  """
  return getattr(graph, "_is_loss_scaled_by_optimizer", False)


def scale_loss_for_estimator(strategy):
  """`strategy`'s context manager for Estimator loss scaling, or None.

  Why private: `_scale_loss_for_estimator_enabled` is the hook TF's
  strategies kept for tf.estimator; absent on some strategies.
  """
  return getattr(strategy, "_scale_loss_for_estimator_enabled", None)


def server_class():
  """The class `tf.distribute.Server` is, looked up where it is defined.

  Why private: tf.estimator started a task's server through
  `server_lib.Server`, and programs (2.15's own tests among them) patch that
  module attribute to stand a fake server in. Looking the class up on its
  defining module at call time (no `tensorflow.python` import: the module is
  the one the public class names) lets such a patch take effect here too.
  """
  public = tf.distribute.Server
  module = sys.modules.get(public.__module__)
  return getattr(module, public.__name__, public)


def worker_input_context(strategy):
  """The `tf.distribute.InputContext` `strategy` gives this worker's
  input_fn, or None where it is not known here.

  Why private: `make_input_fn_iterator` builds the context and the
  iterator together (a `MultiDeviceIterator`); harness feeds a one-CPU
  worker from a plain iterator and needs the same context on its own.
  A collective strategy makes it in `_make_input_context`; a parameter
  server strategy computes it inline from its cluster (`_cluster_spec`,
  `_task_type`, `_task_id`): pipelines are the chief and workers, this
  task's id counts the chief first, as both strategies do.
  """
  extended = strategy.extended
  make = getattr(extended, "_make_input_context", None)
  if make is not None:
    return make()
  if not isinstance(strategy,
                    tf.compat.v1.distribute.experimental.ParameterServerStrategy):
    return None
  cluster = getattr(extended, "_cluster_spec", None)
  if not cluster:
    return tf.distribute.InputContext(
        num_input_pipelines=1, input_pipeline_id=0,
        num_replicas_in_sync=strategy.num_replicas_in_sync)
  jobs = cluster.as_dict()
  chiefs = len(jobs.get("chief", ()))
  task_type, task_id = extended._task_type, extended._task_id  # pylint: disable=protected-access
  if task_type not in ("chief", "worker"):
    return None
  return tf.distribute.InputContext(
      num_input_pipelines=chiefs + len(jobs.get("worker", ())),
      input_pipeline_id=task_id + (chiefs if task_type == "worker" else 0),
      num_replicas_in_sync=strategy.num_replicas_in_sync)


def ps_task_count(strategy):
  """The ps tasks a v1 ParameterServerStrategy configured for a cluster
  places variables on; 0 for any other strategy or without a cluster.

  Why private: the cluster is known to the strategy only after
  `configure()` (`_cluster_spec`); `parameter_devices` is public but
  lists the local device when there is no cluster.
  """
  if not isinstance(strategy,
                    tf.compat.v1.distribute.experimental.ParameterServerStrategy):
    return 0
  cluster = getattr(strategy.extended, "_cluster_spec", None)
  return len(cluster.as_dict().get("ps", ())) if cluster else 0


@contextlib.contextmanager
def ps_variable_placement(strategy, ps_strategy):
  """While active, a configured v1 ParameterServerStrategy places each new
  variable on the ps task `ps_strategy(op)` returns.

  Why private: the strategy builds its variable device function
  (`_variable_device`, a `replica_device_setter` over its cluster, round
  robin) in `configure()` and takes no chooser (its own TODO). The
  replacement is the same device setter with `ps_strategy`.
  """
  extended = strategy.extended
  saved = extended._variable_device  # pylint: disable=protected-access
  extended._variable_device = tf.compat.v1.train.replica_device_setter(  # pylint: disable=protected-access
      ps_tasks=ps_task_count(strategy),
      worker_device=extended._worker_device,  # pylint: disable=protected-access
      merge_devices=True, cluster=extended._cluster_spec,  # pylint: disable=protected-access
      ps_strategy=ps_strategy)
  try:
    yield
  finally:
    extended._variable_device = saved  # pylint: disable=protected-access
