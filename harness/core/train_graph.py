"""The TRAIN graph: global step, inputs and the replicated model_fn call.

`build_local` / `build_distributed` create the global step, the inputs and
the TRAIN `EstimatorSpec` in the current default graph (the latter under a
distribution strategy, one model_fn call per replica), inside
`step_loop.build`'s while loop when `steps_per_loop` > 1. `core/train_loop`
runs what they build.
"""

import dataclasses

from absl import logging

from harness import _tf_private
from harness import errors
from harness import fields
from harness import spec as spec_lib
from harness._tf import tf
from harness.core import auto_loop
from harness.core import input_pipeline
from harness.core import ps_placement
from harness.core import step_loop
from harness.spec import ModeKeys
from harness.telemetry import step_rate

__all__ = [
    "TrainGraph",
    "set_graph_seed",
    "create_global_step",
    "build_local",
    "build_distributed",
    "replica_device_setter",
]


def set_graph_seed(seed):
  """tf_random_seed for the default graph, tf_keras initializers included."""
  tf.compat.v1.random.set_random_seed(seed)
  _tf_private.seed_keras_initializers(seed)


def create_global_step(graph):
  """Creates the int64 scalar global step; errors if model_fn made its own."""
  step = tf.compat.v1.train.get_global_step(graph)
  if step is not None:
    raise errors.ModelFnError(
        '"global_step" already exists in the graph before model_fn was '
        "called. Fix: read it with tf.compat.v1.train.get_global_step() "
        "instead of creating it.")
  step = tf.compat.v1.train.create_global_step(graph)
  if step.dtype.base_dtype != tf.int64 or step.shape.ndims != 0:
    raise errors.ModelFnError(
        f"global_step must be an int64 scalar, it is {step!r}.")
  return step


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainGraph:
  """What `build_local` / `build_distributed` made.

  Attributes:
    spec: the TRAIN EstimatorSpec (under steps_per_loop > 1, `train_op` is
      the loop and `loss` its last step's loss).
    input_hooks: hooks that initialise the input iterator.
    global_step: the global step variable.
    steps_per_loop: training steps one `session.run` makes.
    loop: the `step_loop.LoopedStep` (None without a loop).
    auto_bound: under steps_per_loop="auto", (K's bound, what sets it);
      None for a fixed K.
    same_k_everywhere: every worker must run the same K (collective).
    examples_per_step: the global batch of a step, for `examples/sec`: a
      scalar Tensor, an int (static batch under a loop), or None (unknown).
  """
  spec: spec_lib.EstimatorSpec
  input_hooks: list[tf.compat.v1.train.SessionRunHook]
  global_step: tf.Variable
  steps_per_loop: int = 1
  loop: step_loop.LoopedStep | None = None
  auto_bound: tuple[int, str] | None = None
  same_k_everywhere: bool = False
  examples_per_step: tf.Tensor | int | None = None


def _loop_size(config, is_dataset):
  """(K the loop is built for, auto's (bound, reason) or None)."""
  requested = config.steps_per_loop
  auto = requested == fields.STEPS_PER_LOOP_AUTO
  bound, reason = (auto_loop.cadence_bound(config) if auto else
                   (requested, None))
  size = step_loop.check_input(is_dataset, bound, auto=auto)
  if not auto:
    return size, None
  if size == 1:
    if bound == 1:
      logging.info("train | steps_per_loop=auto: K=1 (%s allows no more).",
                   reason)
    return 1, None
  return bound, (bound, reason)


def build_local(call_model_fn, input_fn, params, config):
  """Builds a single-device TRAIN graph in the default graph.

  Returns:
    A TrainGraph.
  """
  graph = tf.compat.v1.get_default_graph()
  set_graph_seed(config.tf_random_seed)
  global_step = create_global_step(graph)
  result = spec_lib.call_input_fn(input_fn, ModeKeys.TRAIN, params, config)
  steps_per_loop, auto_bound = _loop_size(
      config, isinstance(result, tf.data.Dataset))
  if steps_per_loop == 1:
    features, labels, input_hooks = input_pipeline.parse_input_fn_result(
        result, config.input_pipeline, ModeKeys.TRAIN)
    with tf.control_dependencies([_ordered_global_step_read(global_step)]):
      spec = call_model_fn(features, labels, ModeKeys.TRAIN, config)
    return TrainGraph(spec=spec, input_hooks=input_hooks,
                      global_step=global_step,
                      examples_per_step=step_rate.examples_in(features, labels))
  iterator, input_hook = input_pipeline.initializable_iterator(
      result, config.input_pipeline, ModeKeys.TRAIN)
  _register_global_step_read(global_step.read_value)
  examples = []  # The body's batch, carried out of the loop.

  def step_fn():
    features, labels = input_pipeline.parse_features_and_labels(
        iterator.get_next())
    examples.append(step_rate.examples_in(features, labels))
    return call_model_fn(features, labels, ModeKeys.TRAIN, config)

  looped = step_loop.build(
      step_fn, steps_per_loop=steps_per_loop, step_read=global_step.read_value,
      global_step=global_step, examples_fn=lambda: examples[-1])
  return TrainGraph(
      spec=looped.spec, global_step=global_step, steps_per_loop=steps_per_loop,
      input_hooks=[input_hook], loop=looped, auto_bound=auto_bound,
      examples_per_step=looped.examples_per_step)


def _loss_reduce_op():
  graph = tf.compat.v1.get_default_graph()
  if _tf_private.loss_scaled_by_optimizer(graph):
    return tf.compat.v1.distribute.get_loss_reduction()
  return tf.distribute.ReduceOp.SUM


def build_distributed(strategy, call_model_fn, input_fn, params, config):
  """Builds a replicated TRAIN graph under `strategy` in the default graph.

  Each replica calls model_fn on its own per-replica batch. v1 optimizers
  scale each replica's loss by 1/num_replicas and sum the gradients, so
  N replicas at batch B train like one device at batch N*B; the reported
  loss is the mean over replicas when the optimizer scaled it, else the sum
  (tf.estimator's rule). Under a multi-worker strategy the reported loss is
  over this worker's replicas only (see `_local_reported_loss`).

  Returns:
    A TrainGraph.
  """
  graph = tf.compat.v1.get_default_graph()
  scale = _tf_private.scale_loss_for_estimator(strategy)
  with strategy.scope(), _ps_placed(strategy, config):
    ctx = scale() if scale is not None else _null_context()
    with ctx:
      set_graph_seed(config.tf_random_seed)
      iterator, input_hooks = input_pipeline.distributed_iterator(
          strategy, input_fn, ModeKeys.TRAIN, params, config)
      global_step = create_global_step(graph)
      read_step = lambda: strategy.extended.read_var(global_step)
      _register_global_step_read(read_step)

      examples = []  # This step's global batch (carried out of a loop).

      def step_fn():
        features, labels = input_pipeline.parse_features_and_labels(
            iterator.get_next(), check=False)
        examples.append(step_rate.replicated_examples_in(
            strategy, features, labels))
        grouped = strategy.extended.call_for_each_replica(
            call_model_fn, args=(features, labels, ModeKeys.TRAIN, config))
        loss = _local_reported_loss(strategy, grouped.loss)
        first = lambda hooks: [
            strategy.experimental_local_results(h)[0] for h in hooks]
        scaffold = _distributed_scaffold(grouped.scaffold, strategy)
        return spec_lib.EstimatorSpec(
            mode=ModeKeys.TRAIN, loss=loss,
            train_op=strategy.group(grouped.train_op),
            training_hooks=first(grouped.training_hooks),
            training_chief_hooks=first(grouped.training_chief_hooks),
            scaffold=scaffold)

      steps_per_loop, auto_bound = _loop_size(config, True)
      if steps_per_loop == 1:
        return TrainGraph(spec=step_fn(), input_hooks=input_hooks,
                          global_step=global_step,
                          examples_per_step=examples[0])
      looped = step_loop.build(
          step_fn, steps_per_loop=steps_per_loop, step_read=read_step,
          global_step=global_step, examples_fn=lambda: examples[-1])
  return TrainGraph(spec=looped.spec, input_hooks=input_hooks,
                    global_step=global_step, steps_per_loop=steps_per_loop,
                    loop=looped, auto_bound=auto_bound,
                    same_k_everywhere=bool(
                        config.strategy_kind and config.strategy_kind.lockstep),
                    examples_per_step=looped.examples_per_step)


def _ordered_global_step_read(global_step):
  """The hooks' global step read, made before model_fn's ops.

  model_fn is built under a control dependency on it, so every run reads the
  step before that run's increment: the hooks' cadence (summaries, logging,
  checkpoints at N+1, 2N+1, ...) does not depend on how TensorFlow happens
  to order an unordered read and write (as tf.estimator built model_fn).
  Before the variables are initialised it reads the initial value.
  """
  value = tf.compat.v1.cond(
      tf.compat.v1.is_variable_initialized(global_step),
      global_step.read_value, lambda: global_step.initial_value)
  read = tf.identity(value, name="global_step_read")
  tf.compat.v1.add_to_collection(_tf_private.GLOBAL_STEP_READ_KEY, read)
  return read


def _register_global_step_read(read_step):
  """Makes the hooks' global step read a plain read of the variable.

  Hooks (StopAtStep, CheckpointSaver, SummarySaver, StepCounter) read the
  step through TF's cached "global step read" tensor. Built by TF, it falls
  back to the variable's initial value, and under a collective strategy that
  initial value is a broadcast from the first worker: every run that reads
  the step then runs a collective. The chief's own hooks read the step in
  extra runs its peers do not make, so the workers' collectives go out of
  step and the next gradient all-reduce hangs (or aborts with "Delete called
  on non-empty BufRendezvous"). A plain read involves no peer; tf.estimator
  registered the same one.
  """
  tf.compat.v1.add_to_collection(_tf_private.GLOBAL_STEP_READ_KEY,
                                 read_step())


def _local_reported_loss(strategy, per_replica_loss):
  """The loss to log and summarise: reduced over THIS worker's replicas.

  `strategy.reduce` would all-reduce across workers under a collective
  strategy; a fetch of that on the chief alone (summaries, logging) would
  wait forever for the other workers. Reducing locally needs no peer.
  Under an in-process strategy it equals tf.estimator's reported loss.
  """
  values = strategy.experimental_local_results(per_replica_loss)
  total = tf.add_n([tf.cast(v, tf.float32) for v in values])
  if _loss_reduce_op() == tf.distribute.ReduceOp.MEAN:
    return total / float(len(values))
  return total


class _null_context:  # pylint: disable=invalid-name
  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False


def _distributed_scaffold(scaffold, strategy):
  """Collapses a per-replica Scaffold into one (first replica's parts)."""
  local = strategy.experimental_local_results(scaffold)[0]
  if local.init_fn is None:
    return local
  init_fn = local.init_fn
  return tf.compat.v1.train.Scaffold(
      init_op=local.init_op, init_feed_dict=local.init_feed_dict,
      init_fn=lambda scaffold_, session: init_fn(scaffold_, session),
      ready_op=local.ready_op, ready_for_local_init_op=(
          local.ready_for_local_init_op),
      local_init_op=local.local_init_op, summary_op=local.summary_op,
      saver=local.saver, copy_from_scaffold=None)


def _ps_strategy(config, tasks):
  """The chooser of `tasks` ps tasks `config.ps_placement` names (None:
  TensorFlow's round robin, or no ps task)."""
  if not tasks or getattr(config, "ps_placement", None) != fields.BY_SIZE:
    return None
  return ps_placement.BySize(tasks)


def _ps_placed(strategy, config):
  """A context placing a parameter-server strategy's variables by size
  while the graph is built, where `config.ps_placement` asks for it."""
  chooser = _ps_strategy(config, _tf_private.ps_task_count(strategy))
  if chooser is None:
    return _null_context()
  return _tf_private.ps_variable_placement(strategy, chooser)


def replica_device_setter(config):
  """Between-graph ps placement of a TF_CONFIG ps cluster (None without ps
  tasks, or under a strategy, which places variables itself)."""
  if config.num_ps_replicas <= 0 or config.train_distribute is not None:
    return None
  return tf.compat.v1.train.replica_device_setter(
      ps_tasks=config.num_ps_replicas,
      worker_device=f"/job:{config.task_type}/task:{config.task_id}",
      merge_devices=True,
      ps_strategy=_ps_strategy(config, config.num_ps_replicas),
      ps_ops=["Variable", "VariableV2", "AutoReloadVariable",
              "MutableHashTable", "MutableHashTableV2",
              "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
              "MutableDenseHashTable", "MutableDenseHashTableV2",
              "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
              "BoostedTreesQuantileStreamResourceHandleOp"],
      cluster=config.cluster_spec)
