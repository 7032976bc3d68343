"""One run of the tf.estimator 2.15 comparison, a child of `bench.tf215.vs215`.

    python -m bench.tf215.vs215_worker --runner=estimator215 --model=mlp \\
        --batch_size=32 --warmup_steps=300 --timed_steps=3000
    python -m bench.tf215.vs215_worker --runner=harness --model=census_csv \\
        --batch_size=256 --warmup_steps=200 --timed_steps=2000 \\
        --input_pipeline=as_written

Runs under either TensorFlow: `estimator215` and `bare` (in the side venv
made by `bench.tf215.tf215_env`) import only TensorFlow 2.15 and
tensorflow_estimator; `harness` and `bare` (in the project's venv) import
TensorFlow 2.21. Prints one `BENCH_RESULT {json}` line: examples/s over the
timed steps. The rate comes from the global step each run starts at and
the clock at the end of each run, so it is the same measure for one step a
run (2.15, harness K=1, bare) and for K steps a run (harness auto).

`--model` is a network of `bench.configs` (mlp, cnn: a model_fn over
in-memory data) or a program of `bench.tf215.programs` (census_csv, tfrecord,
numpy_dnn: its own input_fn and estimator, written once for both TFs). For a
program, `bare` runs under TF 2.21 only: the graph harness builds (the
input_fn, then the estimator's `model_fn` in TRAIN mode) driven by a
`session.run(train_op)` loop with no hooks and no MonitoredSession.
"""

import argparse
import json
import shutil
import sys
import tempfile
import time

from bench import configs
from bench.tf215 import programs

__all__ = ["main"]


class _Record:
  """(global step a run started at, clock at the run's end) per run."""

  def __init__(self):
    self.starts, self.ends = [], []

  def rate(self, warmup_steps, batch_size):
    """Examples/s from the first run starting at >= warmup to the last."""
    first = next(i for i, s in enumerate(self.starts) if s >= warmup_steps)
    last = len(self.starts) - 1
    steps = self.starts[last] - self.starts[first]
    seconds = self.ends[last - 1] - self.ends[first - 1]
    return steps * batch_size / seconds, steps


def _input_fn(tf, args):
  images, labels = configs.data(args.model)

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(
        ({"x": images}, labels)).repeat().batch(args.batch_size)
  return input_fn


def _hook(tf, record):
  class RecordHook(tf.compat.v1.train.SessionRunHook):
    """Fetches the global step with each run (as TF's own hooks do)."""

    def begin(self):
      self._step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
      return tf.compat.v1.train.SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
      record.ends.append(time.perf_counter())
      record.starts.append(int(run_values.results))
  return RecordHook()


def _estimator_and_input_fn(tf, args, api, config, numpy_input_fn):
  """(estimator, input_fn) of `args.model` in namespace `api`."""
  if args.model in programs.PROGRAMS:
    return programs.build(args.model, tf, api, config, args.batch_size,
                          numpy_input_fn)

  def model_fn(features, labels, mode):
    loss, train_op = configs.v1_train_op(tf, args.model, features["x"],
                                         labels)
    return api.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

  return (api.Estimator(model_fn=model_fn, config=config),
          _input_fn(tf, args))


def _train(tf, args, record, estimator, input_fn):
  estimator.train(input_fn, hooks=[_hook(tf, record)],
                  max_steps=args.warmup_steps + args.timed_steps)
  record.starts.append(int(estimator.get_variable_value("global_step")))


# RunConfig as a legacy job spells it: steps/s and summaries every 100 steps,
# a checkpoint every 600 s (the default), a fixed graph seed.
_CONFIG = dict(log_step_count_steps=100, save_summary_steps=100,
               tf_random_seed=configs.SEED)


def _run_estimator215(args, record, model_dir):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # Fails here, clearly, without tensorflow_estimator (tf.estimator's home).
  import tensorflow_estimator  # pylint: disable=g-import-not-at-top
  del tensorflow_estimator
  if not tf.__version__.startswith("2.15"):
    raise RuntimeError(f"estimator215 needs TF 2.15, got {tf.__version__}")
  if args.input_pipeline:
    raise ValueError("--input_pipeline applies to --runner=harness only.")
  config = tf.estimator.RunConfig(model_dir=model_dir, **_CONFIG)
  estimator, input_fn = _estimator_and_input_fn(
      tf, args, tf.estimator, config,
      tf.compat.v1.estimator.inputs.numpy_input_fn)
  _train(tf, args, record, estimator, input_fn)


def _harness_config(harness, args, model_dir):
  steps_per_loop = ("auto" if args.steps_per_loop == "auto"
                    else int(args.steps_per_loop))
  # `input_pipeline` only when asked: the default runners run on a harness
  # with or without that field.
  extra = ({"input_pipeline": args.input_pipeline} if args.input_pipeline
           else {})
  if args.xla:
    extra["xla"] = True
  return harness.RunConfig(model_dir=model_dir, steps_per_loop=steps_per_loop,
                           **_CONFIG, **extra)


def _run_harness(args, record, model_dir):
  import harness  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  estimator, input_fn = _estimator_and_input_fn(
      tf, args, harness, _harness_config(harness, args, model_dir),
      harness.inputs.numpy_input_fn)
  _train(tf, args, record, estimator, input_fn)


def _session_loop(tf, args, record, train_op, init_ops=()):
  """Initializes, then `session.run(train_op)` warm-up + timed times."""
  step = tf.compat.v1.train.get_global_step()
  with tf.compat.v1.Session() as session:
    session.run([tf.compat.v1.global_variables_initializer(),
                 tf.compat.v1.local_variables_initializer(),
                 tf.compat.v1.tables_initializer()])
    session.run(list(init_ops))
    total = args.warmup_steps + args.timed_steps
    for i in range(total):
      session.run(train_op)
      record.starts.append(i)
      record.ends.append(time.perf_counter())
    record.starts.append(int(session.run(step)))
    # Shift: starts[i] is the step run i started at.
    record.ends.append(time.perf_counter())


def _run_bare_program(args, record, model_dir):
  """The graph harness builds for a program, in a bare session.run loop."""
  import harness  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  estimator, input_fn = _estimator_and_input_fn(
      tf, args, harness, _harness_config(harness, args, model_dir),
      harness.inputs.numpy_input_fn)
  with tf.Graph().as_default():
    tf.compat.v1.random.set_random_seed(configs.SEED)
    tf.compat.v1.train.get_or_create_global_step()
    result, init_ops = input_fn(), []
    if isinstance(result, tf.data.Dataset):
      iterator = tf.compat.v1.data.make_initializable_iterator(result)
      init_ops.append(iterator.initializer)
      result = iterator.get_next()
    features, labels = result
    spec = estimator.model_fn(features, labels, "train", estimator.config)
    _session_loop(tf, args, record, spec.train_op, init_ops)


def _run_bare(args, record, model_dir):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if args.model in programs.PROGRAMS:
    if tf.__version__.startswith("2.15"):
      raise ValueError(f"--runner=bare --model={args.model} runs under TF "
                       "2.21 only (it builds harness's graph).")
    _run_bare_program(args, record, model_dir)
    return
  with tf.Graph().as_default():
    images, labels = configs.data(args.model)
    dataset = tf.data.Dataset.from_tensor_slices(
        (images, labels)).repeat().batch(args.batch_size)
    x, y = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    _, train_op = configs.v1_train_op(tf, args.model, x, y)
    _session_loop(tf, args, record, train_op)


def _write_profile(profiler, path):
  import io  # pylint: disable=g-import-not-at-top
  import pstats  # pylint: disable=g-import-not-at-top
  out = io.StringIO()
  stats = pstats.Stats(profiler, stream=out)
  stats.sort_stats("tottime").print_stats(15)
  text = out.getvalue()
  # Drop pstats' header lines before the table; keep paths short.
  text = text[text.find("   ncalls"):] if "   ncalls" in text else text
  with open(path, "w", encoding="utf-8") as f:
    f.write(text.replace(sys.prefix, "<venv>"))


_RUNNERS = {"estimator215": _run_estimator215, "harness": _run_harness,
            "bare": _run_bare}


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.tf215.vs215_worker")
  parser.add_argument("--runner", choices=sorted(_RUNNERS), required=True)
  parser.add_argument("--model", choices=configs.MODELS + programs.PROGRAMS,
                      required=True)
  parser.add_argument("--batch_size", type=int, required=True)
  parser.add_argument("--warmup_steps", type=int, required=True)
  parser.add_argument("--timed_steps", type=int, required=True)
  parser.add_argument("--steps_per_loop", default="1")
  parser.add_argument("--input_pipeline", default=None,
                      help="harness only: RunConfig(input_pipeline=...), "
                      "'tuned' or 'as_written'; unset: RunConfig's default")
  parser.add_argument("--xla", action="store_true",
                      help="harness only: RunConfig(xla=True)")
  parser.add_argument("--profile_out", default=None,
                      help="write cProfile's top functions here")
  args = parser.parse_args(argv)
  record = _Record()
  model_dir = tempfile.mkdtemp(prefix="bench_vs215_")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  result = {"runner": args.runner, "model": args.model,
            "batch_size": args.batch_size,
            "steps_per_loop": args.steps_per_loop,
            "input_pipeline": args.input_pipeline, "tf": tf.__version__}
  profiler = None
  if args.profile_out:
    import cProfile  # pylint: disable=g-import-not-at-top
    profiler = cProfile.Profile()
  try:
    if profiler:
      profiler.enable()
    _RUNNERS[args.runner](args, record, model_dir)
    if profiler:
      profiler.disable()
      _write_profile(profiler, args.profile_out)
    rate, steps = record.rate(args.warmup_steps, args.batch_size)
    result.update(examples_per_sec=rate, timed_steps=steps)
  except Exception as e:  # pylint: disable=broad-except
    result["error"] = f"{type(e).__name__}: {e}"
  finally:
    shutil.rmtree(model_dir, ignore_errors=True)
  print("BENCH_RESULT " + json.dumps(result), flush=True)
  return 0 if "error" not in result else 1


if __name__ == "__main__":
  sys.exit(main())
