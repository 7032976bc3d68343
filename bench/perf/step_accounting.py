"""Counts what a collective training step runs: harness beside the bare loop.

    nice -n 10 python -m bench.perf.step_accounting   # mlp, 3 setups; ~3 min
    nice -n 10 python -m bench.perf.step_accounting --model=cnn --setups=bare:1

Counts, not timings (issue 50). Each setup (`--setups`, runner:K) is a
2-worker collective cluster on 127.0.0.1 training the bench graph
(`bench.perf.scaling_runners`, 256 examples per worker): ``bare``, its
`make_callable` loop (K = 1); ``harness``, `Estimator.train` with
RunConfig's defaults and `steps_per_loop` K (auto: 100 under collective).
Every `session.run` is traced (`FULL_TRACE`): ops executed by type,
collectives and their bytes, steps made (executions of one optimizer
update), each op's traced time (in the process: less sensitive to other
processes' load than wall time; tracing slows every op). A run is named by
the hook that called `session.run` (else the first function outside
TensorFlow) and the hooks that added fetches. Printed (markdown) per
worker, per 100 of the `--counted_steps`: runs by kind, collectives, op
types against the first setup's, threads' CPU ticks, summaries written.
"""

import argparse
import collections
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench import configs
from bench.perf import scaling_runners
from harness import launch

__all__ = ["main", "summarise"]

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])  # the repository
_SHARED = ("model", "warmup_steps", "counted_steps", "batch_size")


def _thread_ticks():
  """{native thread id: (name, utime + stime ticks)} of this process."""
  ticks = {}
  for tid in os.listdir("/proc/self/task"):
    try:
      with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as f:
        name, rest = f.read().split(" (", 1)[1].rsplit(") ", 1)
    except OSError:  # The thread ended.
      continue
    fields = rest.split()
    ticks[int(tid)] = (name, int(fields[11]) + int(fields[12]))
  return ticks


def _names(value):
  value = list(value.values()) if isinstance(value, dict) else value
  if isinstance(value, (list, tuple)):
    return sorted(n for v in value for n in _names(v))
  return [] if value is None else [getattr(value, "name", repr(value))]


def _describe(fetches):
  """{who added it ("caller" or a hook's class): [fetch names]}."""
  if not isinstance(fetches, dict):
    return {"caller": _names(fetches)}
  return {k if isinstance(k, str) else type(k).__name__: _names(v)
          for k, v in fetches.items()}


def _count(meta):
  """A traced run's op executions and traced us by op type, collectives
  ([op, name, output bytes, us]), steps (executions of one optimizer
  update) and span (first op start to last op end, us)."""
  ops, op_us, updates = (collections.Counter() for _ in range(3))
  collectives, first, last = [], None, None
  for device in meta.step_stats.dev_stats:
    for node in device.node_stats:
      label = node.timeline_label
      kind = (label.split(" = ")[-1].split("(")[0].strip() if " = " in label
              else node.node_name)
      ops[kind] += 1
      op_us[kind] += node.all_end_rel_micros
      end = node.all_start_micros + node.all_end_rel_micros
      first = min(first or node.all_start_micros, node.all_start_micros)
      last = max(last or end, end)
      if kind.startswith("ResourceApply"):
        updates[node.node_name] += 1
      if kind.startswith("Collective"):
        collectives.append([kind, node.node_name, sum(
            o.tensor_description.allocation_description.requested_bytes
            for o in node.output), node.all_end_rel_micros])
  return {"ops": dict(ops), "op_us": dict(op_us), "collectives": collectives,
          "steps": max(updates.values()) if updates else 0,
          "span_us": (last - first) if first is not None else 0}


class _Recorder:
  """Traces every session.run of this process; keeps the window's runs."""

  def __init__(self, tf, warmup, counted):
    self._tf = tf
    self._hook_types = (tf.compat.v1.train.SessionRunHook,
                        tf.compat.v1.train.CheckpointSaverListener)
    self._lock = threading.Lock()
    self.warmup, self.end = warmup, warmup + counted
    self.steps, self.runs, self.ticks = 0, [], [None, None]

  def install(self):
    """Patches tf.compat.v1.Session's run and make_callable."""
    session_class = self._tf.compat.v1.Session
    run, make_callable = session_class.run, session_class.make_callable

    def traced_run(session, fetches, feed_dict=None, options=None,
                   run_metadata=None):
      return self._traced(lambda o, m: run(session, fetches, feed_dict, o, m),
                          fetches, options, run_metadata)

    def traced_make_callable(session, fetches, feed_list=None, **_):
      call = make_callable(session, fetches, feed_list, accept_options=True)
      return lambda *args: self._traced(
          lambda o, m: call(*args, options=o, run_metadata=m), fetches)

    session_class.run = traced_run
    session_class.make_callable = traced_make_callable

  def _traced(self, call, fetches, options=None, meta=None):
    meta = self._tf.compat.v1.RunMetadata() if meta is None else meta
    traced = self._tf.compat.v1.RunOptions(trace_level=3)  # FULL_TRACE
    traced.MergeFrom(options or traced)
    result = call(traced, meta)
    self._record(meta, _describe(fetches))
    return result

  def _caller(self):
    """The hook method that ran session.run, else the first function
    outside TensorFlow, this module and session wrappers' `run`."""
    frame, outside = sys._getframe(2), None  # pylint: disable=protected-access
    while frame is not None:
      code = frame.f_code
      if isinstance(frame.f_locals.get("self"), self._hook_types):
        return f"{type(frame.f_locals['self']).__name__}.{code.co_name}"
      if outside is None and "tensorflow" not in code.co_filename and (
          code.co_filename != __file__ and code.co_name != "run"):
        outside = (os.path.splitext(os.path.basename(code.co_filename))[0]
                   + "." + code.co_name)
      frame = frame.f_back
    return outside or "?"

  def _record(self, meta, fetched):
    run = _count(meta)
    with self._lock:
      if self.steps < self.end and self.steps + max(run["steps"], 1) > (
          self.warmup):
        self.runs.append(dict(run, caller=self._caller(), fetched=fetched))
      self.steps += run["steps"]
      for i, bound in enumerate((self.warmup, self.end)):
        if self.ticks[i] is None and self.steps >= bound:
          self.ticks[i] = _thread_ticks()

  def threads(self):
    """[thread name, CPU ticks in the window], busiest first."""
    start, end = self.ticks
    names = {t.native_id: t.name for t in threading.enumerate()}
    rows = [[names.get(tid, name), ticks - start.get(tid, (name, 0))[1]]
            for tid, (name, ticks) in (end or {}).items() if start]
    return sorted((r for r in rows if r[1]), key=lambda r: -r[1])


def _bare(args):
  scaling_runners.RUNNERS["bare"](argparse.Namespace(
      model=args.model, strategy="collective", implementation="auto",
      bytes_per_pack=0, scoped_allocator="default", threads=0,
      batch_size=args.batch_size, trace=False), argparse.Namespace(
          step_done=lambda: None, total_steps=args.warmup_steps
          + args.counted_steps))


def _harness(args):
  """Estimator.train: RunConfig's defaults, K, the v1 collective strategy
  (no graph.pbtxt, as bench.scaling: the data is a 25 MB constant)."""
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  import harness  # pylint: disable=g-import-not-at-top
  images, labels = scaling_runners.model_data(args.model)

  def input_fn(input_context):
    return tf.data.Dataset.from_tensor_slices(({"x": images}, labels)).shard(
        input_context.num_input_pipelines, input_context.input_pipeline_id
    ).repeat().batch(args.batch_size)

  def model_fn(features, labels, mode):
    loss, train_op = scaling_runners.train_op(tf, args.model, features["x"],
                                              labels)
    return harness.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

  config = harness.RunConfig(
      model_dir=args.model_dir, tf_random_seed=configs.SEED,
      train_distribute=tf.compat.v1.distribute.experimental.
      MultiWorkerMirroredStrategy(), checkpoint_save_graph_def=False,
      steps_per_loop="auto" if args.k == "auto" else int(args.k))
  harness.Estimator(model_fn=model_fn, config=config).train(
      input_fn, max_steps=args.warmup_steps + args.counted_steps)


def _child(args):
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  recorder = _Recorder(tf, args.warmup_steps, args.counted_steps)
  recorder.install()
  (_harness if args.runner == "harness" else _bare)(args)
  written = collections.Counter(  # Summaries written in the window.
      value.tag
      for path in tf.io.gfile.glob(f"{args.model_dir}/events.out.tfevents*")
      for event in tf.compat.v1.train.summary_iterator(path)
      if recorder.warmup < event.step <= recorder.end
      for value in event.summary.value)
  with open(args.out, "w", encoding="utf-8") as f:
    json.dump({"task": os.environ.get("HARNESS_TASK", "?"),
               "runs": recorder.runs, "threads": recorder.threads(),
               "writes": dict(written)}, f)
  return 0


def _run_cluster(runner, k, args, tmp):
  """Runs one setup's cluster; returns each worker's result dict."""
  procs = []
  for name, tf_config in launch.build_tf_configs(workers=2).items():
    out = os.path.join(tmp, f"{runner}-{k}-{name.replace('/', '-')}.json")
    child = json.dumps({"runner": runner, "k": k, "out": out,
                        "model_dir": f"{tmp}/{runner}-{k}"})
    with open(out + ".log", "w", encoding="utf-8") as log:
      procs.append((out, subprocess.Popen(
          [sys.executable, "-m", __spec__.name, f"--child={child}",
           *(f"--{f}={getattr(args, f)}" for f in _SHARED)], cwd=_ROOT,
          stdout=log, stderr=subprocess.STDOUT, process_group=0, env=dict(
              os.environ, TF_CONFIG=json.dumps(tf_config), HARNESS_TASK=name,
              TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2"))))
  deadline = time.monotonic() + args.timeout_secs
  for _, proc in procs:
    try:
      proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
      os.killpg(proc.pid, signal.SIGKILL)  # Its own group: only it.
      proc.wait(timeout=10)
  results = []
  for out, proc in procs:
    if proc.returncode or not os.path.exists(out):
      with open(out + ".log", encoding="utf-8", errors="replace") as f:
        raise RuntimeError(f"{out}: exit {proc.returncode}: "
                           f"{f.read()[-1500:]}")
    with open(out, encoding="utf-8") as f:
      results.append(json.load(f))
  return results


def _kind(run):
  hooks = ", ".join(sorted(k for k in run["fetched"] if k != "caller"))
  return run["caller"] + (f" (+{hooks})" if hooks else "")


def summarise(result):
  """One worker's window per 100 steps: "runs" by kind (per_100, per run:
  steps, ops, collectives, span_ms [median, min]), "ops" and "op_ms" by
  type, "collectives" [count, bytes, traced ms] by op and output size,
  "threads" [[name, CPU ticks]], "writes" (summaries by tag)."""
  runs = result["runs"]
  steps = sum(r["steps"] for r in runs)
  if not steps:
    raise RuntimeError(f"{result['task']}: no training step in the window")
  per = 100 / steps
  kinds, coll = collections.defaultdict(list), collections.defaultdict(
      lambda: [0, 0, 0])
  ops, op_us = collections.Counter(), collections.Counter()
  for run in runs:
    kinds[_kind(run)].append(run)
    ops.update(run["ops"])
    op_us.update(run["op_us"])
    for kind, _, size, micros in run["collectives"]:
      for i, value in enumerate((1, size, micros / 1e3)):
        coll[f"{kind} {size} B"][i] += value * per
  mean = lambda v, f: sum(map(f, v)) / len(v)
  return {
      "task": result["task"], "steps": steps,
      "runs": {k: {"per_100": len(v) * per,
                   "steps_per_run": mean(v, lambda r: r["steps"]),
                   "ops_per_run": mean(v, lambda r: sum(r["ops"].values())),
                   "collectives_per_run": mean(
                       v, lambda r: len(r["collectives"])),
                   "span_ms": [statistics.median(r["span_us"] for r in v)
                               / 1e3, min(r["span_us"] for r in v) / 1e3]}
               for k, v in kinds.items()},
      "ops": {k: v * per for k, v in ops.items()},
      "op_ms": {k: v * per / 1e3 for k, v in op_us.items()},
      "collectives": dict(coll),
      "threads": [[name, ticks * per] for name, ticks in result["threads"]],
      "writes": result["writes"]}


def _markdown(label, summary, base):
  lines = [f"### {label}, {summary['task']} ({summary['steps']} steps "
           "counted; per 100 steps)", "", "| session.run kind | runs | "
           "steps/run | ops/run | collectives/run | traced span ms (median, "
           "min) |", "|---|---|---|---|---|---|"]
  lines += [f"| {kind} | {r['per_100']:.1f} | {r['steps_per_run']:.0f} | "
            f"{r['ops_per_run']:.0f} | {r['collectives_per_run']:.1f} | "
            "{:.2f}, {:.2f} |".format(*r["span_ms"])
            for kind, r in sorted(summary["runs"].items(),
                                  key=lambda kv: -kv[1]["per_100"])]
  lines += ["", "| collective (output bytes) | count | MB | traced ms |",
            "|---|---|---|---|"] + [
                f"| {k} | {c:.0f} | {b / 1e6:.2f} | {ms:.1f} |"
                for k, (c, b, ms) in sorted(summary["collectives"].items())]
  lines += ["", f"op executions {sum(summary['ops'].values()):.0f}, traced "
            f"op time {sum(summary['op_ms'].values()):.0f} ms"]
  if base is not None:
    rows = sorted(((kind, *(d["ops"].get(kind, 0) for d in (base, summary)),
                    summary["op_ms"].get(kind, 0) - base["op_ms"].get(kind, 0))
                   for kind in set(summary["ops"]) | set(base["ops"])),
                  key=lambda r: -abs(r[2] - r[1]))
    lines += ["", "| op type | first setup | this | difference | traced ms "
              "difference |", "|---|---|---|---|---|"] + [
                  f"| {k} | {b:.0f} | {t:.0f} | {t - b:+.0f} | {ms:+.1f} |"
                  for k, b, t, ms in rows if abs(t - b) >= 0.5]
  return lines + ["", "threads' CPU ticks (1/100 s): " + ", ".join(
      f"{name} {ticks:.0f}" for name, ticks in summary["threads"][:8]),
                  f"summaries written: {summary['writes']}"]


def _parse(argv):
  parser = argparse.ArgumentParser(prog="python -m bench.perf.step_accounting",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
  parser.add_argument("--setups", default="bare:1,harness:1,harness:auto",
                      help="comma-separated runner:K; op counts are "
                      "compared with the first setup's")
  parser.add_argument("--warmup_steps", type=int, default=100)
  parser.add_argument("--counted_steps", type=int, default=200)
  parser.add_argument("--batch_size", type=int, default=256)
  parser.add_argument("--timeout_secs", type=int, default=280,
                      help="per cluster")
  parser.add_argument("--json", default="", help="also write the summaries")
  parser.add_argument("--child", default="", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.child:  # A worker: runner, k, model_dir, out.
    vars(args).update(json.loads(args.child))
    return args
  args.setup_list = [tuple(s.split(":")) for s in args.setups.split(",")]
  bad = [s for s in args.setup_list if s != ("bare", "1") and not (
      s[0] == "harness" and len(s) == 2 and (s[1] == "auto" or s[1].isdigit()))]
  if bad:
    parser.error(f"--setups={args.setups}: {bad} are not runner:K (bare:1, "
                 "harness:K with K an integer or auto).")
  return args


def main(argv=None):
  """Runs each setup, prints its counts as markdown; returns 0."""
  args = _parse(sys.argv[1:] if argv is None else argv)
  if args.child:
    return _child(args)
  print(f"load average before: {os.getloadavg()}", flush=True)
  summaries, bases = {}, {}
  with tempfile.TemporaryDirectory(prefix="step_accounting_") as tmp:
    for runner, k in args.setup_list:
      label = f"{runner}, K={k}, {args.model}, 2 workers"
      for result in _run_cluster(runner, k, args, tmp):
        summary = summarise(result)
        summaries[f"{label}, {summary['task']}"] = summary
        base = bases.setdefault(summary["task"], summary)
        print("\n".join(_markdown(label, summary, None if base is summary
                                   else base)) + "\n", flush=True)
  print(f"load average after: {os.getloadavg()}", flush=True)
  if args.json:
    with open(args.json, "w", encoding="utf-8") as f:
      json.dump(summaries, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(main())
