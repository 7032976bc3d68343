"""TensorFlow's sparse-update kernels, and the wide model, across TF versions.

    nice -n -20 python -m bench.perf.sparse_kernels \\
        --pythons=.venv/bin/python,.venv-tf216/bin/python
    # each python is a venv with its own TensorFlow (tf_keras beside it from 2.16)

Each `--pythons` entry runs, under `taskset -c 0`, this module with `--child`:
one process on one core that times (`session.make_callable`, median of 5
batches of 300 runs)
* the kernels a sparse optimizer step runs, alone, on a [100,000, 16] float32
  variable with 1,024 unique row ids (and width 1 for Adagrad):
  `ResourceSparseApplyAdagrad`, `...AdagradV2`, `...Ftrl` (canned linear
  models' default) and `ResourceScatterAdd`;
* the wide model of `bench.perf.scaling_runners` (8 hashed columns of 100,000
  buckets, embedding 16 + linear, Adagrad), trained by a bare loop in one
  process: examples/s.
The pythons run interleaved, `--rounds` times; the section of bench/RESULTS.md
gives each TensorFlow's medians and its ratio to the fastest. This module
imports no TensorFlow in the parent.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

__all__ = ["KERNELS", "markers", "summarise", "render", "readme_sentence",
           "main"]

KERNELS = ("adagrad", "adagrad_v2", "ftrl", "scatter_add", "adagrad_w1")
_RESULT = "SPARSE_KERNELS "
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_ROWS, _IDS = 100_000, 1024


def markers():
  return ("<!-- bench.perf.sparse_kernels: generated section begins -->",
          "<!-- bench.perf.sparse_kernels: generated section ends -->")


def _time_ms(run, batches=5, runs=300):
  for _ in range(20):
    run()
  times = []
  for _ in range(batches):
    start = time.perf_counter()
    for _ in range(runs):
      run()
    times.append(1000.0 * (time.perf_counter() - start) / runs)
  return statistics.median(times)


def _kernel_ms(tf, np, kind):
  width = 1 if kind == "adagrad_w1" else 16
  with tf.Graph().as_default():
    def variable(name, value):
      return tf.compat.v1.get_variable(
          name, [_ROWS, width], use_resource=True,
          initializer=tf.compat.v1.constant_initializer(value))
    var, accum, linear = variable("v", 0.0), variable("a", 0.1), variable(
        "l", 0.0)
    ids = tf.constant(np.unique(np.random.default_rng(0).integers(
        0, _ROWS, _IDS)), tf.int64)
    grad = tf.ones([ids.shape[0], width])
    raw = tf.raw_ops
    if kind in ("adagrad", "adagrad_w1"):
      op = raw.ResourceSparseApplyAdagrad(
          var=var.handle, accum=accum.handle, lr=0.05, grad=grad, indices=ids)
    elif kind == "adagrad_v2":
      op = raw.ResourceSparseApplyAdagradV2(
          var=var.handle, accum=accum.handle, lr=0.05, epsilon=1e-7,
          grad=grad, indices=ids)
    elif kind == "ftrl":
      op = raw.ResourceSparseApplyFtrl(
          var=var.handle, accum=accum.handle, linear=linear.handle, grad=grad,
          indices=ids, lr=0.05, l1=0.0, l2=0.0, lr_power=-0.5)
    else:
      op = raw.ResourceScatterAdd(resource=var.handle, indices=ids,
                                  updates=grad)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      return _time_ms(session.make_callable(op))


def _wide_examples_per_sec(tf):
  from bench.perf import scaling_runners  # pylint: disable=g-import-not-at-top
  ids, labels = scaling_runners.model_data("wide")
  with tf.Graph().as_default():
    dataset = tf.data.Dataset.from_tensor_slices((ids, labels)).repeat().batch(
        256)
    x, y = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    _, train = scaling_runners.train_op(tf, "wide", x, y)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      step_ms = _time_ms(session.make_callable(train), batches=3, runs=100)
  return 256 * 1000.0 / step_ms


def _child():
  # tf_keras where this venv has it (TF >= 2.16: the v1 layers need it);
  # TF 2.15 has its own Keras 2, and the variable would make it look for one.
  if importlib.util.find_spec("tf_keras") is None:
    os.environ.pop("TF_USE_LEGACY_KERAS", None)
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  result = {"tensorflow": tf.__version__,
            "python": ".".join(map(str, sys.version_info[:3]))}
  for kind in KERNELS:
    result[kind] = _kernel_ms(tf, np, kind)
  try:
    result["wide"] = _wide_examples_per_sec(tf)
  except Exception as e:  # pylint: disable=broad-except
    result["wide_error"] = f"{type(e).__name__}: {str(e)[:200]}"
  print(_RESULT + json.dumps(result), flush=True)
  return 0


def _run_child(python, timeout_secs):
  if not os.path.exists(python):
    raise FileNotFoundError(f"--pythons: {python} does not exist.")
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=_ROOT,
             TF_USE_LEGACY_KERAS="1")  # The child drops it without tf_keras.
  out = subprocess.run(
      ["taskset", "-c", "0", python, "-m", "bench.perf.sparse_kernels",
       "--child"], cwd=_ROOT, env=env, capture_output=True, text=True,
      timeout=timeout_secs, check=False)
  for line in out.stdout.splitlines():
    if line.startswith(_RESULT):
      return json.loads(line[len(_RESULT):])
  return {"error": f"exit {out.returncode}: {out.stderr[-300:]}"}


def summarise(runs):
  """{python: {"tensorflow", kernel medians, "wide" median}} of the runs
  that did not fail."""
  rows = {}
  for python, results in runs.items():
    ok = [r for r in results if "error" not in r]
    if not ok:
      rows[python] = {"error": results[-1].get("error", "?")}
      continue
    row = {"tensorflow": ok[0]["tensorflow"], "python": ok[0]["python"]}
    for key in KERNELS + ("wide",):
      values = [r[key] for r in ok if key in r]
      row[key] = statistics.median(values) if values else None
    rows[python] = row
  return rows


def _fmt(value, spec):
  return "n/a" if value is None else format(value, spec)


def render(*, rows, command, rounds, elapsed_secs, uptime_before,
           uptime_after):
  """The section for RESULTS.md, markers included."""
  from bench import report  # pylint: disable=g-import-not-at-top
  begin, end = markers()
  ok = [r for r in rows.values() if "error" not in r]
  best = {key: min((r[key] for r in ok if r.get(key)), default=None)
          for key in KERNELS}
  best_wide = max((r["wide"] for r in ok if r.get("wide")), default=None)
  lines = [
      "| TensorFlow (Python) | Adagrad, w16 (ms) | AdagradV2, w16 | Ftrl, "
      "w16 | ScatterAdd, w16 | Adagrad, w1 | wide model, one process "
      "(examples/s) |", "|---|---|---|---|---|---|---|"]
  for row in sorted(ok, key=lambda r: [int(p) for p in r["tensorflow"]
                                       .split(".")[:2]]):
    cells = [f"{row['tensorflow']} ({row['python']})"]
    for key in KERNELS:
      ratio = (row[key] / best[key] if row[key] and best[key] else None)
      cells.append(f"{_fmt(row[key], '.3f')} ({_fmt(ratio, '.1f')}x)")
    wide_ratio = (row["wide"] / best_wide if row.get("wide") and best_wide
                  else None)
    cells.append(f"{_fmt(row.get('wide'), '.0f')} "
                 f"({_fmt(wide_ratio, '.2f')}x)")
    lines.append("| " + " | ".join(cells) + " |")
  failed = [f"- {p}: {r['error']}" for p, r in rows.items() if "error" in r]
  return "\n".join([
      begin,
      "## Sparse-update kernels across TensorFlow versions "
      "(bench.perf.sparse_kernels)",
      "",
      f"Run {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, "
      f"`{command}` (from the project root), {rounds} interleaved rounds, "
      f"{elapsed_secs:.0f} s in all.",
      "",
      report.machine(),
      f"- `uptime` before: {uptime_before}; after: {uptime_after}",
      "",
      "One process per TensorFlow under `taskset -c 0`. Kernels alone: ms a "
      f"run on a [{_ROWS:,}, 16] float32 variable (Adagrad also width 1), "
      f"{_IDS:,} random row ids made unique, median of 5 x 300 runs; in "
      "brackets, over the fastest TensorFlow. Wide model: "
      "`bench.perf.scaling_runners`'s (8 columns of 100,000 buckets, "
      "embedding 16 + linear, Adagrad 0.05, batch 256) by a bare "
      "`make_callable` loop in one process; in brackets, over the fastest. "
      "Medians of the rounds.",
      "",
      *lines,
      *([""] + failed if failed else []),
      end,
  ])


def _rows_of(results_text):
  """[(tensorflow, [kernel ratios, widths 16], wide ratio)] from the
  section's table, or [] without the section."""
  begin, end = markers()
  if begin not in results_text:
    return []
  text = results_text.split(begin, 1)[1].split(end, 1)[0]
  rows = []
  for line in text.splitlines():
    if not line.startswith("| 2.") and not line.startswith("| 1."):
      continue
    cells = [c.strip() for c in line.strip("|").split("|")]
    ratio = [float(c.rsplit("(", 1)[1].rstrip("x)")) if "(" in c and
             "n/a" not in c.rsplit("(", 1)[1] else None for c in cells[1:]]
    rows.append((cells[0].split(" ")[0], ratio[:4], ratio[5]))
  return rows


def readme_sentence(results_text):
  """The README's `sparse-kernels` span from the section: which
  TensorFlow versions ran the width-16 sparse kernels at 2x the fastest or
  slower, by how much, and the wide model there; None without the section
  or without both kinds of version."""
  rows = _rows_of(results_text)
  slow = [r for r in rows if any(x and x >= 2.0 for x in r[1])]
  fast = [r for r in rows if r not in slow]
  if not slow or not fast:
    return None
  kernels = [x for r in slow for x in r[1] if x]
  wides = [r[2] for r in slow if r[2]]
  wide = (f"{min(wides):.2f}" if min(wides) == max(wides)
          else f"{min(wides):.2f}-{max(wides):.2f}")

  def version(row):
    return tuple(int(p) for p in row[0].split(".")[:2])

  def names(group):
    names = [r[0] for r in group]
    return (names[0] if len(names) == 1 else
            ", ".join(names[:-1]) + " and " + names[-1])

  newest_fast = max(fast, key=version)[0].rsplit(".", 1)[0]
  span = (f"{min(kernels):.1f}" if f"{min(kernels):.1f}" == f"{max(kernels):.1f}"
          else f"{min(kernels):.1f}-{max(kernels):.1f}")
  return (
      f"On TensorFlow {names(slow)} the kernels that update embedding and "
      f"linear rows (sparse Adagrad and Ftrl, scatter-add) ran "
      f"{span}x as long as on {names(fast)}, "
      f"and the wide model trained at {wide}x the fastest version's speed "
      f"in one process (`python -m bench.perf.sparse_kernels`, one core, "
      f"bench/RESULTS.md). These are TensorFlow's kernels, not harness's: a "
      f"model dominated by embedding or linear columns trains up to "
      f"{1 / min(wides):.1f}x as fast on TensorFlow {newest_fast} or older "
      f"(harness admits 2.16 and newer)")


def _parse(argv):
  parser = argparse.ArgumentParser(prog="python -m bench.perf.sparse_kernels",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--child", action="store_true",
                      help="(internal) measure in this process")
  parser.add_argument("--pythons", default=sys.executable,
                      help="comma-separated venv pythons, one TensorFlow "
                      "each")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--timeout_secs", type=int, default=600,
                      help="per child")
  parser.add_argument("--out", default=os.path.join(_ROOT, "bench",
                                                    "RESULTS.md"))
  return parser.parse_args(argv)


def main(argv=None):
  argv = sys.argv[1:] if argv is None else argv
  args = _parse(argv)
  if args.child:
    return _child()
  from bench import report  # pylint: disable=g-import-not-at-top
  pythons = args.pythons.split(",")
  start, uptime_before = time.time(), report.uptime()
  runs = {p: [] for p in pythons}
  for round_index in range(args.rounds):
    for python in pythons:
      result = _run_child(python, args.timeout_secs)
      runs[python].append(result)
      print(f"round {round_index + 1}/{args.rounds} | {python} | "
            f"{json.dumps(result)[:300]}", flush=True)
  text = render(rows=summarise(runs),
                command="python -m bench.perf.sparse_kernels" + "".join(
                    f" {a}" for a in argv),
                rounds=args.rounds, elapsed_secs=time.time() - start,
                uptime_before=uptime_before, uptime_after=report.uptime())
  begin, end = markers()
  report.write_section(args.out, text, begin=begin, end=end)
  print(text)
  if os.path.abspath(args.out) == os.path.join(_ROOT, "bench", "RESULTS.md"):
    with open(args.out, encoding="utf-8") as f:
      sentence = readme_sentence(f.read())
    if sentence and report.write_readme_span("sparse-kernels", sentence):
      print("wrote the README's sparse-kernels sentence")
  return 0


if __name__ == "__main__":
  sys.exit(main())
