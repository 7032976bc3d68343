"""Runs the training-throughput benchmark and writes bench/RESULTS.md.

    python -m bench.perf.run                 # 60 processes, ~17 min at load 2-5
    python -m bench.perf.run --quick         # MLP b32 only, ~5 min at load 4-5
    python -m bench.perf.run --out /tmp/r.md --rounds 5

Each configuration runs in its own process (`python -m bench.configs`, with
a timeout); the configurations are interleaved (A B C A B C ...) for
`--rounds` rounds and each figure is the median over rounds. Every process
runs warm-up steps before its timed steps; one throw-away process imports
TensorFlow and both Kerases first so that the file cache is warm. The
1-minute load average is recorded before each process: other jobs on a
shared machine show up there.
"""

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time

from bench import report

__all__ = ["Config", "configs_for", "run_one", "main"]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_CHILD_TIMEOUT_SECS = 240
_RESULT_PREFIX = "BENCH_RESULT "


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
  """One benchmark process: who trains which model at which batch size."""
  runner: str          # harness | bare | keras3 | tf_keras
  model: str           # mlp | cnn
  batch_size: int      # global
  warmup_steps: int
  timed_steps: int
  steps_per_loop: int = 1

  @property
  def case(self):
    return f"{self.model} b{self.batch_size}"

  @property
  def label(self):
    suffix = f" spl={self.steps_per_loop}" if self.steps_per_loop != 1 else ""
    return f"{self.runner}{suffix}"


# (model, batch) -> (warm-up steps, timed steps), default and --quick. Both
# counts are multiples of every steps_per_loop run at that case (bench.configs
# asserts it: the timed window starts and ends on a session.run boundary).
_STEPS = {
    ("mlp", 32): ((100, 1500), (100, 1000)),
    ("mlp", 256): ((100, 300), (100, 300)),
    ("cnn", 256): ((10, 30), (10, 20)),
}
# Run order within a round: bare, harness and the harness steps_per_loop
# runs back to back (their ratios are the targets), then the Kerases.
_RUNNERS = ("bare", "harness", "keras3", "tf_keras")
# (model, batch) -> the harness steps_per_loop values > 1 run there.
_STEPS_PER_LOOP = {("mlp", 32): (10, 100), ("mlp", 256): (100,),
                   ("cnn", 256): (10,)}
_QUICK_STEPS_PER_LOOP = {("mlp", 32): (100,)}


def configs_for(quick):
  """The configurations of a default or a --quick run, in run order."""
  cases = [("mlp", 32)] if quick else list(_STEPS)
  runners = ("bare", "harness", "keras3") if quick else _RUNNERS
  loops = _QUICK_STEPS_PER_LOOP if quick else _STEPS_PER_LOOP
  configs = []
  for model, batch in cases:
    warmup, timed = _STEPS[(model, batch)][1 if quick else 0]
    for runner in runners:
      configs.append(Config(runner=runner, model=model, batch_size=batch,
                            warmup_steps=warmup, timed_steps=timed))
      if runner != "harness":
        continue
      for steps_per_loop in loops.get((model, batch), ()):
        assert warmup % steps_per_loop == 0 and timed % steps_per_loop == 0, (
            f"{model} b{batch}: {warmup}+{timed} steps are not multiples of "
            f"steps_per_loop={steps_per_loop}; fix _STEPS.")
        configs.append(Config(runner="harness", model=model,
                              batch_size=batch, warmup_steps=warmup,
                              timed_steps=timed,
                              steps_per_loop=steps_per_loop))
  return configs


def _child_env(runner):
  env = dict(os.environ)
  env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  if runner == "keras3":
    env.pop("TF_USE_LEGACY_KERAS", None)  # `import keras` must be Keras 3.
  else:
    env["TF_USE_LEGACY_KERAS"] = "1"
  return env


def run_one(config, timeout_secs=_CHILD_TIMEOUT_SECS):
  """Runs `config` in a new process; returns its result dict.

  The dict has "error" set when the child failed, timed out, or reported
  an error itself (e.g. NotSupportedError); "load1" is the 1-minute load
  average just before the start.
  """
  load1 = os.getloadavg()[0]
  argv = [sys.executable, "-m", "bench.configs", f"--runner={config.runner}",
          f"--model={config.model}", f"--batch_size={config.batch_size}",
          f"--warmup_steps={config.warmup_steps}",
          f"--timed_steps={config.timed_steps}",
          f"--steps_per_loop={config.steps_per_loop}", f"--t0={time.time()}"]
  try:
    proc = subprocess.run(argv, cwd=_ROOT, env=_child_env(config.runner),
                          capture_output=True, text=True,
                          timeout=timeout_secs, check=False)
  except subprocess.TimeoutExpired:
    return {"error": f"timed out after {timeout_secs} s", "load1": load1}
  for line in proc.stdout.splitlines():
    if line.startswith(_RESULT_PREFIX):
      result = json.loads(line[len(_RESULT_PREFIX):])
      result["load1"] = load1
      return result
  tail = (proc.stderr or proc.stdout)[-600:]
  return {"error": f"exit {proc.returncode}: {tail}", "load1": load1}


def _known_unsupported(results):
  return any("NotSupportedError" in r.get("error", "") for r in results)


def _warm_file_cache():
  code = "import tensorflow, tf_keras"
  subprocess.run([sys.executable, "-c", code], cwd=_ROOT,
                 env=_child_env("tf_keras"), capture_output=True,
                 timeout=_CHILD_TIMEOUT_SECS, check=False)
  subprocess.run([sys.executable, "-c", "import keras"], cwd=_ROOT,
                 env=_child_env("keras3"), capture_output=True,
                 timeout=_CHILD_TIMEOUT_SECS, check=False)


def summarize(runs):
  """Per-config medians of a list of result dicts (one config's rounds)."""
  ok = [r for r in runs if "error" not in r]
  summary = {"n": len(ok), "errors": [r["error"] for r in runs
                                      if "error" in r],
             "load1": [r["load1"] for r in runs]}
  for key in ("examples_per_sec", "step_ms", "first_step_secs",
              "peak_rss_mib"):
    values = [r[key] for r in ok]
    summary[key] = statistics.median(values) if values else None
    summary[key + "_range"] = (min(values), max(values)) if values else None
  return summary


def main(argv=None):
  """Runs every configuration, prints progress, writes `--out`; returns 0."""
  parser = argparse.ArgumentParser(prog="python -m bench.perf.run",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true",
                      help="MLP b32 only: harness, bare, keras3 and "
                      "harness spl=100.")
  parser.add_argument("--rounds", type=int, default=3,
                      help="interleaved rounds; figures are medians (>= 3).")
  parser.add_argument("--out", default=os.path.join(_ROOT, "bench",
                                                    "RESULTS.md"))
  args = parser.parse_args(argv)
  configs = configs_for(args.quick)
  start = time.time()
  uptime_before = report.uptime()
  _warm_file_cache()
  runs = {c: [] for c in configs}
  for round_index in range(args.rounds):
    for config in configs:
      if _known_unsupported(runs[config]):
        continue  # Deterministic; one process showed it.
      result = run_one(config)
      runs[config].append(result)
      shown = (f"{result['examples_per_sec']:.0f} ex/s"
               if "error" not in result else result["error"][:120])
      print(f"round {round_index + 1}/{args.rounds} | {config.case:9s} | "
            f"{config.label:16s} | {shown} | load1 {result['load1']:.2f}",
            flush=True)
  summaries = {c: summarize(r) for c, r in runs.items()}
  command = "python -m bench.perf.run" + "".join(
      f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
  text = report.render(
      configs=configs, summaries=summaries, runs=runs, command=command,
      rounds=args.rounds, elapsed_secs=time.time() - start,
      uptime_before=uptime_before, uptime_after=report.uptime())
  report.write_section(args.out, text)
  print(f"wrote {args.out} ({time.time() - start:.0f} s)")
  return 0


if __name__ == "__main__":
  sys.exit(main())
