"""harness vs REAL tf.estimator 2.15, with bare session.run loops on both TFs.

    python -m bench.vs215                 # 5 rounds; writes bench/RESULTS.md
    python -m bench.vs215 --rounds=7 --out=/tmp/r.md
    python -m bench.vs215 --profile       # also cProfile one run of each

tf.estimator 2.15 cannot run on TF 2.21, so it runs in a side venv that
`bench.tf215_env` creates (python3.11 + tensorflow-cpu 2.15 +
tensorflow-estimator 2.15 from PyPI, under /tmp). Each configuration is a
process (`bench.vs215_worker`); the configurations are interleaved, every
round in a rotated order, and the figures are medians over rounds; ratios
are taken per round (same moment, same load) and their median reported
with their spread (min-max).

Quiet machine only: before each round the 1-minute load average must be at
most `--max_load` (1.5 on this 2-core machine; a benchmark process itself
loads both cores, so the guard waits up to `--quiet_wait_secs` for the
previous round's load to decay). A round that starts louder is still run
but marked, and its ratios are left out of the medians; with no quiet round
at all the section says so instead of reporting figures. Not part of the
test suite.
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
from bench import tf215_env

__all__ = ["CASES", "RUNNERS", "main"]

BEGIN = "<!-- bench.vs215: generated section begins -->"
END = "<!-- bench.vs215: generated section ends -->"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PREFIX = "BENCH_RESULT "
_CHILD_TIMEOUT_SECS = 300


@dataclasses.dataclass(frozen=True)
class Case:
  model: str
  batch_size: int
  warmup_steps: int
  timed_steps: int

  @property
  def name(self):
    return f"{self.model} b{self.batch_size}"


@dataclasses.dataclass(frozen=True)
class Runner:
  label: str
  runner: str
  tf215: bool
  steps_per_loop: str = "1"


# Warm-up covers auto's measurement (47 steps) and its first loop.
CASES = (Case("mlp", 32, 400, 3000), Case("mlp", 256, 300, 1500),
         Case("cnn", 256, 60, 240))
RUNNERS = (
    Runner("tf 2.15 bare loop", "bare", True),
    Runner("tf.estimator 2.15", "estimator215", True),
    Runner("tf 2.21 bare loop", "bare", False),
    Runner("harness K=1", "harness", False, "1"),
    Runner("harness K=auto", "harness", False, "auto"),
)
_TARGETS = tuple(  # (case, mine, theirs, at least): issue 26's acceptance.
    t for c in CASES for t in (
        (c.name, "harness K=1", "tf 2.21 bare loop", 0.95),
        (c.name, "harness K=1", "tf.estimator 2.15", 1.0),
        (c.name, "harness K=auto", "tf.estimator 2.15", 1.3)))


def _env(tf215):
  env = dict(os.environ)
  env.update(TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=_ROOT)
  if tf215:  # TF 2.15's tf.compat.v1.layers are its own Keras 2.
    env.pop("TF_USE_LEGACY_KERAS", None)
  else:
    env["TF_USE_LEGACY_KERAS"] = "1"
  return env


def run_one(case, runner, python215, profile_out=None):
  """One process; returns its result dict ("error" set on failure)."""
  python = python215 if runner.tf215 else sys.executable
  argv = [python, "-m", "bench.vs215_worker", f"--runner={runner.runner}",
          f"--model={case.model}", f"--batch_size={case.batch_size}",
          f"--warmup_steps={case.warmup_steps}",
          f"--timed_steps={case.timed_steps}",
          f"--steps_per_loop={runner.steps_per_loop}"]
  if profile_out:
    argv.append(f"--profile_out={profile_out}")
  load1 = os.getloadavg()[0]
  try:
    proc = subprocess.run(argv, cwd=_ROOT, env=_env(runner.tf215),
                          capture_output=True,
                          text=True, timeout=_CHILD_TIMEOUT_SECS, check=False)
  except subprocess.TimeoutExpired:
    return {"error": f"timed out after {_CHILD_TIMEOUT_SECS} s",
            "load1": load1}
  for line in proc.stdout.splitlines():
    if line.startswith(_PREFIX):
      result = json.loads(line[len(_PREFIX):])
      result["load1"] = load1
      chosen = [l for l in proc.stderr.splitlines()
                if "steps_per_loop=auto" in l]
      if chosen:
        result["auto"] = chosen[-1].split("steps_per_loop=auto", 1)[1]
      return result
  return {"error": f"exit {proc.returncode}: {proc.stderr[-600:]}",
          "load1": load1}


def wait_for_quiet(max_load, wait_secs, poll_secs=5.0):
  """Waits until the 1-minute load average is <= `max_load` (bounded).

  Returns (quiet, load1 when it returned)."""
  deadline = time.monotonic() + wait_secs
  while True:
    load1 = os.getloadavg()[0]
    if load1 <= max_load:
      return True, load1
    if time.monotonic() >= deadline:
      return False, load1
    time.sleep(poll_secs)


def _median(values):
  return statistics.median(values) if values else None


def _rate(runs, round_index, case, label):
  result = runs[round_index].get((case, label), {})
  return result.get("examples_per_sec")


def _paired(runs, case, mine, theirs):
  """Per-round ratios mine/theirs over the quiet rounds (see main)."""
  ratios = []
  for i in range(len(runs)):
    if runs[i].get("loud"):
      continue
    a, b = _rate(runs, i, case, mine), _rate(runs, i, case, theirs)
    if a and b:
      ratios.append(a / b)
  return ratios


def _fmt_ratios(ratios):
  """`median x (min-max; each round's)`."""
  if not ratios:
    return "n/a"
  each = ", ".join(f"{r:.2f}" for r in ratios)
  return (f"{_median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}; "
          f"{each})")


def render(runs, *, rounds, elapsed_secs, loads, command, profiles,
           max_load):
  """The generated RESULTS.md section (markers included)."""
  labels = [r.label for r in RUNNERS]
  quiet = [i for i, r in enumerate(runs) if not r.get("loud")]
  loud = [str(i + 1) for i, r in enumerate(runs) if r.get("loud")]
  lines = [BEGIN, "", "## harness vs tf.estimator 2.15 (`bench.vs215`)", "",
           f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
           f"`{command}` (from the project root), {rounds} interleaved "
           f"rounds, {elapsed_secs / 60:.1f} min in all. Each round starts "
           f"only at a 1-minute load average <= {max_load} (nothing else "
           "heavy on the 2-core machine); `uptime` before each round: "
           f"{'; '.join(loads)}. "
           + (f"**Rounds {', '.join(loud)} started louder and are left out "
              "of the figures.** " if loud else "") +
           "Figures are medians over the quiet rounds; ratios are per round "
           "(the two runs of a ratio ran minutes apart at most): median "
           "(min-max; each round's).", ""]
  if not quiet:
    lines += ["**No round started quiet: no figures are reported.**", "",
              END]
    return "\n".join(lines)
  lines += [
           report.machine(),
           "- tf.estimator 2.15: tensorflow-cpu 2.15 + tensorflow-estimator "
           "2.15 in a side venv (`bench.tf215_env`), same model_fn, same "
           "RunConfig (log/summary every 100 steps, checkpoint every 600 s).",
           "", "Model: the MLP 784-256-256-10 and the seeds' CNN "
           "(`model_fns/mnist_cnn.py`'s network) in `tf.compat.v1.layers`, "
           "Adam(1e-3), 8,192 random in-memory examples "
           "(`bench.configs.data`). Rate: examples/s over the timed steps, "
           "from the global step each run starts at and the clock at each "
           "run's end (same measure for 1 or K steps a run). Bare loop: "
           "`session.run(train_op)` in a Python loop, no hooks, same graph.",
           "", "| case | " + " | ".join(labels) + " |",
           "|---|" + "---|" * len(labels)]
  for case in CASES:
    cells = []
    for label in labels:
      rates = [r for r in (_rate(runs, i, case.name, label)
                           for i in quiet) if r]
      cells.append(f"{_median(rates):,.0f}" if rates else "failed")
    lines.append(f"| {case.name} | " + " | ".join(cells) + " |")
  lines += ["", "Ratios (median of per-round ratios, each round's):", "",
            "| case | harness K=1 / 2.15 | K=auto / 2.15 | K=auto / K=1 | "
            "2.21 bare / 2.15 bare (kernels) | 2.15 / its bare | "
            "harness K=1 / its bare |", "|---|---|---|---|---|---|---|"]
  for case in CASES:
    n = case.name
    lines.append("| " + " | ".join([
        n,
        _fmt_ratios(_paired(runs, n, "harness K=1", "tf.estimator 2.15")),
        _fmt_ratios(_paired(runs, n, "harness K=auto", "tf.estimator 2.15")),
        _fmt_ratios(_paired(runs, n, "harness K=auto", "harness K=1")),
        _fmt_ratios(_paired(runs, n, "tf 2.21 bare loop",
                            "tf 2.15 bare loop")),
        _fmt_ratios(_paired(runs, n, "tf.estimator 2.15",
                            "tf 2.15 bare loop")),
        _fmt_ratios(_paired(runs, n, "harness K=1", "tf 2.21 bare loop")),
    ]) + " |")
  lines += ["", "Targets (issue 26):", "",
            "| case | target | median of per-round ratios | status |",
            "|---|---|---|---|"]
  for name, mine, theirs, floor in _TARGETS:
    ratios = _paired(runs, name, mine, theirs)
    status = ("n/a" if not ratios else
              "met" if _median(ratios) >= floor else "NOT met")
    lines.append(f"| {name} | {mine} >= {floor}x {theirs} | "
                 f"{_fmt_ratios(ratios)} | {status} |")
  lines += ["", "K chosen by auto (the INFO line, per round):", ""]
  for case in CASES:
    chosen = [runs[i].get((case.name, "harness K=auto"), {}).get("auto", "?")
              for i in range(len(runs))]
    lines.append(f"- {case.name}: " + " / ".join(
        c.strip(": ").split(" (")[0] for c in chosen))
  errors = [(i, k, v["error"]) for i, r in enumerate(runs)
            for k, v in r.items() if isinstance(v, dict) and "error" in v]
  if errors:
    lines += ["", "Failed runs:", ""]
    lines += [f"- round {i + 1} {k[0]} {k[1]}: {e[:300]}"
              for i, k, e in errors]
  for title, text in profiles:
    lines += ["", f"cProfile, {title} (top by own time):", "", "```",
              text.rstrip(), "```"]
  lines += ["", END]
  return "\n".join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.vs215")
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--max_load", type=float, default=1.5,
                      help="a round starts only at a 1-minute load average "
                      "at most this (else it is marked and left out)")
  parser.add_argument("--quiet_wait_secs", type=float, default=300.0,
                      help="how long to wait for that before each round")
  parser.add_argument("--out", default=os.path.join(_ROOT, "bench",
                                                    "RESULTS.md"))
  parser.add_argument("--venv_dir", default=tf215_env.DEFAULT_VENV_DIR)
  parser.add_argument("--cases", default=None,
                      help="comma list of cases to run, e.g. mlp_b256,cnn_b256")
  parser.add_argument("--runners", default=None,
                      help="comma list of runner labels, e.g. "
                      "'tf.estimator 2.15,harness K=1'")
  parser.add_argument("--profile", action="store_true",
                      help="cProfile one run of the first case with each "
                      "non-bare runner after the rounds")
  args = parser.parse_args(argv)
  python215 = tf215_env.ensure(args.venv_dir)
  global CASES, RUNNERS  # pylint: disable=global-statement
  if args.cases:
    wanted = args.cases.replace("_", " ").split(",")
    CASES = tuple(c for c in CASES if c.name in wanted)
  if args.runners:
    wanted = args.runners.split(",")
    RUNNERS = tuple(r for r in RUNNERS if r.label in wanted)
  start = time.time()
  runs, loads = [], []
  for round_index in range(args.rounds):
    quiet, load1 = wait_for_quiet(args.max_load, args.quiet_wait_secs)
    loads.append(f"round {round_index + 1}: {report.uptime()}"
                 + ("" if quiet else " (LOUD: left out)"))
    if not quiet:
      print(f"round {round_index + 1}: load {load1:.2f} > {args.max_load} "
            f"after {args.quiet_wait_secs:g} s: marked, left out",
            flush=True)
    order = list(RUNNERS)
    shift = round_index % len(order)
    order = order[shift:] + order[:shift]
    results = {"loud": not quiet}
    for case in CASES:
      for runner in order:
        result = run_one(case, runner, python215)
        results[(case.name, runner.label)] = result
        print(f"round {round_index + 1} {case.name} {runner.label}: "
              f"{result.get('examples_per_sec', result.get('error'))} "
              f"(load {result['load1']:.1f})", flush=True)
    runs.append(results)
  profiles = []
  if args.profile:
    case = CASES[0]
    for runner in (r for r in RUNNERS if r.runner != "bare"):
      path = f"/tmp/bench_vs215_profile_{runner.runner}_{runner.steps_per_loop}.txt"
      run_one(case, runner, python215, profile_out=path)
      if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
          profiles.append((f"{case.name} {runner.label}", f.read()))
  command = "python -m bench.vs215" + "".join(
      f" --{n}='{getattr(args, n)}'" for n in ("cases", "runners")
      if getattr(args, n)) + (
      f" --rounds={args.rounds}" if args.rounds != 5 else "") + (
          " --profile" if args.profile else "")
  text = render(runs, rounds=args.rounds, elapsed_secs=time.time() - start,
                loads=loads, command=command, profiles=profiles,
                max_load=args.max_load)
  report.write_section(args.out, text, begin=BEGIN, end=END)
  print(text)
  return 0


if __name__ == "__main__":
  sys.exit(main())
