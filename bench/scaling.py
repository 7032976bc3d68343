"""Multi-worker scaling: 1 worker on 1 core vs 2 workers on 2 cores.

    python -m bench.scaling                  # 3 rounds, K=1 and 10; ~6 min
    python -m bench.scaling --rounds=1 --steps_per_loop=1 --out=/tmp/s.md
    python -m bench.scaling --model=cnn --steps_per_loop=1 \
        --warmup_steps=10 --timed_steps=40        # compute-bound; ~5 min

A collective cluster (v1 `MultiWorkerMirroredStrategy`, `harness.Estimator
.train`) on 127.0.0.1, ports picked by binding port 0
(`harness.launch.build_tf_configs`). Setup (a): one worker under `taskset -c
0`; setup (b): two workers, under `taskset -c 0` and `taskset -c 1`. Every
worker is a child process (`python -m bench.scaling_worker`, its own
TF_CONFIG) training the bench MLP at batch 256 PER WORKER on in-memory data,
warm-up steps then timed steps. Global examples/s = workers x 256 x timed
steps / seconds of the slowest worker. The setups are interleaved, a b a b
..., for `--rounds` rounds (each `--steps_per_loop` value in turn); the
result is the median of the per-round ratios b/a (target: >= 1.8), written
into bench/RESULTS.md between this command's own markers.

This module imports no TensorFlow (only its children do).
"""

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench import report
from bench import scaling_worker
from harness import launch

__all__ = ["Setup", "run_setup", "render", "main", "BEGIN", "END"]

BEGIN = "<!-- bench.scaling: generated section begins -->"  # --model=mlp
END = "<!-- bench.scaling: generated section ends -->"
_MODEL_DESCRIPTIONS = {
    "mlp": "the bench MLP (784-256-256-10, Adam 1e-3)",
    "cnn": "the bench CNN (conv 32 3x3, pool, dense 64, dense 10; Adam 1e-3)",
}


def markers(model):
  """The (begin, end) markers of `model`'s section in RESULTS.md."""
  if model == "mlp":
    return BEGIN, END
  return (f"<!-- bench.scaling {model}: generated section begins -->",
          f"<!-- bench.scaling {model}: generated section ends -->")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TARGET = 1.8
_BATCH_PER_WORKER = 256


@dataclasses.dataclass(frozen=True, kw_only=True)
class Setup:
  """One cluster run: `workers` workers, worker i pinned to core i."""
  workers: int
  steps_per_loop: int = 1

  @property
  def label(self):
    cores = "1 core" if self.workers == 1 else f"{self.workers} cores"
    return (f"({'a' if self.workers == 1 else 'b'}) {self.workers} "
            f"worker{'s' if self.workers > 1 else ''} on {cores}, "
            f"K={self.steps_per_loop}")


def _worker_env(name, tf_config):
  env = dict(os.environ)
  env.update({"TF_CONFIG": json.dumps(tf_config), "HARNESS_TASK": name,
              "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
              "PYTHONUNBUFFERED": "1"})
  return env


def _stop(procs):
  """SIGKILLs the process group of each of our children still running."""
  for proc in procs:
    if proc.poll() is None:
      try:
        os.killpg(proc.pid, signal.SIGKILL)  # Its own session: only it.
      except ProcessLookupError:
        pass
  for proc in procs:
    try:
      proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
      pass


def _tail(path, chars=600):
  with open(path, encoding="utf-8", errors="replace") as f:
    return f.read()[-chars:]


def _parse_result(path):
  with open(path, encoding="utf-8", errors="replace") as f:
    for line in f:
      if line.startswith(scaling_worker.RESULT_PREFIX):
        return json.loads(line[len(scaling_worker.RESULT_PREFIX):])
  return None


def run_setup(setup, *, warmup_steps, timed_steps, timeout_secs,
              model="mlp"):
  """Runs one cluster to completion; returns its result dict.

  Args:
    setup: which Setup.
    warmup_steps, timed_steps: per worker (multiples of steps_per_loop).
    timeout_secs: the whole cluster is killed after this many seconds.

  Returns:
    {"examples_per_sec", "seconds" (slowest worker), "first_step_secs"
    (latest worker), "peak_rss_mib" (largest), "workers": [worker results],
    "load1"}, or with "error" set when a worker failed or timed out.
  """
  load1 = os.getloadavg()[0]
  tf_configs = launch.build_tf_configs(workers=setup.workers)
  tmp = tempfile.mkdtemp(prefix="bench_scaling_")
  procs, logs = [], []
  try:
    t0 = time.time()
    for core, (name, tf_config) in enumerate(tf_configs.items()):
      logs.append(os.path.join(tmp, f"{name.replace('/', '-')}.log"))
      argv = ["taskset", "-c", str(core), sys.executable, "-m",
              "bench.scaling_worker", f"--model_dir={tmp}/model",
              f"--model={model}",
              f"--batch_size={_BATCH_PER_WORKER}",
              f"--warmup_steps={warmup_steps}",
              f"--timed_steps={timed_steps}",
              f"--steps_per_loop={setup.steps_per_loop}", f"--t0={t0}"]
      with open(logs[-1], "w", encoding="utf-8") as log:
        procs.append(subprocess.Popen(
            argv, cwd=_ROOT, env=_worker_env(name, tf_config), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True))
    deadline = time.monotonic() + timeout_secs
    timed_out = False
    for proc in procs:
      try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        timed_out = True
        break
    _stop(procs)
    results = [_parse_result(path) for path in logs]
    failures = [
        f"worker/{i}: exit {p.returncode}: {_tail(path)}"
        for i, (p, path, r) in enumerate(zip(procs, logs, results))
        if r is None]
    failures += [f"worker/{i}: {r['error']}" for i, r in enumerate(results)
                 if r is not None and "error" in r]
  finally:
    _stop(procs)
    shutil.rmtree(tmp, ignore_errors=True)
  if timed_out:
    return {"error": f"timed out after {timeout_secs} s", "load1": load1,
            "workers": results}
  if failures:
    return {"error": failures[0], "load1": load1, "workers": results}
  replicas = {r["replicas"] for r in results}
  if replicas != {setup.workers}:
    return {"error": f"replicas in sync {replicas}, expected "
                     f"{setup.workers}", "load1": load1, "workers": results}
  seconds = max(r["seconds"] for r in results)
  return {
      "examples_per_sec": (setup.workers * _BATCH_PER_WORKER * timed_steps
                           / seconds),
      "seconds": seconds,
      "first_step_secs": max(r["first_step_secs"] for r in results),
      "peak_rss_mib": max(r["peak_rss_mib"] for r in results),
      "workers": results,
      "load1": load1,
  }


def _fmt(value, spec):
  return "n/a" if value is None else format(value, spec)


def _median(values):
  return statistics.median(values) if values else None


def _ratios(runs, steps_per_loop):
  """Per-round (b)/(a) global examples/s at this K."""
  one = runs[Setup(workers=1, steps_per_loop=steps_per_loop)]
  two = runs[Setup(workers=2, steps_per_loop=steps_per_loop)]
  return [b["examples_per_sec"] / a["examples_per_sec"]
          for a, b in zip(one, two) if "error" not in a and "error" not in b]


def render(*, setups, runs, command, rounds, warmup_steps, timed_steps,
           elapsed_secs, uptime_before, uptime_after, model="mlp"):
  """The generated section for RESULTS.md, markers included."""
  now = datetime.datetime.now(datetime.timezone.utc)
  summary = ["| setup | global examples/s (median; min-max) | per worker | "
             "first step (s, latest worker) | peak RSS (MiB, largest) |",
             "|---|---|---|---|---|"]
  for setup in setups:
    ok = [r["examples_per_sec"] for r in runs[setup] if "error" not in r]
    med = _median(ok)
    span = f" ({min(ok):.0f}-{max(ok):.0f})" if ok else ""
    first = _median([r["first_step_secs"] for r in runs[setup]
                     if "error" not in r])
    rss = _median([r["peak_rss_mib"] for r in runs[setup]
                   if "error" not in r])
    summary.append(
        f"| {setup.label} | {_fmt(med, '.0f')}{span} | "
        f"{_fmt(med and med / setup.workers, '.0f')} | {_fmt(first, '.1f')} "
        f"| {_fmt(rss, '.0f')} |")
  ratios = ["| steps_per_loop | (b)/(a), median of per-round ratios (each "
            "round) | target | status |", "|---|---|---|---|"]
  for k in dict.fromkeys(s.steps_per_loop for s in setups):
    each = _ratios(runs, k)
    med = _median(each)
    status = ("unknown" if med is None else
              "met" if med >= _TARGET else "NOT met")
    ratios.append(f"| {k} | {_fmt(med, '.2f')}x "
                  f"({', '.join(f'{r:.2f}' for r in each)}) | >= "
                  f"{_TARGET}x | {status} |")
  raw = ["| round | setup | global examples/s | slowest worker (s) | "
         "load1 before | error |", "|---|---|---|---|---|---|"]
  for i in range(rounds):
    for setup in setups:
      if i >= len(runs[setup]):
        continue
      r = runs[setup][i]
      error = r.get("error", "").replace("\n", " ")[:160]
      raw.append(f"| {i + 1} | {setup.label} | "
                 f"{_fmt(r.get('examples_per_sec'), '.0f')} | "
                 f"{_fmt(r.get('seconds'), '.2f')} | {r['load1']:.2f} | "
                 f"{error} |")
  begin, end = markers(model)
  return "\n".join([
      begin,
      f"## Multi-worker scaling (collective, 1 core per worker): {model}",
      "",
      f"Run {now:%Y-%m-%d %H:%M} UTC, `{command}` (from the project root, "
      f"with `.venv/bin/python`), {rounds} interleaved rounds, "
      f"{elapsed_secs:.0f} s in all.",
      "",
      report.machine(),
      f"- `uptime` before: {uptime_before}; after: {uptime_after}",
      "",
      "`harness.Estimator.train` under v1 `MultiWorkerMirroredStrategy`, a "
      f"TF_CONFIG cluster on 127.0.0.1; {_MODEL_DESCRIPTIONS[model]}, "
      f"batch {_BATCH_PER_WORKER} per worker, in-memory data "
      f"sharded by worker; {warmup_steps} warm-up + {timed_steps} timed "
      "steps. (a) 1 worker under `taskset -c 0`; (b) 2 workers under "
      "`taskset -c 0` / `taskset -c 1`. Global examples/s = workers x "
      f"{_BATCH_PER_WORKER} x timed steps / seconds of the slowest worker. "
      "K is `RunConfig(steps_per_loop=K)`. The 2-core machine is shared, "
      "and (b) needs both cores: any other load hits (b) more than (a).",
      "",
      "\n".join(summary),
      "",
      "\n".join(ratios),
      "",
      "<details><summary>Every run</summary>",
      "",
      "\n".join(raw),
      "",
      "</details>",
      end,
  ])


def main(argv=None):
  """Runs the interleaved setups, prints progress, writes `--out`."""
  parser = argparse.ArgumentParser(prog="python -m bench.scaling",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--model", choices=sorted(_MODEL_DESCRIPTIONS),
                      default="mlp")
  parser.add_argument("--steps_per_loop", default="1,10",
                      help="comma-separated K values, each run a and b")
  parser.add_argument("--warmup_steps", type=int, default=100)
  parser.add_argument("--timed_steps", type=int, default=400)
  parser.add_argument("--timeout_secs", type=int, default=300,
                      help="per cluster run")
  parser.add_argument("--out", default=os.path.join(_ROOT, "bench",
                                                    "RESULTS.md"))
  args = parser.parse_args(argv)
  cores = os.sched_getaffinity(0)
  if not {0, 1} <= cores:
    parser.error(f"needs cores 0 and 1 for taskset, this process may use "
                 f"{sorted(cores)}.")
  loops = [int(k) for k in args.steps_per_loop.split(",")]
  for k in loops:
    if k < 1 or args.warmup_steps % k or args.timed_steps % k:
      parser.error(f"--steps_per_loop value {k} must be >= 1 and divide "
                   f"--warmup_steps={args.warmup_steps} and --timed_steps="
                   f"{args.timed_steps}.")
  setups = [Setup(workers=n, steps_per_loop=k) for k in loops for n in (1, 2)]
  start = time.time()
  uptime_before = report.uptime()
  runs = {s: [] for s in setups}
  for round_index in range(args.rounds):
    for setup in setups:
      result = run_setup(setup, warmup_steps=args.warmup_steps,
                         timed_steps=args.timed_steps,
                         timeout_secs=args.timeout_secs, model=args.model)
      runs[setup].append(result)
      shown = (f"{result['examples_per_sec']:.0f} ex/s"
               if "error" not in result else result["error"][:200])
      print(f"round {round_index + 1}/{args.rounds} | {setup.label} | "
            f"{shown} | load1 {result['load1']:.2f}", flush=True)
  command = "python -m bench.scaling" + "".join(
      f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
  text = render(setups=setups, runs=runs, command=command,
                rounds=args.rounds, warmup_steps=args.warmup_steps,
                timed_steps=args.timed_steps,
                elapsed_secs=time.time() - start,
                uptime_before=uptime_before, uptime_after=report.uptime(),
                model=args.model)
  begin, end = markers(args.model)
  report.write_section(args.out, text, begin=begin, end=end)
  for k in loops:
    each = _ratios(runs, k)
    print(f"K={k}: (b)/(a) = {_fmt(_median(each), '.2f')}x "
          f"(rounds: {', '.join(f'{r:.2f}' for r in each)})")
  print(f"wrote {args.out} ({time.time() - start:.0f} s)")
  return 0


if __name__ == "__main__":
  sys.exit(main())
