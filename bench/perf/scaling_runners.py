"""The loops `bench.perf.scaling_worker` runs beside harness: bare, Keras fit.

    run = scaling_runners.RUNNERS["bare"]
    replicas = run(args, clock)   # args: scaling_worker's flags

* ``bare``: the graph harness trains (`bench.configs.v1_train_op`, or the
  wide model below) under the same v1 strategy, driven by a plain
  `session.make_callable(train_op)` loop in every task, with no harness on
  top: the strategy reads TF_CONFIG, the task starts its own
  `tf.distribute.Server` and runs a `tf.compat.v1.Session` on it.
  Collective: v1 `MultiWorkerMirroredStrategy`, every worker initialises
  (worker 0's values are broadcast). Parameter servers: v1
  `ParameterServerStrategy`; the chief initialises, the other trainers
  wait for it.
* ``bare_input_fn``: the bare loop, its batches read through
  `strategy.make_input_fn_iterator` (a `MultiDeviceIterator`), as
  tf.estimator 2.15 fed a strategy.
* ``keras``: tf-keras `Model.fit` under TF2 `MultiWorkerMirroredStrategy`
  (collective only), `steps_per_execution=1` (Keras's default).
* ``allreduce``: no model: each step all-reduces a float32 tensor of the
  model's gradient bytes (`--allreduce_bytes` when set) alone, under the
  bare loop's strategy, session config and server (collective only): the
  floor a lockstep step pays for its gradients on this machine.

Each returns the replicas in sync (collective) or the trainers (ps), and
calls `clock.step_done()` after every step. TensorFlow is imported inside.
"""

import json
import os
import time

from bench import configs
from bench.perf import scaling_table

__all__ = ["RUNNERS", "TRACE_PREFIX", "WIDE_BUCKETS", "WIDE_COLUMNS",
           "wide_data", "model_data", "train_op", "communication_options",
           "session_config"]

TRACE_PREFIX = "SCALING_TRACE "
# The wide model: WIDE_COLUMNS hashed categorical ids per example, each
# column WIDE_BUCKETS buckets -> a 16-wide embedding (mean of the column's
# ids) and a linear (1-wide) weight, concatenated -> dense 64 -> 10;
# Adagrad.
WIDE_BUCKETS = 100_000
WIDE_COLUMNS = 8
_WIDE_IDS_PER_COLUMN = 4
_WIDE_EMBEDDING = 16
_WIDE_LEARNING_RATE = 0.05


def wide_data():
  """(ids int64 [N, columns, ids], labels int64 [N]), fixed seed."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(configs.SEED)
  ids = rng.integers(0, WIDE_BUCKETS, size=(
      configs.NUM_EXAMPLES, WIDE_COLUMNS, _WIDE_IDS_PER_COLUMN))
  labels = (ids[:, 0, 0] % 10).astype(np.int64)
  return ids.astype(np.int64), labels


def _wide_logits(tf, ids):
  parts = []
  for column in range(WIDE_COLUMNS):
    column_ids = ids[:, column, :]
    embedding = tf.compat.v1.get_variable(
        f"embedding_{column}", [WIDE_BUCKETS, _WIDE_EMBEDDING],
        initializer=tf.compat.v1.random_normal_initializer(stddev=0.05))
    linear = tf.compat.v1.get_variable(
        f"linear_{column}", [WIDE_BUCKETS, 1],
        initializer=tf.compat.v1.zeros_initializer())
    parts.append(tf.reduce_mean(tf.nn.embedding_lookup(embedding, column_ids),
                                axis=1))
    parts.append(tf.reduce_sum(tf.nn.embedding_lookup(linear, column_ids),
                               axis=1))
  net = tf.concat(parts, axis=1)
  net = tf.compat.v1.layers.dense(net, 64, activation=tf.nn.relu,
                                  name="dense1")
  return tf.compat.v1.layers.dense(net, 10, name="logits")


def model_data(model):
  """The in-memory (features, labels) of `model` (mlp, cnn or wide)."""
  return wide_data() if model == "wide" else configs.data(model)


def train_op(tf, model, features, labels):
  """(loss, train_op) of `model`: the bench graph (Adam 1e-3; the wide
  model Adagrad 0.05)."""
  if model != "wide":
    return configs.v1_train_op(tf, model, features, labels)
  logits = _wide_logits(tf, features)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  # Adagrad, as canned wide models trained: its sparse update touches only
  # the looked-up rows (v1 Adam decays every row of a table each step).
  train = tf.compat.v1.train.AdagradOptimizer(_WIDE_LEARNING_RATE).minimize(
      loss, global_step=tf.compat.v1.train.get_or_create_global_step())
  return loss, train


def communication_options(tf, args):
  """CommunicationOptions from `--implementation` / `--bytes_per_pack`."""
  implementations = tf.distribute.experimental.CommunicationImplementation
  implementation = getattr(implementations, args.implementation.upper())
  return tf.distribute.experimental.CommunicationOptions(
      bytes_per_pack=args.bytes_per_pack, implementation=implementation)


def session_config(tf, args):
  """The session options of harness's default config, plus `--threads`
  and `--scoped_allocator` (on/off set it; default leaves it unset)."""
  graph_options = tf.compat.v1.GraphOptions()
  graph_options.rewrite_options.meta_optimizer_iterations = (
      graph_options.rewrite_options.ONE)
  config = tf.compat.v1.ConfigProto(allow_soft_placement=True,
                                    graph_options=graph_options)
  rewrite = config.graph_options.rewrite_options
  if args.scoped_allocator != "default":  # harness keeps a choice made.
    rewrite.scoped_allocator_optimization = (
        rewrite.ON if args.scoped_allocator == "on" else rewrite.OFF)
  if args.threads:
    config.intra_op_parallelism_threads = args.threads
    config.inter_op_parallelism_threads = args.threads
  return config


def _tf_config():
  tf_config = json.loads(os.environ["TF_CONFIG"])
  return tf_config["cluster"], tf_config["task"]["type"], int(
      tf_config["task"]["index"])


def _bare_strategy_and_server(tf, args):
  """(strategy, session config, server) of the bare loop's task."""
  cluster, task_type, task_id = _tf_config()
  v1 = tf.compat.v1.distribute.experimental
  with tf.Graph().as_default():  # Graph mode: the strategy starts no server.
    if args.strategy == "ps":
      strategy = v1.ParameterServerStrategy()
    else:
      options = communication_options(tf, args)
      strategy = v1.MultiWorkerMirroredStrategy(
          communication=options.implementation)
      strategy.extended._communication_options = options  # pylint: disable=protected-access
  config = session_config(tf, args)
  strategy.configure(config)
  if args.scoped_allocator == "off":  # configure() turned it on.
    config.graph_options.rewrite_options.scoped_allocator_optimization = (
        config.graph_options.rewrite_options.OFF)
  server = tf.distribute.Server(
      tf.train.ClusterSpec(cluster), job_name=task_type, task_index=task_id,
      config=config, start=True)
  return strategy, config, server


def _run_bare(args, clock, input_fn=False):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cluster, task_type, task_id = _tf_config()
  features, labels = model_data(args.model)
  strategy, config, server = _bare_strategy_and_server(tf, args)
  trainers = len(cluster.get("chief", ())) + len(cluster.get("worker", ()))
  trainer_id = task_id + (len(cluster.get("chief", ()))
                          if task_type == "worker" else 0)
  with tf.Graph().as_default(), strategy.scope():
    tf.compat.v1.random.set_random_seed(configs.SEED)
    tf.compat.v1.train.get_or_create_global_step()
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).shard(
        trainers, trainer_id).repeat().batch(args.batch_size)

    def step_fn(x=None, y=None):
      if x is None:
        x, y = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
      loss, train = train_op(tf, args.model, x, y)
      with tf.control_dependencies([train]):
        return tf.identity(loss)

    iterator = None
    if input_fn:
      # As harness and tf.estimator 2.15 feed a strategy: input_fn per
      # worker, a MultiDeviceIterator to the worker's devices.
      iterator = strategy.make_input_fn_iterator(lambda ctx: dataset)
      per_replica = strategy.extended.call_for_each_replica(
          step_fn, args=iterator.get_next())
    else:
      per_replica = strategy.extended.call_for_each_replica(step_fn)
    # This task's loss: no all-reduce beyond the gradients' (the floor).
    loss = strategy.experimental_local_results(per_replica)[0]
    init = tf.compat.v1.global_variables_initializer()
    ready = tf.compat.v1.report_uninitialized_variables()
    with tf.compat.v1.Session(server.target, config=config) as session:
      if iterator is not None:
        session.run(iterator.initializer)
      if args.strategy != "ps" or trainer_id == 0:
        session.run(init)
      else:
        deadline = time.monotonic() + 120
        while session.run(ready).size:
          if time.monotonic() > deadline:
            raise TimeoutError("the chief did not initialise in 120 s")
          time.sleep(0.2)
      step = session.make_callable(loss)
      for _ in range(clock.total_steps):
        step()
        clock.step_done()
      if args.trace:
        print(TRACE_PREFIX + json.dumps(_trace(tf, session, loss)),
              flush=True)
  return strategy.num_replicas_in_sync if args.strategy != "ps" else trainers


def _trace(tf, session, fetch, runs=5):
  """One traced step's timeline, summarised: per op type, the longest
  span over `runs` traced steps' median (ms), the step's wall time, and
  the collective ops (count, bytes of their outputs)."""
  options = tf.compat.v1.RunOptions(
      trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
  summaries = []
  for _ in range(runs):
    metadata = tf.compat.v1.RunMetadata()
    start = time.perf_counter()
    session.run(fetch, options=options, run_metadata=metadata)
    wall = time.perf_counter() - start
    ops, first, last, collectives = {}, None, None, []
    for device in metadata.step_stats.dev_stats:
      for node in device.node_stats:
        begin = node.all_start_micros
        end = begin + node.all_end_rel_micros
        first = begin if first is None else min(first, begin)
        last = end if last is None else max(last, end)
        kind = node.timeline_label.split("=")[-1].split("(")[0].strip() or (
            node.node_name)
        ops[kind] = ops.get(kind, 0) + node.all_end_rel_micros / 1000.0
        if "Collective" in node.timeline_label:
          size = sum(o.tensor_description.allocation_description
                     .requested_bytes for o in node.output)
          collectives.append((node.node_name, node.all_end_rel_micros / 1000,
                              size))
    summaries.append({"wall_ms": wall * 1000,
                      "span_ms": ((last or 0) - (first or 0)) / 1000,
                      "top_ops_ms": dict(sorted(
                          ops.items(), key=lambda kv: -kv[1])[:12]),
                      "collectives": collectives})
  return sorted(summaries, key=lambda s: s["wall_ms"])[len(summaries) // 2]


def _run_allreduce(args, clock):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if args.strategy != "collective":
    raise ValueError("the allreduce runner measures collective all-reduce "
                     "only (--strategy=collective).")
  size = args.allreduce_bytes or scaling_table.GRADIENT_BYTES.get(args.model)
  if not size:
    raise ValueError(f"the allreduce runner has no gradient size for "
                     f"--model={args.model}; set --allreduce_bytes.")
  strategy, config, server = _bare_strategy_and_server(tf, args)
  with tf.Graph().as_default(), strategy.scope():
    tensor = tf.compat.v1.get_variable(
        "gradients", initializer=tf.ones([max(1, size // 4)]),
        use_resource=True)

    def reduce_fn():
      return tf.distribute.get_replica_context().all_reduce(
          tf.distribute.ReduceOp.SUM, tensor.read_value())

    reduced = strategy.experimental_local_results(
        strategy.extended.call_for_each_replica(reduce_fn))[0]
    fetch = reduced[:1]  # Fetch 4 bytes, not the whole sum.
    with tf.compat.v1.Session(server.target, config=config) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      step = session.make_callable(fetch)
      for _ in range(clock.total_steps):
        step()
        clock.step_done()
  return strategy.num_replicas_in_sync


def _run_keras(args, clock):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  if args.model == "wide" or args.strategy != "collective":
    raise ValueError("the keras runner trains mlp or cnn, collective only.")
  strategy = tf.distribute.MultiWorkerMirroredStrategy(
      communication_options=communication_options(tf, args))
  workers = strategy.num_replicas_in_sync
  images, labels = configs.data(args.model)
  dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat(
  ).batch(args.batch_size * workers)  # Global batch: 256 per worker.
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = (
      tf.data.experimental.AutoShardPolicy.OFF)
  dataset = dataset.with_options(options)
  with strategy.scope():
    keras.utils.set_random_seed(configs.SEED)
    model = configs.compiled_keras_model(keras, args.model)
  configs.fit_timed(keras, model, dataset, clock)
  return workers


RUNNERS = {"bare": _run_bare,
           "allreduce": _run_allreduce,
           "bare_input_fn": lambda args, clock: _run_bare(args, clock, True),
           "keras": _run_keras}
