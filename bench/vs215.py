"""harness vs REAL tf.estimator 2.15, with bare session.run loops on both TFs.

    python -m bench.vs215                 # 5 rounds; writes bench/RESULTS.md
    python -m bench.vs215 --rounds=7 --out=/tmp/r.md
    python -m bench.vs215 --profile       # also cProfile one run of each
    python -m bench.vs215 --cases=census_csv_b256,numpy_dnn_b128

Cases: two networks of `bench.configs` (an MLP, a CNN) in one custom
model_fn over in-memory data, and three legacy programs of `bench.programs`,
each as a tf.estimator 2.15 user wrote it (data generated once, fixed seed,
under /tmp/harness_bench_data): `census_csv` (wide & deep
DNNLinearCombinedClassifier over a 200k-row CSV read by TextLineDataset +
decode_csv), `tfrecord` (tf.Example records parsed per batch, custom
model_fn) and `numpy_dnn` (DNNClassifier fed by numpy_input_fn). Runners:
tf.estimator 2.15, harness with K=1 (default input pipeline and
`input_pipeline="as_written"`) and K=auto, and bare `session.run(train_op)`
loops with no hooks: on TF 2.15 (the networks only) and on TF 2.21 (for a
program: the graph harness builds from its input_fn and model_fn).

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

from bench import programs
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
  # False: the runner has no version of a `bench.programs` program.
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
  argv = [python, "-m", "bench.vs215_worker", f"--runner={runner.runner}",
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
  subprocess.run([sys.executable, "-m", "bench.programs"], cwd=_ROOT,
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
           "2.15 in a side venv (`bench.tf215_env`), the same program text "
           "(`tf.estimator.*` there, `harness.*` here), same RunConfig "
           "(log/summary every 100 steps, checkpoint every 600 s, "
           "tf_random_seed fixed).",
           "", "Cases: `mlp` and `cnn` are the MLP 784-256-256-10 and the "
           "seeds' CNN (`model_fns/mnist_cnn.py`'s network) in "
           "`tf.compat.v1.layers`, Adam(1e-3), in one custom model_fn over "
           "8,192 random in-memory examples (`bench.configs.data`, "
           "`Dataset.from_tensor_slices(...).repeat().batch(B)`). The other "
           "rows are legacy programs (`bench.programs`, data generated once "
           "with a fixed seed under /tmp/harness_bench_data; no prefetch in "
           "any input_fn, as legacy code wrote them): `census_csv` is wide & "
           "deep, `DNNLinearCombinedClassifier(dnn_hidden_units=[64, 32])` "
           "with its default optimizers (Ftrl, Adagrad) over a 200,000-row "
           "census-style CSV (age, education of 16 strings, occupation of "
           "1,000, hours_per_week, capital_gain, native_country of 40, "
           "label) read by `TextLineDataset(...).skip(1).map(decode_csv "
           "parser).repeat().batch(B)`; its columns are numeric, "
           "bucketized(age), vocabulary-list(education), hash-bucket "
           "(occupation 1,000; country 100), crossed(education x occupation, "
           "10,000), embedding(occupation, 8; country, 4) and "
           "indicator(education). `tfrecord` reads 20,000 tf.Example records "
           "(784 float pixels + int64 label, 4 TFRecord shards) with "
           "`TFRecordDataset(files).repeat().batch(B).map(parse_example)` "
           "into the MLP above (custom model_fn, `EstimatorSpec`). "
           "`numpy_dnn` is `DNNClassifier(hidden_units=[256, 256])` (default "
           "Adagrad) on one numeric_column of shape [784], fed the MLP's "
           "8,192 arrays by `numpy_input_fn(batch_size=128, num_epochs=None, "
           "shuffle=True)` (2.15: `tf.compat.v1.estimator.inputs`' queue "
           "runners; harness: `harness.inputs`' tf.data).",
           "", "Rate: examples/s over the timed steps, from the global step "
           "each run starts at and the clock at each run's end (same "
           "measure for 1 or K steps a run). Bare loop: "
           "`session.run(train_op)` in a Python loop, no hooks, no "
           "MonitoredSession, same graph (for a program on TF 2.21: its "
           "input_fn's dataset as written, through an initializable iterator, "
           "and harness's "
           "`estimator.model_fn` in TRAIN mode; there is no TF 2.15 bare "
           "loop of a program: n/a). `harness K=1 as_written` passes "
           "`RunConfig(input_pipeline=\"as_written\")` (the input_fn's "
           "dataset as returned); the other harness runners keep the "
           "default.",
           "", "| case | " + " | ".join(labels) + " |",
           "|---|" + "---|" * len(labels)]
  for case in CASES:
    cells = []
    for runner in RUNNERS:
      rates = [r for r in (_rate(runs, i, case.name, runner.label)
                           for i in quiet) if r]
      cells.append("n/a" if not runner.applies_to(case) else
                   f"{_median(rates):,.0f}" if rates else "failed")
    lines.append(f"| {case.name} | " + " | ".join(cells) + " |")
  lines += ["", "Ratios (median of per-round ratios, each round's):", "",
            "| case | harness K=1 / 2.15 | K=auto / 2.15 | K=auto / K=1 | "
            "K=1 / K=1 as_written | "
            "2.21 bare / 2.15 bare (kernels) | 2.15 / its bare | "
            "harness K=1 / its bare | K=auto xla / K=auto |",
            "|---|---|---|---|---|---|---|---|---|"]
  for case in CASES:
    n = case.name
    lines.append("| " + " | ".join([
        n,
        _fmt_ratios(_paired(runs, n, "harness K=1", "tf.estimator 2.15")),
        _fmt_ratios(_paired(runs, n, "harness K=auto", "tf.estimator 2.15")),
        _fmt_ratios(_paired(runs, n, "harness K=auto", "harness K=1")),
        _fmt_ratios(_paired(runs, n, "harness K=1",
                            "harness K=1 as_written")),
        _fmt_ratios(_paired(runs, n, "tf 2.21 bare loop",
                            "tf 2.15 bare loop")),
        _fmt_ratios(_paired(runs, n, "tf.estimator 2.15",
                            "tf 2.15 bare loop")),
        _fmt_ratios(_paired(runs, n, "harness K=1", "tf 2.21 bare loop")),
        _fmt_ratios(_paired(runs, n, "harness K=auto xla", "harness K=auto")),
    ]) + " |")
  lines += ["", "Targets (issue 26):", "",
            "| case | target | median of per-round ratios | status |",
            "|---|---|---|---|"]
  selected = {c.name for c in CASES}
  for name, mine, theirs, floor in (t for t in _TARGETS if t[0] in selected):
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
