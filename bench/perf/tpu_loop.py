"""TPUEstimator's iterations_per_loop off-TPU: training steps per session.run.

    python -m bench.perf.tpu_loop                  # 3 rounds, writes RESULTS.md
    python -m bench.perf.tpu_loop --rounds=1 --steps=500 --out=/tmp/t.md

Trains the model of tests/legacy_programs/legacy_tpu_classifier.py (BERT
run_classifier style: TPUEstimatorSpec, scaffold_fn, params["batch_size"],
use_tpu=False) through `tf.compat.v1.estimator.tpu.TPUEstimator` with
`TPUConfig(iterations_per_loop=50)` and, for comparison, `=1`, in one
process. A hook counts the `session.run` calls of `train()` and reads the
global step before each, so the table shows how many steps each run made.
RunConfig: save_checkpoints_steps=500 (loops end there), otherwise defaults.
"""

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

from bench import report

BEGIN = "<!-- bench.perf.tpu_loop: generated section begins -->"
END = "<!-- bench.perf.tpu_loop: generated section ends -->"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_PROGRAM = os.path.join(_ROOT, "tests", "legacy_programs",
                        "legacy_tpu_classifier.py")
_LOOPS = (50, 1)


def _load_program():
  import harness.compat  # pylint: disable=g-import-not-at-top,unused-import
  spec = importlib.util.spec_from_file_location("legacy_tpu_classifier",
                                                _PROGRAM)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _counter_hook(tf):
  class RunCounter(tf.compat.v1.train.SessionRunHook):
    """Records the global step before every session.run of train()."""

    def begin(self):
      self.steps_before = []
      self.ends = []
      self._step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
      return tf.compat.v1.train.SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
      self.steps_before.append(int(run_values.results))
      self.ends.append(time.perf_counter())

  return RunCounter()


def measure(rounds, steps):
  """{iterations_per_loop: [dict per round]}."""
  from absl import logging  # pylint: disable=g-import-not-at-top
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)
  program = _load_program()
  ids, labels = program.make_examples(1024, seed=0)
  results = {k: [] for k in _LOOPS}
  for _ in range(rounds):
    for loop in _LOOPS:
      with tempfile.TemporaryDirectory(prefix="bench_tpu_") as model_dir:
        config = tf.compat.v1.estimator.tpu.RunConfig(
            model_dir=model_dir, save_checkpoints_steps=500, tf_random_seed=7,
            tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(
                iterations_per_loop=loop))
        estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
            model_fn=program.model_fn_builder(None, 3e-3, False),
            config=config, use_tpu=False, train_batch_size=32)
        hook = _counter_hook(tf)
        start = time.perf_counter()
        estimator.train(program.input_fn_builder(ids, labels, True, True),
                        max_steps=steps, hooks=[hook])
        secs = time.perf_counter() - start
        final = int(estimator.get_variable_value("global_step"))
        bounds = hook.steps_before + [final]
        per_run = [b - a for a, b in zip(bounds, bounds[1:])]
        # After the first run (compilation, warm-up): steps / seconds.
        steady = (final - bounds[1]) / (hook.ends[-1] - hook.ends[0])
        results[loop].append({
            "steady_steps_per_sec": steady,
            "runs": len(per_run), "final_step": final,
            "max_per_run": max(per_run), "per_run": per_run,
            "secs": secs, "steps_per_sec": final / secs})
  return results


def render(results, *, command, elapsed_secs, uptime_before, uptime_after):
  lines = [
      BEGIN,
      "## TPUEstimator iterations_per_loop on CPU (bench.perf.tpu_loop)",
      "",
      f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `{command}`"
      f", {elapsed_secs:.0f} s in all.",
      "",
      report.machine(),
      f"- `uptime` before: {uptime_before}; after: {uptime_after}",
      "",
      "BERT run_classifier-style model (tests/legacy_programs/"
      "legacy_tpu_classifier.py), `TPUEstimator(use_tpu=False, "
      "train_batch_size=32)`, `save_checkpoints_steps=500`. `session.run` "
      "calls counted by a hook given to `train()`; steps per run from the "
      "global step read before each run. Wall time of `train()` (graph "
      "build, session start and checkpoints included), and steps/s from the "
      "end of the first run to the end of the last, medians over rounds. "
      "The figures show the loop at work, not a speed target: the machine "
      "is shared (see the load), and the model is tiny.",
      "",
      "| iterations_per_loop | session.run calls | global steps | steps per "
      "run (each run, first round) | train() s (median) | steps/s after "
      "the first run (median) |",
      "|---|---|---|---|---|---|",
  ]
  for loop, rounds in results.items():
    first = rounds[0]
    shown = first["per_run"]
    if len(shown) > 12:
      shown_text = (", ".join(map(str, shown[:6])) + f", ... ({len(shown)} "
                    "runs)")
    else:
      shown_text = ", ".join(map(str, shown))
    lines.append(
        f"| {loop} | {first['runs']} | {first['final_step']} | {shown_text} "
        f"| {statistics.median(r['secs'] for r in rounds):.2f} | "
        f"{statistics.median(r['steady_steps_per_sec'] for r in rounds):.0f}"
        " |")
  lines += ["", END]
  return "\n".join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.perf.tpu_loop",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--steps", type=int, default=1000)
  parser.add_argument("--out", default=os.path.join(_ROOT, "bench",
                                                    "RESULTS.md"))
  argv = sys.argv[1:] if argv is None else argv
  args = parser.parse_args(argv)
  return report.measure_and_write(
      "python -m bench.perf.tpu_loop", argv,
      lambda: measure(args.rounds, args.steps), render,
      out=args.out, begin=BEGIN, end=END)


if __name__ == "__main__":
  sys.exit(main())
