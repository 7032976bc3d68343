"""Canned DNNClassifier vs the custom-model_fn MLP of the same size.

    python -m bench.perf.canned             # 3 rounds, writes bench/RESULTS.md
    python -m bench.perf.canned --rounds=5 --out=/tmp/c.md

Both train 784 -> 256 relu -> 256 relu -> 10 with Adam(1e-3) on the
in-memory data of `bench.configs` (mlp, batch 32) through
`harness.Estimator.train` with the same RunConfig:

* ``custom``: `bench.configs`' harness runner (a model_fn in
  `tf.compat.v1.layers` + `tf.compat.v1.train.AdamOptimizer`);
* ``canned``: `harness.DNNClassifier(hidden_units=[256, 256],
  feature_columns=[numeric_column("x", shape=[784])], n_classes=10,
  optimizer="Adam")` (2.15's default Adam lr is 1e-3): feature-column input
  layer, MultiClassHead, Keras OptimizerV2 `get_updates`.

Each (variant, round) is its own process, interleaved A B A B ...; the
table shows medians and the per-round canned/custom ratio. The issue's
target: canned no more than 10 % slower (ratio of examples/s >= 0.90).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench import configs
from bench import report

BEGIN = "<!-- bench.perf.canned: generated section begins -->"
END = "<!-- bench.perf.canned: generated section ends -->"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_VARIANTS = ("custom", "canned")
_BATCH_SIZE = 32
_TARGET_RATIO = 0.90


class _CpuClock(configs.Clock):
  """`configs.Clock` that also reads this process's CPU time (all threads)
  at the start and end of the timed window: on a shared, loaded machine
  wall time measures the neighbours, CPU seconds per step the work."""

  cpu_start = None
  cpu_end = None

  def step_done(self, count=1):
    had_start, had_end = self.timed_start, self.timed_end
    super().step_done(count)
    if had_start is None and self.timed_start is not None:
      self.cpu_start = time.process_time()
    if had_end is None and self.timed_end is not None:
      self.cpu_end = time.process_time()


def _run_canned(args, clock):
  """DNNClassifier of the bench MLP's size, timed like configs' harness."""
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  import harness  # pylint: disable=g-import-not-at-top
  images, labels = configs.data("mlp")

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(
        ({"x": images}, labels)).repeat().batch(args.batch_size)

  class ClockHook(tf.compat.v1.train.SessionRunHook):

    def after_run(self, run_context, run_values):
      clock.step_done()

  model_dir = tempfile.mkdtemp(prefix="bench_canned_")
  config = harness.RunConfig(model_dir=model_dir, log_step_count_steps=100,
                             save_summary_steps=100)
  estimator = harness.DNNClassifier(
      hidden_units=[256, 256], n_classes=10, optimizer="Adam",
      feature_columns=[tf.feature_column.numeric_column("x", shape=[784])],
      config=config)
  try:
    estimator.train(input_fn, hooks=[ClockHook()],
                    max_steps=clock.total_steps)
  finally:
    shutil.rmtree(model_dir, ignore_errors=True)


def child(argv):
  """One timed run of one variant; prints a BENCH_RESULT line."""
  parser = argparse.ArgumentParser(prog="python -m bench.perf.canned --child")
  parser.add_argument("--child", choices=_VARIANTS, required=True)
  parser.add_argument("--warmup_steps", type=int, required=True)
  parser.add_argument("--timed_steps", type=int, required=True)
  args = parser.parse_args(argv)
  args.batch_size = _BATCH_SIZE
  args.model = "mlp"
  args.steps_per_loop = 1
  clock = _CpuClock(time.time(), args.warmup_steps, args.timed_steps)
  if args.child == "custom":
    configs.RUNNERS["harness"](args, clock)
  else:
    _run_canned(args, clock)
  seconds = clock.timed_end - clock.timed_start
  print("BENCH_RESULT " + json.dumps({
      "variant": args.child,
      "examples_per_sec": args.timed_steps * _BATCH_SIZE / seconds,
      "step_ms": 1000.0 * seconds / args.timed_steps,
      "cpu_ms_per_step": 1000.0 * (clock.cpu_end - clock.cpu_start) /
                         args.timed_steps}), flush=True)
  return 0


def measure(rounds, warmup_steps, timed_steps):
  """{variant: [result dict per round]}, variants interleaved per round."""
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1", PYTHONPATH=_ROOT)
  results = {v: [] for v in _VARIANTS}
  for _ in range(rounds):
    for variant in _VARIANTS:
      command = [sys.executable, "-m", "bench.perf.canned",
                 f"--child={variant}",
                 f"--warmup_steps={warmup_steps}",
                 f"--timed_steps={timed_steps}"]
      done = subprocess.run(command, env=env, cwd=_ROOT, capture_output=True,
                            text=True, timeout=600, check=False)
      lines = [l for l in done.stdout.splitlines()
               if l.startswith("BENCH_RESULT ")]
      if done.returncode != 0 or not lines:
        raise RuntimeError(f"{command} exited {done.returncode}:\n"
                           f"{(done.stdout + done.stderr)[-3000:]}")
      result = json.loads(lines[-1][len("BENCH_RESULT "):])
      results[variant].append(result)
  return results


def render(results, *, command, elapsed_secs, uptime_before, uptime_after):
  def column(variant, key):
    return [r[key] for r in results[variant]]

  speed = [c / m for c, m in zip(column("canned", "examples_per_sec"),
                                 column("custom", "examples_per_sec"))]
  # CPU time per step: custom / canned, so that > 1 means canned is cheaper.
  cpu = [m / c for c, m in zip(column("canned", "cpu_ms_per_step"),
                               column("custom", "cpu_ms_per_step"))]
  lines = [
      BEGIN,
      "## Canned DNNClassifier vs custom model_fn (mlp 784-256-256-10, b32)",
      "",
      f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
      f"`{command}`, {elapsed_secs:.0f} s; `uptime` before: "
      f"{uptime_before}; after: {uptime_after}.",
      "",
      report.machine(),
      "",
      "Each (variant, round) is its own process, interleaved; see "
      "bench/perf/canned.py's docstring. CPU ms/step is the process's CPU time "
      "(all threads) over the timed steps: on a loaded machine it measures "
      "the work, wall-clock examples/s also the neighbours.",
      "",
      "| variant | examples/s (median) | each round | CPU ms/step (median) "
      "| each round |",
      "|---|---|---|---|---|",
  ]
  for variant in _VARIANTS:
    eps = column(variant, "examples_per_sec")
    cpu_ms = column(variant, "cpu_ms_per_step")
    lines.append(
        f"| {variant} | {statistics.median(eps):.0f} | "
        f"{', '.join(f'{v:.0f}' for v in eps)} | "
        f"{statistics.median(cpu_ms):.3f} | "
        f"{', '.join(f'{v:.3f}' for v in cpu_ms)} |")
  for label, ratios in (("examples/s, canned / custom", speed),
                        ("CPU per step, custom / canned", cpu)):
    ratio = statistics.median(ratios)
    verdict = "meets" if ratio >= _TARGET_RATIO else "misses"
    lines += ["", f"{label}, per round: "
              f"{', '.join(f'{r:.3f}' for r in ratios)}; median "
              f"**{ratio:.3f}** ({verdict} the target >= "
              f"{_TARGET_RATIO:.2f}: canned at most 10 % slower)."]
  lines += ["", END]
  return "\n".join(lines)


def main(argv=None):
  argv = sys.argv[1:] if argv is None else argv
  if any(a.startswith("--child") for a in argv):
    return child(argv)
  parser = argparse.ArgumentParser(prog="python -m bench.perf.canned",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--warmup_steps", type=int, default=200)
  parser.add_argument("--timed_steps", type=int, default=2000)
  parser.add_argument("--out", default=os.path.join(_ROOT, "bench",
                                                    "RESULTS.md"))
  args = parser.parse_args(argv)
  return report.measure_and_write(
      "python -m bench.perf.canned", argv,
      lambda: measure(args.rounds, args.warmup_steps,
                      args.timed_steps), render,
      out=args.out, begin=BEGIN, end=END)


if __name__ == "__main__":
  sys.exit(main())
