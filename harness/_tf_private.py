"""Every use of TensorFlow internals in harness, in one place.

TensorFlow 2.21 still ships the v1 distribution strategies harness drives in
graph mode, but a few things the Estimator needs have no public API. Each
function below is one such access, with the reason and the TensorFlow
versions it was checked on (2.21.0). If a TensorFlow upgrade breaks harness,
this module is where it breaks. tests/test_tf_private_guard.py fails on any
private TF access (`x._y`, `getattr(x, "_y")`, `tensorflow.python`) elsewhere.

No `tensorflow.python.*` module is imported: every access is a private
attribute of a public object (or a patch of a public class), which keeps the
surface to what is listed here.
"""

import contextlib
import random

from harness._tf import tf

# tf_keras's backend (loaded by `harness._tf`'s Keras 2 check already); None
# if a tf_keras release moves it.
try:
  from tf_keras.src import backend as _keras_backend
except ImportError:
  _keras_backend = None

__all__ = [
    "RetentionSaver",
    "override_collective_local_devices",
    "collective_communication_options",
    "set_collective_communication_options",
    "collective_num_devices_per_worker",
    "mirrored_cross_device_ops",
    "set_ps_gpus_per_worker",
    "started_in_process_server",
    "localize_tf_config_resolver",
    "reinitialize_collective_local",
    "seed_keras_initializers",
    "set_hook_steps_per_run",
    "variable_fetch_tensor",
    "set_collective_key_base",
    "SUMMARY_WRITER_INIT_KEY",
    "initializer_ops",
    "add_saving_listeners",
    "loss_scaled_by_optimizer",
    "scale_loss_for_estimator",
    "is_graph_network",
    "keras_loss_and_train_op",
    "keras_compiled_metrics",
    "keras_weight_compiled_loss",
    "keras_track",
    "keras_restore_subclassed",
    "loaded_keras_name",
]

# tensorflow.python.training.training_util.GLOBAL_STEP_READ_KEY: the graph
# collection caching the global step read that TF's hooks fetch. Why
# private: no public name; harness registers its own read there (a plain
# read under strategies, ordered before a steps_per_loop loop).
GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"

# tensorflow.python.ops.summary_ops_v2._SUMMARY_WRITER_INIT_COLLECTION_NAME:
# the graph collection of v2 summary writers' initialisers (what
# `summary_writer_initializer_op()` returns). Why private: no public name;
# a TPUEstimatorSpec host_call's writer must be initialised by its hook,
# as tf.estimator 2.15's did.
SUMMARY_WRITER_INIT_KEY = "_SUMMARY_WRITER_V2"

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


def seed_keras_initializers(seed):
  """Makes tf_keras initializers (glorot & co.) follow `tf_random_seed`.

  tf.compat.v1.layers use tf_keras initializers, which in TF 2.21 draw their
  op seed from Python's unseeded `random` unless tf_keras's thread-local
  `_SEED_GENERATOR` holds a generator (what keras.utils.set_random_seed
  sets). tf.estimator 2.15 runs were repeatable under `tf_random_seed`;
  seeding that generator per graph restores it without touching the
  process-wide `random`/numpy state. Checked on tf_keras 2.21.0.
  """
  if _keras_backend is None:  # A tf_keras layout change: stay unseeded.
    return
  generator = getattr(_keras_backend, "_SEED_GENERATOR", None)
  if generator is not None:
    generator.generator = None if seed is None else random.Random(seed)


def set_hook_steps_per_run(hook, steps_per_run):
  """Tells a CheckpointSaverHook / StepCounterHook the steps one run makes.

  Why private: `_set_steps_per_run` is how TF's own multi-step loops
  (TPUEstimator, Keras v1) told these hooks; no public setter exists. Left
  unset, CheckpointSaverHook assumes 1,000,000 and re-reads the global step
  in an extra `session.run` after every step.
  """
  hook._set_steps_per_run(steps_per_run)  # pylint: disable=protected-access


def variable_fetch_tensor(variable):
  """The tensor a `session.run(variable)` fetch evaluates.

  Why private: `_as_graph_element` is the protocol Session uses to turn a
  fetched variable into a tensor; the training loop orders that read before
  its first step.
  """
  element = getattr(variable, "_as_graph_element", None)
  return element() if callable(element) else tf.convert_to_tensor(variable)


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


class RetentionSaver(tf.compat.v1.train.Saver):
  """A Saver that deletes the checkpoint over `max_to_keep` before, not
  after, it rewrites the `checkpoint` state file.

  A process killed between TensorFlow's unlisting and its deletion leaves
  an unlisted checkpoint that looks like one `keep_checkpoint_every_n_hours`
  preserved, so restarts cannot count it (tests/test_retention.py's kill -9
  test caught it in 2 of 6 full runs).
  Deleting first leaves a listed, deleted one instead, which readers skip.
  Why private: `save()`'s only step between the two is its private
  `_RecordLastCheckpoint` (TF 2.21.0); preservation decisions are TF's own.
  """

  _meta_graph_suffix = "meta"

  def save(self, *args, **kwargs):
    # save(sess, save_path, global_step, latest_filename, meta_graph_suffix)
    self._meta_graph_suffix = (args[4] if len(args) > 4 else
                               kwargs.get("meta_graph_suffix", "meta"))
    return super().save(*args, **kwargs)

  def _RecordLastCheckpoint(self, latest_save_path):  # pylint: disable=invalid-name
    # pylint: disable=protected-access
    super()._RecordLastCheckpoint(latest_save_path)
    self._MaybeDeleteOldCheckpoints(meta_graph_suffix=self._meta_graph_suffix)


def rebuild_saver(saver):
  """A Saver like `saver`, built in the current default graph.

  Why private: a Saver keeps its constructor arguments only in private
  attributes. Used for a Saver that model_fn built inside the
  steps_per_loop loop body, whose save/restore ops cannot run from outside
  the loop: the copy saves the same variables with the same options.
  """
  # pylint: disable=protected-access
  saver_class = (RetentionSaver if isinstance(saver, RetentionSaver)
                 else tf.compat.v1.train.Saver)
  return saver_class(
      var_list=saver._var_list, reshape=saver._reshape,
      sharded=saver._sharded, max_to_keep=saver._max_to_keep,
      keep_checkpoint_every_n_hours=saver._keep_checkpoint_every_n_hours,
      name=saver._name, restore_sequentially=saver._restore_sequentially,
      allow_empty=saver._allow_empty, write_version=saver._write_version,
      pad_step_number=saver._pad_step_number,
      save_relative_paths=saver._save_relative_paths,
      filename=saver._filename)
  # pylint: enable=protected-access


def initializer_ops(variable):
  """The initialiser ops a variable holds now, building none.

  A distributed variable's public `initializer` groups its components'
  initialisers in a new op wherever it is read; `init_from_checkpoint`
  sets its private `_initializer_op` instead. Why private: the public
  property builds ops. Returns the distributed variable's own op (if set)
  and each component's `initializer`, or `[variable.initializer]`.
  """
  if isinstance(variable, tf.distribute.DistributedValues):
    own = getattr(variable, "_initializer_op", None)
    return ([own] if own is not None else []) + [
        v.initializer for v in variable.values]
  return [variable.initializer]


def loaded_keras_name(api_module):
  """Returns the module name `api_module.keras` already resolved to, or None.

  Reads `__dict__` only: `getattr` would load Keras as a side effect. Why
  private: TensorFlow's module wrapper (`_tfmw_wrapped_module`) and its
  KerasLazyLoader state (`_tfll_*`) are the only record of which Keras
  `tf.keras` chose.
  """
  wrapped = getattr(api_module, "_tfmw_wrapped_module", api_module)
  keras = vars(wrapped).get("keras")
  if keras is None:
    return None
  state = vars(keras)
  if "_tfll_initialized" in state:  # TensorFlow's KerasLazyLoader.
    if not state["_tfll_initialized"]:
      return None
    return "tf_keras" if state.get("_tfll_keras_version") != "keras_3" else (
        "keras")
  return state.get("__name__")


def add_saving_listeners(saver_hook, listeners):
  """Adds `CheckpointSaverListener`s to an existing `CheckpointSaverHook`.

  Why private: the hook takes listeners only in its constructor; a
  model_fn's own saver hook gets train(saving_listeners=...) through
  `_listeners`, as tf.estimator 2.15 did.
  """
  saver_hook._listeners.extend(listeners)  # pylint: disable=protected-access


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


def is_graph_network(keras_model):
  """Whether a Keras 2 model is Sequential/functional (not subclassed).

  Why private: tf_keras exposes no public test; `_is_graph_network` is
  what its own cloning checks.
  """
  return getattr(keras_model, "_is_graph_network", False)


def keras_loss_and_train_op(model, training):
  """(total loss, train op or None) of a clone compiled in a v1 graph.

  Why private: tf_keras's v1 (graph) Model builds its train/test function
  in `_make_train_function`/`_make_test_function`; tf.estimator 2.15 did so.
  """
  if not training:
    model._make_test_function()  # pylint: disable=protected-access
    return model.total_loss, None
  model._make_train_function()  # pylint: disable=protected-access
  return model.total_loss, model.train_function.updates_op


def keras_compiled_metrics(model):
  """The compiled (not `add_metric`) metrics of a v1 clone, or None."""
  if not getattr(model, "_compile_metrics", None):
    return None
  return model._compile_metric_functions  # pylint: disable=protected-access


def keras_weight_compiled_loss(model, sample_weights):
  """Recomputes a v1 clone's total loss and metrics with sample weights."""
  # pylint: disable-next=protected-access
  model._compile_weights_loss_and_weighted_metrics(sample_weights)


def keras_restore_subclassed(model):
  """Undoes the in-place reset cloning did to a subclassed model, if any."""
  if getattr(model, "_original_attributes_cache", None) is not None:
    tf.keras.__internal__.models.in_place_subclassed_model_state_restoration(
        model)


def keras_track(model, trackable, name):
  """Adds `trackable` to the model's object graph (checkpoint keys)."""
  model._track_trackable(trackable, name)  # pylint: disable=protected-access
