"""Time from process start to the first training step of `harness.main`.

    python -m bench.perf.first_step                # 3 runs, writes RESULTS.md
    python -m bench.perf.first_step --runs=1 --out=/tmp/f.md \\
        --profile=/tmp/p.txt
    python -m bench.perf.first_step -- --model_fn=mnist_cnn \\
        --input_fn=mnist_idx --max_steps=200   # the shipped MNIST split

Each run is a new process (`python -m bench.perf.first_step --child ...`) that
does what `python -m harness.main <flags>` does (absl `app.run` of
`harness.main.main`), with `--model_dir` a fresh temporary directory, but
imports TensorFlow and harness in separate, timed statements and wraps a few
TensorFlow methods with clocks (they still run as usual):
`MonitoredSession.__init__` / `.run`, `SessionManager.prepare_session`,
`CheckpointSaverHook.after_create_session`, `training_util.write_graph`,
`FileWriter.add_graph` / `.add_meta_graph` and `Saver.save`. The parent's
clock just before it starts the process is t = 0. Phases:

* python: interpreter start-up until the child's `main` runs;
* import TF: `from harness._tf import tf`;
* import harness: `import harness.main` (harness's modules, absl flags);
* flags + checks: flag parsing, preflight checks, until input_fn is called
  (`harness.spec.call_input_fn`);
* input_fn, model_fn: their first (TRAIN) calls (`Estimator._call_model_fn`);
* hooks, scaffold: from there until `MonitoredSession` is constructed;
* session: `SessionManager.prepare_session` (Session, variable initialisers)
  and the other work of the MonitoredSession constructor but the hooks';
* initial checkpoint: `CheckpointSaverHook.after_create_session` (graph.pbtxt,
  graph + meta graph events, the step-0 checkpoint);
* first run: the first `MonitoredSession.run` (training step 1 and every
  hook's before/after work).

`--profile=FILE` adds one run (not in the table) under cProfile until the
first step ends and writes the 40 largest cumulative entries to FILE (the
raw profile to FILE.prof).
"""

import argparse
import datetime
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench import report

__all__ = ["DEFAULT_FLAGS", "PHASES", "run_once", "render", "main",
           "BEGIN", "END"]

BEGIN = "<!-- bench.perf.first_step: generated section begins -->"
END = "<!-- bench.perf.first_step: generated section ends -->"
# The README's main job (its first command), but 200 steps; --model_dir is
# the bench's own temporary directory.
DEFAULT_FLAGS = ("--model_fn=mnist_cnn", "--input_fn=mnist_idx",
                 "--max_steps=200",
                 "--batch_size=64", "--eval_steps=0",
                 "--save_checkpoints_steps=500", "--exporters=final")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_PREFIX = "FIRST_STEP "
_TARGET_SECS = 3.0  # Issue 26 (issue 24 had 5 s).
_TIMEOUT_SECS = 300
# (phase, start mark, end mark): marks are seconds from the parent's t0.
PHASES = (
    ("python", "t0", "main"),
    ("import TF", "main", "tf_imported"),
    ("import harness", "tf_imported", "harness_imported"),
    ("flags + checks", "harness_imported", "input_fn:start"),
    ("input_fn (TRAIN)", "input_fn:start", "input_fn:end"),
    ("model_fn (TRAIN)", "model_fn:start", "model_fn:end"),
    ("hooks, scaffold", "model_fn:end", "MonitoredSession.__init__:start"),
    ("session", "MonitoredSession.__init__:start", "hooks:start"),
    ("initial checkpoint", "hooks:start", "hooks:end"),
    ("rest of MonitoredSession()", "hooks:end",
     "MonitoredSession.__init__:end"),
    ("first run", "MonitoredSession.__init__:end", "first_step"),
)
# Durations inside "initial checkpoint" (first call of each).
_INNER = ("write_graph", "FileWriter.add_graph", "FileWriter.add_meta_graph",
          "Saver.save")


# ----------------------------------------------------------------- child


class _Marks:
  """Wall-clock marks (seconds after t0) and durations of first calls."""

  def __init__(self, t0):
    self.t0 = t0
    self.marks = {}
    self.durations = {}

  def mark(self, name):
    self.marks.setdefault(name, time.time() - self.t0)

  def wrap(self, owner, attribute, name, on_end=None):
    """Replaces owner.attribute by a clocked call of the original.

    A missing attribute (the code moved) is skipped: its phases read n/a.
    """
    original = getattr(owner, attribute, None)
    if original is None:
      return

    @functools.wraps(original)
    def clocked(*args, **kwargs):
      start = time.time()
      self.mark(name + ":start")
      try:
        return original(*args, **kwargs)
      finally:
        self.durations.setdefault(name, time.time() - start)
        self.mark(name + ":end")
        if on_end is not None:
          on_end()

    setattr(owner, attribute, clocked)


def _install_clocks(tf, marks, on_first_step):
  # pylint: disable=g-import-not-at-top
  from tensorflow.python.training import training_util
  from harness import estimator
  from harness import spec
  train = tf.compat.v1.train
  # harness's seams (looked up at call time: `spec_lib.call_input_fn(...)`,
  # `self._call_model_fn(...)`); the first call is TRAIN's.
  marks.wrap(spec, "call_input_fn", "input_fn")
  marks.wrap(estimator.Estimator, "_call_model_fn", "model_fn")
  marks.wrap(train.MonitoredSession, "__init__", "MonitoredSession.__init__")
  marks.wrap(train.MonitoredSession, "run", "MonitoredSession.run",
             on_end=on_first_step)
  marks.wrap(train.SessionManager, "prepare_session", "prepare_session")
  marks.wrap(train.CheckpointSaverHook, "after_create_session", "hooks")
  marks.wrap(training_util, "write_graph", "write_graph")
  marks.wrap(tf.compat.v1.summary.FileWriter, "add_graph",
             "FileWriter.add_graph")
  marks.wrap(tf.compat.v1.summary.FileWriter, "add_meta_graph",
             "FileWriter.add_meta_graph")
  marks.wrap(train.Saver, "save", "Saver.save")


def _child(t0, flags, profile_path):
  """Runs harness.main's job with clocks; prints the FIRST_STEP line."""
  marks = _Marks(t0)
  marks.mark("main")
  profiler = None
  if profile_path:
    import cProfile  # pylint: disable=g-import-not-at-top
    profiler = cProfile.Profile()
    profiler.enable()
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  marks.mark("tf_imported")
  # pylint: disable=g-import-not-at-top
  from absl import app
  from harness import main as harness_main
  # pylint: enable=g-import-not-at-top
  marks.mark("harness_imported")

  def on_first_step():
    if "first_step" in marks.marks:
      return
    marks.mark("first_step")
    if profiler is not None:
      profiler.disable()
      profiler.dump_stats(profile_path + ".prof")  # For pstats / snakeviz.
      import pstats  # pylint: disable=g-import-not-at-top
      with open(profile_path, "w", encoding="utf-8") as f:
        pstats.Stats(profiler, stream=f).sort_stats(
            "cumulative").print_stats(40)

  _install_clocks(tf, marks, on_first_step)

  def run(argv):
    code = harness_main.main(argv)
    marks.mark("done")
    print(_PREFIX + json.dumps({"exit": code, "marks": marks.marks,
                                "durations": marks.durations}), flush=True)
    return code

  # What `python -m harness.main` does (harness.main.run), with our argv.
  parse_flags = harness_main._parse_absl_defaults  # pylint: disable=protected-access
  app.run(run, argv=["harness.main"] + list(flags), flags_parser=parse_flags)


# ---------------------------------------------------------------- parent


def _bare_import_secs(timeout_secs):
  """Seconds a new `python -c "import tensorflow"` process takes (a floor)."""
  start = time.time()
  try:
    subprocess.run([sys.executable, "-c", "import tensorflow"], cwd=_ROOT,
                   env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                   capture_output=True, timeout=timeout_secs, check=True)
  except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
    return None
  return time.time() - start


def run_once(flags, *, profile_path=None, timeout_secs=_TIMEOUT_SECS):
  """One child process; returns {"marks", "durations", "load1"} or "error".

  Also "bare_import_secs": a `python -c "import tensorflow"` process run
  just before, the floor any TensorFlow program starts from.
  """
  bare_import_secs = _bare_import_secs(timeout_secs)
  load1 = os.getloadavg()[0]
  model_dir = tempfile.mkdtemp(prefix="bench_first_step_")
  argv = [sys.executable, "-m", "bench.perf.first_step", "--child",
          f"--t0={time.time()}"]
  if profile_path:
    argv.append(f"--profile={profile_path}")
  argv += ["--", *flags, f"--model_dir={model_dir}"]
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1")
  try:
    proc = subprocess.run(argv, cwd=_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout_secs, check=False)
  except subprocess.TimeoutExpired:
    return {"error": f"timed out after {timeout_secs} s", "load1": load1}
  finally:
    shutil.rmtree(model_dir, ignore_errors=True)
  for line in proc.stdout.splitlines():
    if line.startswith(_PREFIX):
      result = json.loads(line[len(_PREFIX):])
      result["load1"] = load1
      result["bare_import_secs"] = bare_import_secs
      if result["exit"] != 0:
        result["error"] = f"harness.main exit {result['exit']}: " + (
            proc.stderr[-400:])
      return result
  return {"error": f"exit {proc.returncode}: {proc.stderr[-600:]}",
          "load1": load1}


def _phase(result, start, end):
  marks = dict(result["marks"], t0=0.0)
  if start not in marks or end not in marks:
    return None
  return marks[end] - marks[start]


def _fmt(value, spec=".2f"):
  return "n/a" if value is None else format(value, spec)


def _median(values):
  values = [v for v in values if v is not None]
  return statistics.median(values) if values else None


def render(*, runs, command, flags, elapsed_secs, uptime_before,
           uptime_after):
  """The generated section for RESULTS.md, markers included."""
  ok = [r for r in runs if "error" not in r]
  now = datetime.datetime.now(datetime.timezone.utc)
  header = "| phase | median (s) | " + " | ".join(
      f"run {i + 1}" for i in range(len(runs))) + " |"
  lines = [header, "|---" * (len(runs) + 2) + "|"]

  def row(name, values):
    cells = " | ".join(_fmt(v) for v in values)
    lines.append(f"| {name} | {_fmt(_median(values))} | {cells} |")

  for name, start, end in PHASES:
    row(name, [_phase(r, start, end) if "error" not in r else None
               for r in runs])
  for inner in _INNER:
    row(f"  of which {inner} (in initial checkpoint)",
        [r.get("durations", {}).get(inner) for r in runs])
  row("**first step** (t0 -> end of first run)",
      [_phase(r, "t0", "first_step") if "error" not in r else None
       for r in runs])
  row("whole run (t0 -> job done)",
      [_phase(r, "t0", "done") if "error" not in r else None for r in runs])
  row("for reference: `python -c \"import tensorflow\"`, whole process",
      [r.get("bare_import_secs") for r in runs])
  lines.append("| load1 before | | " + " | ".join(
      f"{r['load1']:.2f}" for r in runs) + " |")
  first = _median([_phase(r, "t0", "first_step") for r in ok])
  status = ("unknown" if first is None else
            "met" if first <= _TARGET_SECS else "NOT met")
  errors = [r["error"].splitlines()[0][:200] for r in runs if "error" in r]
  return "\n".join([
      BEGIN,
      "## First step: process start to first training step",
      "",
      f"Run {now:%Y-%m-%d %H:%M} UTC, `{command}` (from the project root, "
      f"with `.venv/bin/python`), {len(runs)} runs, {elapsed_secs:.0f} s "
      "in all. Each run is a new process doing `python -m harness.main "
      f"{' '.join(flags)} --model_dir=<new temp dir>` (see "
      "bench/perf/first_step.py for how the phases are clocked).",
      "",
      report.machine(),
      f"- `uptime` before: {uptime_before}; after: {uptime_after}",
      "",
      "\n".join(lines),
      "",
      f"Target (local run, first step within {_TARGET_SECS:g} s of process "
      f"start): median {_fmt(first, '.1f')} s, **{status}**."
      + (f" Errors: {'; '.join(errors)}" if errors else ""),
      END,
  ])


def _parse(argv):
  parser = argparse.ArgumentParser(
      prog="python -m bench.perf.first_step",
      description=__doc__.split("\n", maxsplit=1)[0])
  parser.add_argument("--runs", type=int, default=3)
  parser.add_argument("--out", default=os.path.join(_ROOT, "bench",
                                                    "RESULTS.md"))
  parser.add_argument("--profile", default=None,
                      help="cProfile (child) up to the first step -> FILE")
  parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
  parser.add_argument("--t0", type=float, default=None,
                      help=argparse.SUPPRESS)
  parser.add_argument("flags", nargs="*",
                      help="harness.main flags (after --); default: "
                      + " ".join(DEFAULT_FLAGS))
  return parser.parse_args(argv)


def main(argv=None):
  """Parent: runs the children, writes `--out`. Child: one timed run."""
  argv = sys.argv[1:] if argv is None else argv
  args = _parse(argv)
  flags = args.flags or list(DEFAULT_FLAGS)
  if args.child:
    _child(args.t0 if args.t0 is not None else time.time(), flags,
           args.profile)
    return 0
  start = time.time()
  uptime_before = report.uptime()
  runs = []
  for i in range(args.runs):
    result = run_once(flags)
    runs.append(result)
    shown = (f"first step {_phase(result, 't0', 'first_step'):.2f} s"
             if "error" not in result else result["error"][:300])
    print(f"run {i + 1}/{args.runs} | {shown} | load1 {result['load1']:.2f}",
          flush=True)
  if args.profile:
    # One more run, not in the table: the profiler slows what it measures.
    result = run_once(flags, profile_path=args.profile)
    print(f"profiled run: {result.get('error') or 'ok'}; top cumulative "
          f"entries up to the first step in {args.profile}", flush=True)
  command = "python -m bench.perf.first_step" + "".join(f" {a}" for a in argv)
  text = render(runs=runs, command=command, flags=flags,
                elapsed_secs=time.time() - start,
                uptime_before=uptime_before, uptime_after=report.uptime())
  report.write_section(args.out, text, begin=BEGIN, end=END)
  print(text)
  print(f"wrote {args.out} ({time.time() - start:.0f} s)")
  return 0


if __name__ == "__main__":
  sys.exit(main())
