"""harness vs REAL tf.estimator 2.15, with bare session.run loops on both TFs.

    python -m bench.tf215.vs215             # 5 rounds; writes bench/RESULTS.md
    python -m bench.tf215.vs215 --rounds=7 --out=/tmp/r.md
    python -m bench.tf215.vs215 --profile       # also cProfile one run of each
    python -m bench.tf215.vs215 --cases=census_csv_b256,numpy_dnn_b128

Cases: two networks of `bench.configs` (an MLP, a CNN) in one custom model_fn
over in-memory data, and three legacy programs of `bench.tf215.programs`, each
as a tf.estimator 2.15 user wrote it (data generated once, fixed seed, under
/tmp/harness_bench_data): `census_csv` (wide & deep DNNLinearCombinedClassifier
over a 200k-row CSV read by TextLineDataset + decode_csv), `tfrecord`
(tf.Example records parsed per batch, custom model_fn) and `numpy_dnn`
(DNNClassifier fed by numpy_input_fn). Runners: tf.estimator 2.15, harness with
K=1 (default input pipeline and `input_pipeline="as_written"`) and K=auto, and
bare `session.run(train_op)` loops with no hooks: on TF 2.15 (the networks
only) and on TF 2.21 (for a program: the graph harness builds from its input_fn
and model_fn).

tf.estimator 2.15 cannot run on TF 2.21, so it runs in a side venv that
`bench.tf215.tf215_env` creates (python3.11 + tensorflow-cpu 2.15 +
tensorflow-estimator 2.15 from PyPI, under /tmp). Each configuration is a
process (`bench.tf215.vs215_worker`); the configurations are interleaved, every
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
import subprocess
import sys
import time

from bench import figures
from bench.tf215 import programs
from bench import report
from bench.tf215 import tf215_env
from bench.tf215 import vs215_table

__all__ = ["CASES", "RUNNERS", "main"]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
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

  @property
  def flag_name(self):
    """The name as `--cases` takes it: `mlp_b256`, `census_csv_b256`."""
    return self.name.replace(" ", "_")

  @property
  def is_program(self):
    return self.model in programs.PROGRAMS


@dataclasses.dataclass(frozen=True)
class Runner:
  label: str
  runner: str
  tf215: bool
  steps_per_loop: str = "1"
  # RunConfig(input_pipeline=...) when set; None passes nothing (default).
  input_pipeline: str | None = None
  # False: the runner has no version of a `bench.tf215.programs` program.
  runs_programs: bool = True
  # RunConfig(xla=True); such a runner runs the CNN only (XLA's case).
  xla: bool = False
  # Fraction of a case's timed steps this runner trains (XLA on this CPU
  # runs the CNN ~7x slower: a full window would take minutes).
  step_scale: float = 1.0

  def applies_to(self, case):
    if self.xla:
      return case.model == "cnn"
    return self.runs_programs or not case.is_program


# Warm-up (>= 200 steps) covers auto's measurement (about 50 steps) and its
# first loop (up to 100 steps). Sized on this machine (2026-11-25, one run,
# 1-minute load about 1-1.5): a network's timed window takes 10-15 s at
# tf.estimator 2.15's rate (mlp b32 ~20k, mlp b256 ~71k, cnn b256 ~24k
# examples/s); a program's tf.estimator 2.15 process takes about 25 s from
# start to end (census_csv ~26k, tfrecord ~65k, numpy_dnn ~46k examples/s,
# about 4-5 s of it start-up).
CASES = (Case("mlp", 32, 400, 8000), Case("mlp", 256, 300, 3600),
         Case("cnn", 256, 200, 1200),
         Case("census_csv", 256, 200, 1900), Case("tfrecord", 256, 300, 5000),
         Case("numpy_dnn", 128, 300, 7200))
RUNNERS = (
    Runner("tf 2.15 bare loop", "bare", True, runs_programs=False),
    Runner("tf.estimator 2.15", "estimator215", True),
    Runner("tf 2.21 bare loop", "bare", False),
    Runner("harness K=1", "harness", False, "1"),
    Runner("harness K=1 as_written", "harness", False, "1",
           input_pipeline="as_written"),
    Runner("harness K=auto", "harness", False, "auto"),
    Runner("harness K=auto xla", "harness", False, "auto", xla=True,
           step_scale=0.2),
)
# Programs held to K=auto >= 1.5x as well: their input work (decode_csv a
# line, parse_example a batch) is what a tuned pipeline can overlap with
# training.
_PIPELINE_BOUND = ("census_csv", "tfrecord")


def _case_targets(case):
  """(case, mine, theirs, at least) rows: issue 26's acceptance."""
  targets = [(case.name, "harness K=1", "tf 2.21 bare loop", 0.95),
             (case.name, "harness K=1", "tf.estimator 2.15", 1.0),
             (case.name, "harness K=auto", "tf.estimator 2.15", 1.3)]
  if case.model in _PIPELINE_BOUND:
    targets.append((case.name, "harness K=auto", "tf.estimator 2.15", 1.5))
  return targets


_TARGETS = tuple(t for c in CASES for t in _case_targets(c))


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
  argv = [python, "-m", "bench.tf215.vs215_worker", f"--runner={runner.runner}",
          f"--model={case.model}", f"--batch_size={case.batch_size}",
          f"--warmup_steps={case.warmup_steps}",
          f"--timed_steps={int(case.timed_steps * runner.step_scale)}",
          f"--steps_per_loop={runner.steps_per_loop}"]
  if runner.input_pipeline:
    argv.append(f"--input_pipeline={runner.input_pipeline}")
  if runner.xla:
    argv.append("--xla")
  if profile_out:
    argv.append(f"--profile_out={profile_out}")
  load1 = os.getloadavg()[0]
  start = time.monotonic()
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
      result["process_secs"] = time.monotonic() - start
      chosen = [l for l in proc.stderr.splitlines()
                if "steps_per_loop=auto" in l]
      if chosen:
        result["auto"] = chosen[-1].split("steps_per_loop=auto", 1)[1]
      return result
  return {"error": f"exit {proc.returncode}: {proc.stderr[-600:]}",
          "load1": load1}


def _write_program_data():
  """Writes the selected programs' data once, before any timed process."""
  if not any(c.is_program for c in CASES):
    return
  subprocess.run([sys.executable, "-m", "bench.tf215.programs"], cwd=_ROOT,
                 env=_env(False), check=True, capture_output=True,
                 timeout=_CHILD_TIMEOUT_SECS)


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


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.tf215.vs215")
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
    wanted = args.cases.replace(" ", "_").split(",")
    unknown = set(wanted) - {c.flag_name for c in CASES}
    if unknown:
      parser.error(f"--cases: unknown {', '.join(sorted(unknown))}; one of "
                   f"{', '.join(c.flag_name for c in CASES)}")
    CASES = tuple(c for c in CASES if c.flag_name in wanted)
  if args.runners:
    wanted = args.runners.split(",")
    RUNNERS = tuple(r for r in RUNNERS if r.label in wanted)
  _write_program_data()
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
        if not runner.applies_to(case):
          continue
        result = run_one(case, runner, python215)
        results[(case.name, runner.label)] = result
        print(f"round {round_index + 1} {case.name} {runner.label}: "
              f"{result.get('examples_per_sec', result.get('error'))} "
              f"(load {result['load1']:.1f}, process "
              f"{result.get('process_secs', 0):.1f} s)", flush=True)
    runs.append(results)
  profiles = []
  if args.profile:
    case = CASES[0]
    for runner in (r for r in RUNNERS if r.runner != "bare"):
      path = (f"/tmp/bench_vs215_profile_{runner.runner}_"
              f"{runner.steps_per_loop}_{runner.input_pipeline or 'default'}"
              ".txt")
      run_one(case, runner, python215, profile_out=path)
      if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
          profiles.append((f"{case.name} {runner.label}", f.read()))
  command = "python -m bench.tf215.vs215" + "".join(
      f" --{n}='{getattr(args, n)}'" for n in ("cases", "runners")
      if getattr(args, n)) + (
      f" --rounds={args.rounds}" if args.rounds != 5 else "") + (
          " --profile" if args.profile else "")
  text = vs215_table.render(
      runs, cases=CASES, runners=RUNNERS, targets=_TARGETS,
      rounds=args.rounds, elapsed_secs=time.time() - start, loads=loads,
      command=command, profiles=profiles, max_load=args.max_load)
  report.write_section(args.out, text, begin=vs215_table.BEGIN,
                       end=vs215_table.END)
  if args.out == parser.get_default("out"):  # README's XLA figure, if run.
    sentence = figures.xla_sentence(text, missing_ok=True)
    if sentence:
      report.write_readme_span("xla-slowdown", sentence)
  print(text)
  return 0


if __name__ == "__main__":
  sys.exit(main())
