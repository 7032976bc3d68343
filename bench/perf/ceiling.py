"""The most N collective workers can gain on this machine, and why.

    nice -n -20 python -m bench.perf.ceiling                  # 2 workers; ~8 min
    nice -n -20 python -m bench.perf.ceiling --workers=2,4,8 --rounds=1

For each model (`--models`) and worker count N (`--workers`), run once a
round, interleaved (`bench.perf.scaling.run_setup`, worker i under `taskset
-c i`, 256 examples per worker per step, bench processes at the nice this
command runs under):

* **alone**: the bare loop (`bench.perf.scaling_runners`), one worker on
  core 0: its step time c = 256 / its examples/s.
* **side by side**: N one-worker bare jobs on cores 0..N-1 that talk to no
  one. Their summed examples/s over N x alone's is the share e of a core's
  speed each keeps while the others compute (shared caches, memory, and on
  a virtual machine whatever the host shares): a step of compute takes c / e.
* **all-reduce**: N workers that do nothing but all-reduce a tensor of the
  model's gradient bytes each step, under the bare loop's strategy, session
  config and server (the `allreduce` runner): a, TensorFlow's cost of the
  gradients' all-reduce with nothing else running. Also a 4-byte one: the
  latency of any all-reduce here.
* **bare cluster**: the bare loop on N workers, as `bench.perf.scaling`
  measures it.

A lockstep step is at least c / e + a, so N workers train at most
N c / (c / e + a) times as fast as one: the ceiling, whatever loop drives
them. Where issue 50 sets a target T for N workers, the section gives the
all-reduce it leaves room for: N c / T - c / e. The result is a generated
section of bench/RESULTS.md (its own on a machine of more than 2 cores)
and, for the committed RESULTS.md on 2 cores, the README's `ceiling` span.

This module imports no TensorFlow (only the workers it starts do).
"""

import argparse
import os
import statistics
import sys
import time

from bench import report
from bench.perf import scaling
from bench.perf import scaling_table

__all__ = ["KINDS", "TARGETS", "markers", "ceiling", "summarise", "render",
           "readme_sentence", "main"]

# The runs of each round per (model, N), in order (`_run` turns each into
# a `scaling.run_setup` call).
KINDS = ("alone", "side_by_side", "allreduce", "allreduce_4b", "bare")
# Issue 50's targets: N workers over one.
TARGETS = {("cnn", 2): 1.85, ("mlp", 2): 1.6, ("cnn", 8): 6.0,
           ("mlp", 8): 3.0}
_BATCH = 256


def markers(cores=2):
  """(begin, end) of the section; a machine of more than 2 cores has its
  own."""
  tag = "bench.perf.ceiling" + (f" {cores} cores" if cores > 2 else "")
  return (f"<!-- {tag}: generated section begins -->",
          f"<!-- {tag}: generated section ends -->")


def _run(kind, model, workers, args):
  """One run_setup of `kind`; returns its result dict."""
  runner = "allreduce" if kind.startswith("allreduce") else "bare"
  worker_args = [f"--runner={runner}", "--strategy=collective"]
  if kind == "allreduce_4b":
    worker_args.append("--allreduce_bytes=4")
  return scaling.run_setup(
      scaling.Setup(runner=runner, workers=1 if kind == "alone" else workers),
      warmup_steps=args.warmup_steps, timed_steps=args.timed_steps,
      timeout_secs=args.timeout_secs, model=model, worker_args=worker_args,
      independent=kind == "side_by_side")


def ceiling(*, alone, side_by_side, allreduce_ms, workers):
  """N c / (c / e + a) from the examples/s of one worker alone and of N
  side by side, and a's milliseconds; None where a figure is missing."""
  if not alone or not side_by_side or allreduce_ms is None:
    return None
  step_ms = 1000.0 * _BATCH / alone
  share = side_by_side / (workers * alone)
  return workers * step_ms / (step_ms / share + allreduce_ms)


def _allowed_ms(alone, side_by_side, workers, target):
  """The all-reduce (ms) that target T leaves: N c / T - c / e."""
  step_ms = 1000.0 * _BATCH / alone
  share = side_by_side / (workers * alone)
  return workers * step_ms / target - step_ms / share


def _ms_per_step(result):
  """Milliseconds a step of an allreduce run took (its slowest worker)."""
  if "error" in result:
    return None
  return 1000.0 * result["seconds"] / result["workers"][0]["timed_steps"]


def _median(values):
  values = [v for v in values if v is not None]
  return statistics.median(values) if values else None


def summarise(runs, models, worker_counts):
  """[{model, workers, alone, side_by_side, share, allreduce_ms,
  allreduce_4b_ms, ceiling, bare, bare_speedup, target, allowed_ms}]: the
  medians over rounds (failed runs left out)."""
  rows = []
  for model in models:
    for n in worker_counts:
      got = {kind: runs.get((model, n, kind), []) for kind in KINDS}
      rate = {kind: _median(r.get("examples_per_sec") for r in got[kind]
                            if "error" not in r)
              for kind in ("alone", "side_by_side", "bare")}
      allreduce_ms = _median(_ms_per_step(r) for r in got["allreduce"])
      row = {
          "model": model, "workers": n, "alone": rate["alone"],
          "side_by_side": rate["side_by_side"],
          "share": (rate["side_by_side"] / (n * rate["alone"])
                    if rate["alone"] and rate["side_by_side"] else None),
          "allreduce_ms": allreduce_ms,
          "allreduce_4b_ms": _median(_ms_per_step(r)
                                     for r in got["allreduce_4b"]),
          "ceiling": ceiling(alone=rate["alone"],
                             side_by_side=rate["side_by_side"],
                             allreduce_ms=allreduce_ms, workers=n),
          "bare": rate["bare"],
          "bare_speedup": (rate["bare"] / rate["alone"]
                           if rate["bare"] and rate["alone"] else None),
          "target": TARGETS.get((model, n)),
          "allowed_ms": None,
      }
      if row["target"] and rate["alone"] and rate["side_by_side"]:
        row["allowed_ms"] = _allowed_ms(rate["alone"], rate["side_by_side"],
                                        n, row["target"])
      rows.append(row)
  return rows


def _fmt(value, spec, suffix=""):
  return "n/a" if value is None else format(value, spec) + suffix


def _allowed(row):
  if row["target"] is None:
    return "-"
  if row["allowed_ms"] is None:
    return "n/a"
  if row["allowed_ms"] <= 0:
    return "none: the cores alone give less"
  return f"{row['allowed_ms']:.2f} ms"


def _table(rows):
  lines = [
      "| model | workers | alone (ex/s) | side by side (ex/s; share e of a "
      "core each keeps) | all-reduce of the gradients (ms) | 4-byte "
      "all-reduce (ms) | ceiling N c / (c / e + a) | bare loop measured | "
      "target | all-reduce the target allows |",
      "|---|---|---|---|---|---|---|---|---|---|"]
  for row in rows:
    mb = scaling_table.GRADIENT_BYTES.get(row["model"], 0) / 1e6
    lines.append(
        f"| {row['model']} | {row['workers']} | {_fmt(row['alone'], '.0f')} "
        f"| {_fmt(row['side_by_side'], '.0f')} (e = "
        f"{_fmt(row['share'], '.2f')}) | {_fmt(row['allreduce_ms'], '.2f')} "
        f"({mb:.2f} MB) | {_fmt(row['allreduce_4b_ms'], '.2f')} | "
        f"{_fmt(row['ceiling'], '.2f', 'x')} | "
        f"{_fmt(row['bare_speedup'], '.2f', 'x')} | "
        f"{_fmt(row['target'], '.2f', 'x') if row['target'] else '-'} | "
        f"{_allowed(row)} |")
  return lines


def _raw(runs, rounds):
  lines = ["| round | model | workers | run | examples/s | ms a step "
           "(all-reduce runs) | load1 before | error |",
           "|---|---|---|---|---|---|---|---|"]
  for i in range(rounds):
    for (model, n, kind), results in runs.items():
      if i < len(results):
        r = results[i]
        error = r.get("error", "").replace("\n", " ").replace("|", "/")
        rate = (None if kind.startswith("allreduce")
                else r.get("examples_per_sec"))
        ms = _ms_per_step(r) if kind.startswith("allreduce") else None
        lines.append(f"| {i + 1} | {model} | {n} | {kind} | "
                     f"{_fmt(rate, '.0f')} | {_fmt(ms, '.2f')} | "
                     f"{r['load1']:.2f} | {error[:160]} |")
  return lines


def render(*, rows, runs, command, rounds, warmup_steps, timed_steps,
           elapsed_secs, uptime_before, uptime_after, autogroup, cores=2):
  """The generated section for RESULTS.md, markers included."""
  begin, end = markers(cores)
  return "\n".join([
      begin,
      "## The ceiling of collective scaling here (bench.perf.ceiling)"
      + (f", {cores} cores" if cores > 2 else ""),
      "",
      *scaling_table.run_lines(
          command=command, rounds=rounds, elapsed_secs=elapsed_secs,
          uptime_before=uptime_before, uptime_after=uptime_after,
          autogroup=autogroup),
      f"Worker i under `taskset -c i`, {_BATCH} examples per worker per "
      f"step, {warmup_steps} warm-up + {timed_steps} timed steps; medians "
      "of the rounds. alone: the bare loop on one worker (c = 256 / its "
      "examples/s). side by side: N one-worker bare jobs, one a core, "
      "talking to no one (e = their sum / (N x alone)). all-reduce: N "
      "workers all-reducing the model's gradient bytes, and 4 bytes, with "
      "nothing else running (a; v1 `MultiWorkerMirroredStrategy`, the bare "
      "loop's session config, gRPC on 127.0.0.1). The ceiling is N c / "
      "(c / e + a) over one worker: a lockstep step computes for at least "
      "c / e and all-reduces for at least a, whatever loop drives it. The "
      "last column is the all-reduce issue 50's target leaves room for "
      "(N c / T - c / e).",
      "",
      *_table(rows),
      "",
      *scaling_table.every_run(_raw(runs, rounds), end),
  ])


def readme_sentence(results_text):
  """The README's `ceiling` span from the 2-core section (mlp and cnn at 2
  workers), or None without it."""
  begin, end = markers()
  if begin not in results_text:
    return None
  text = results_text.split(begin, 1)[1].split(end, 1)[0]
  text = text.split("<details>", 1)[0]
  cells = {}
  for line in text.splitlines():
    parts = [p.strip() for p in line.strip("|").split("|")]
    if len(parts) == 10 and parts[1] == "2" and parts[0] in ("mlp", "cnn"):
      cells[parts[0]] = parts
  if set(cells) != {"mlp", "cnn"}:
    return None
  cnn, mlp = cells["cnn"], cells["mlp"]

  def share(cell):
    return cell.split("(e = ", 1)[1].rstrip(")")

  def ms(cell):
    return cell.split(" ", 1)[0]

  return (
      f"How far 2 workers can get on that machine is measured too (`python "
      f"-m bench.perf.ceiling`, bench/RESULTS.md): two CNN jobs side by "
      f"side that never talk each keep {share(cnn[3])} of a core's speed "
      f"(MLP: {share(mlp[3])}), and TensorFlow's all-reduce alone, with "
      f"nothing else running, takes {ms(mlp[4])} ms for the MLP's 1.1 MB "
      f"and {ms(cnn[4])} ms for the CNN's 1.4 MB ({mlp[5]} ms for 4 bytes). "
      f"So in those rounds 2 workers could train at most {cnn[6]} (CNN) "
      f"and {mlp[6]} (MLP) as fast as one, whatever loop drives them, and "
      f"the bare loop reached {cnn[7]} and {mlp[7]} (this machine's speed "
      f"moves between runs, so set each run's figures against its own)")


def _parse(argv):
  parser = argparse.ArgumentParser(prog="python -m bench.perf.ceiling",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--models", default="mlp,cnn",
                      help="comma-separated: mlp, cnn")
  parser.add_argument("--workers", default="2",
                      help="comma-separated worker counts >= 2 (one core "
                      "each)")
  parser.add_argument("--rounds", type=int, default=3)
  scaling.add_run_flags(parser)
  args = parser.parse_args(argv)
  args.model_names = args.models.split(",")
  bad = set(args.model_names) - set(scaling_table.GRADIENT_BYTES)
  if bad:
    parser.error(f"--models={args.models}: {sorted(bad)} unknown; use "
                 f"{', '.join(sorted(scaling_table.GRADIENT_BYTES))}.")
  try:
    args.worker_counts = [int(n) for n in args.workers.split(",")]
  except ValueError:
    parser.error(f"--workers={args.workers}: comma-separated integers.")
  if min(args.worker_counts) < 2:
    parser.error(f"--workers={args.workers}: each count must be >= 2 (one "
                 "worker alone is measured in every round).")
  cores = len(os.sched_getaffinity(0))
  if max(args.worker_counts) > cores:
    parser.error(f"--workers={args.workers} needs {max(args.worker_counts)}"
                 f" cores (one each), this process may use {cores}.")
  return args


def main(argv=None):
  """Runs the interleaved rounds, prints progress, writes `--out`."""
  argv = sys.argv[1:] if argv is None else argv
  args = _parse(argv)
  autogroup = scaling.share_nice_with_autogroup()
  start, uptime_before = time.time(), report.uptime()
  runs = {}
  for round_index in range(args.rounds):
    for model in args.model_names:
      for n in args.worker_counts:
        for kind in KINDS:
          result = _run(kind, model, n, args)
          runs.setdefault((model, n, kind), []).append(result)
          shown = (result["error"][:300] if "error" in result else
                   f"{_ms_per_step(result):.2f} ms a step"
                   if kind.startswith("allreduce") else
                   f"{result['examples_per_sec']:.0f} ex/s")
          print(f"round {round_index + 1}/{args.rounds} | {model} | {n} | "
                f"{kind} | {shown} | load1 {result['load1']:.2f}",
                flush=True)
  rows = summarise(runs, args.model_names, args.worker_counts)
  cores = len(os.sched_getaffinity(0))
  text = render(rows=rows, runs=runs,
                command="python -m bench.perf.ceiling" + "".join(
                    f" {a}" for a in argv),
                rounds=args.rounds, warmup_steps=args.warmup_steps,
                timed_steps=args.timed_steps,
                elapsed_secs=time.time() - start,
                uptime_before=uptime_before, uptime_after=report.uptime(),
                autogroup=autogroup, cores=cores)
  begin, end = markers(cores)
  report.write_section(args.out, text, begin=begin, end=end)
  if os.path.abspath(args.out) == scaling.RESULTS and cores == 2:
    with open(args.out, encoding="utf-8") as f:
      sentence = readme_sentence(f.read())
    if sentence and report.write_readme_span("ceiling", sentence):
      print("wrote the README's ceiling sentence")
  for line in _table(rows):
    print(line)
  print(f"wrote {args.out} ({time.time() - start:.0f} s)")
  return 0


if __name__ == "__main__":
  sys.exit(main())
