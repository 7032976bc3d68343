"""One task of `bench.perf.scaling`'s cluster (a child process).

    TF_CONFIG='{"cluster": {"worker": ["127.0.0.1:P0", "127.0.0.1:P1"]},
    "task": {"type": "worker", "index": 0}}' TF_USE_LEGACY_KERAS=1 \\
    taskset -c 0 python -m bench.perf.scaling_worker --model_dir=/tmp/d \\
        --runner=bare --model=cnn --warmup_steps=20 --timed_steps=60 --trace

Trains the bench MLP (784 -> 256 -> 256 -> 10), CNN or wide model
(`bench.perf.scaling_runners`), Adam 1e-3, on in-memory data sharded by worker,
batch `--batch_size` per worker, with `--runner`: harness
(`harness.Estimator.train`; `--harness_defaults`: the strategy and session
config as harness builds them), estimator215 (tf.estimator 2.15's
`Estimator.train` with its defaults, run by the python of `python -m
bench.tf215.tf215_env`: TensorFlow 2.15), bare, keras or allreduce
(`bench.perf.scaling_runners`),
under `--strategy` (collective: v1 `MultiWorkerMirroredStrategy`; ps: v1
`ParameterServerStrategy`, a ps task only serves). Prints one line
`SCALING_RESULT {json}`: the timed steps, their seconds, seconds from
`--t0` to the end of the first step, replicas in sync (ps: trainers); with
`--trace` (bare; every task must have it) one `SCALING_TRACE {json}` line
too: a traced step's wall time, time per op type and collectives' bytes.
"""

import argparse
import json
import os
import resource
import sys
import time

from bench import configs
from bench.perf import scaling_runners

__all__ = ["RESULT_PREFIX", "main"]

RESULT_PREFIX = "SCALING_RESULT "
MODELS = ("mlp", "cnn", "wide")
RUNNERS = ("harness", "harness_by_size", "bare", "bare_input_fn", "keras",
           "allreduce", "estimator215")


def _serve_ps():
  """A parameter server: serves until the parent kills it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf_config = json.loads(os.environ["TF_CONFIG"])
  tf.distribute.Server(
      tf.train.ClusterSpec(tf_config["cluster"]), job_name="ps",
      task_index=int(tf_config["task"]["index"]), start=True).join()


def _strategy(tf, args):
  """The v1 strategy the harness (or estimator215) runner gives RunConfig."""
  v1 = tf.compat.v1.distribute.experimental
  if args.strategy == "ps":
    return v1.ParameterServerStrategy()
  if args.harness_defaults or args.runner == "estimator215":
    return v1.MultiWorkerMirroredStrategy()
  options = scaling_runners.communication_options(tf, args)
  strategy = v1.MultiWorkerMirroredStrategy(
      communication=options.implementation)
  strategy.extended._communication_options = options  # pylint: disable=protected-access
  return strategy


def _train(args, clock, window, estimator215=False):
  """Runs Estimator.train in this TF_CONFIG task; returns replicas in sync
  (ps: trainers). `window` gets the step counts at the timed window's
  start and end. With `estimator215`, tf.estimator 2.15's Estimator on
  TensorFlow 2.15 (this process runs in the venv of
  `bench.tf215.tf215_env`), else harness's."""
  if estimator215:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if not tf.__version__.startswith("2.15"):
      raise RuntimeError(
          f"--runner=estimator215 runs on TensorFlow 2.15 (the python of "
          f"`python -m bench.tf215.tf215_env`), not {tf.__version__}.")
    api = tf.estimator
  else:
    from harness._tf import tf  # pylint: disable=g-import-not-at-top
    import harness as api  # pylint: disable=g-import-not-at-top
  images, labels = scaling_runners.model_data(args.model)

  def input_fn(input_context=None):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": images}, labels))
    if input_context is not None:
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
    return dataset.repeat().batch(args.batch_size)  # Per worker.

  own_steps = []  # ps under auto: this trainer's own step counter.

  def model_fn(features, labels, mode):
    loss, train_op = scaling_runners.train_op(tf, args.model, features["x"],
                                              labels)
    if args.strategy == "ps" and not args.steps_per_loop:
      # The global step counts every trainer's steps; this counts ours
      # (a local variable: each trainer initialises its own).
      own_steps.append(tf.compat.v1.get_local_variable(
          f"bench_steps_{os.environ.get('HARNESS_TASK', '?')}".replace(
              "/", "_"), [], tf.int64, trainable=False,
          initializer=tf.compat.v1.zeros_initializer()))
      train_op = tf.group(train_op, own_steps[-1].assign_add(1))
    return api.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

  class ClockHook(tf.compat.v1.train.SessionRunHook):
    """Counts each run's steps: K, or under auto the change of the global
    step (ps: of this trainer's counter), read after the run: one small
    extra run per loop. Records the steps inside the timed window."""

    def begin(self):
      self._step = (own_steps[-1] if own_steps else
                    tf.compat.v1.train.get_global_step())
      self._last = 0

    def after_run(self, run_context, run_values):
      if args.steps_per_loop:
        done = args.steps_per_loop
      else:
        step = int(run_context.session.run(self._step))
        done, self._last = step - self._last, step
      started = clock.timed_start
      clock.step_done(done)
      if started is None and clock.timed_start is not None:
        window[0] = clock.steps
      if clock.timed_end is not None and window[1] is None:
        window[1] = clock.steps
      if clock.steps >= clock.total_steps:  # ps: max_steps is global.
        run_context.request_stop()

  strategy = _strategy(tf, args)
  # No graph.pbtxt / graph events: the data is a 25 MB graph constant and
  # writing it costs seconds on one core before step 1 (not timed here).
  common = dict(model_dir=args.model_dir, log_step_count_steps=100,
                save_summary_steps=100, train_distribute=strategy,
                checkpoint_save_graph_def=False, tf_random_seed=configs.SEED)
  if estimator215:  # 2.15's own defaults: one step a run, its session config.
    config = api.RunConfig(**common)
  else:
    config = api.RunConfig(
        **common, steps_per_loop=("auto" if args.steps_per_loop == 0
                                  else args.steps_per_loop),
        ps_placement=args.ps_placement,
        session_config=(None if args.harness_defaults else
                        scaling_runners.session_config(tf, args)))
  estimator = api.Estimator(model_fn=model_fn, config=config)
  # Parameter servers: trainers share the global step, so each stops by
  # its own clock (ClockHook) before the bound.
  max_steps = clock.total_steps * (1 if args.strategy == "collective"
                                   else 100)
  if estimator215:
    # 2.15 trains a cluster only through train_and_evaluate (its
    # distribute coordinator; Estimator.train takes a standalone client
    # only). With no evaluator task in the cluster nothing evaluates.
    api.train_and_evaluate(
        estimator, api.TrainSpec(input_fn, max_steps=max_steps,
                                 hooks=[ClockHook()]),
        api.EvalSpec(input_fn, steps=1))
  else:
    estimator.train(input_fn, hooks=[ClockHook()], max_steps=max_steps)
  if config.is_chief and args.strategy != "ps":
    # Each run counted steps_per_loop steps: true only if none ended early.
    final_step = int(estimator.get_variable_value("global_step"))
    if final_step != clock.steps:
      raise RuntimeError(
          f"the clock counted {clock.steps} steps but training ended at "
          f"global step {final_step}: some session.run made fewer than "
          f"steps_per_loop={args.steps_per_loop} steps.")
  if args.strategy == "ps":
    if estimator215:  # 2.15 gives each task a config of one worker replica.
      cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
      return len(cluster.get("chief", ())) + len(cluster.get("worker", ()))
    return config.num_worker_replicas
  return strategy.num_replicas_in_sync


def _parse(argv):
  parser = argparse.ArgumentParser(prog="python -m bench.perf.scaling_worker")
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--model", choices=MODELS, default="mlp")
  parser.add_argument("--runner", choices=RUNNERS, default="harness")
  parser.add_argument("--strategy", choices=("collective", "ps"),
                      default="collective")
  parser.add_argument("--harness_defaults", action="store_true",
                      help="harness runner: the strategy and session "
                      "config harness.main builds (no options below)")
  parser.add_argument("--implementation", default="auto",
                      choices=("auto", "ring"))
  parser.add_argument("--bytes_per_pack", type=int, default=0,
                      help="CommunicationOptions.bytes_per_pack (0: none)")
  parser.add_argument("--scoped_allocator", default="default",
                      choices=("default", "on", "off"),
                      help="gradient packing (grappler's ScopedAllocator): "
                      "default is TF's for bare (on) and harness's choice "
                      "for harness without --harness_defaults")
  parser.add_argument("--ps_placement", default="round_robin",
                      choices=("round_robin", "by_size"),
                      help="harness runner: RunConfig.ps_placement")
  parser.add_argument("--trace", action="store_true",
                      help="bare runner: after the timed steps, print a "
                      "traced step's summary (SCALING_TRACE line)")
  parser.add_argument("--threads", type=int, default=0,
                      help="intra- and inter-op threads (0: TF's choice)")
  parser.add_argument("--allreduce_bytes", type=int, default=0,
                      help="allreduce runner: bytes a step all-reduces "
                      "(0: the model's gradient bytes)")
  parser.add_argument("--batch_size", type=int, default=256,
                      help="examples per worker per step")
  parser.add_argument("--warmup_steps", type=int, required=True)
  parser.add_argument("--timed_steps", type=int, required=True)
  parser.add_argument("--steps_per_loop", type=int, default=1,
                      help="harness: K; 0 is auto (harness.main's default)")
  parser.add_argument("--t0", type=float, default=None,
                      help="parent's time.time() before starting us")
  return parser.parse_args(argv)


def main(argv):
  """Trains as one worker; prints its SCALING_RESULT line; returns 0."""
  args = _parse(argv)
  t0 = args.t0 if args.t0 is not None else time.time()
  if json.loads(os.environ.get("TF_CONFIG", "{}")).get(
      "task", {}).get("type") == "ps":
    _serve_ps()
    return 0
  clock = configs.Clock(t0, args.warmup_steps, args.timed_steps,
                        max(1, args.steps_per_loop))
  window = [None, None]
  result = {"task": os.environ.get("HARNESS_TASK", "?"),
            "cpus": sorted(os.sched_getaffinity(0)),
            "batch_size": args.batch_size,
            "steps_per_loop": args.steps_per_loop,
            "timed_steps": args.timed_steps}
  try:
    if args.runner.startswith("harness") or args.runner == "estimator215":
      if args.runner == "harness_by_size":
        args.ps_placement = "by_size"
      result["replicas"] = _train(args, clock, window,
                                  estimator215=args.runner == "estimator215")
    else:
      result["replicas"] = scaling_runners.RUNNERS[args.runner](args, clock)
  except Exception as e:  # pylint: disable=broad-except
    result["error"] = f"{type(e).__name__}: {str(e)[:500]}"
  else:
    if clock.timed_end is None:
      result["error"] = (f"ran {clock.steps} steps, expected "
                         f"{clock.total_steps}")
    else:
      result["seconds"] = clock.timed_end - clock.timed_start
      if None not in window:  # Runs of auto's K need not end on the bounds.
        result["timed_steps"] = window[1] - window[0]
      result["first_step_secs"] = clock.first_step_end - t0
  result["peak_rss_mib"] = (
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
  print(RESULT_PREFIX + json.dumps(result), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
