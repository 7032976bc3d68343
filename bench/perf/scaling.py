"""Multi-worker scaling: N workers on N cores, harness beside the limit.

    nice -n -20 python -m bench.perf.scaling --model=mlp     # 1 vs 2; ~6 min
    nice -n -20 python -m bench.perf.scaling --model=cnn --timed_steps=200
    nice -n -20 python -m bench.perf.scaling --workers=1,2,4,8 \\
        --runners=harness,bare
    nice -n -20 python -m bench.perf.scaling --strategy=ps --model=wide \
        --workers=1,2 --runners=harness,bare --steps_per_loop=auto,1

A cluster on 127.0.0.1 (ports picked by binding port 0,
`harness.launch.build_tf_configs`); trainer i runs under `taskset -c i`
(ps tasks on the cores after the trainers'), each a child process
(`python -m bench.perf.scaling_worker`, its own TF_CONFIG) training `--model` at
batch 256 PER WORKER on in-memory data, warm-up then timed steps. Runners
(`--runners`): harness (`harness.Estimator.train` with harness's defaults),
bare (the same graph and strategy under a plain `session.make_callable`
loop, `bench.perf.scaling_runners`), keras (tf-keras `fit` under TF2
`MultiWorkerMirroredStrategy`) and estimator215 (tf.estimator 2.15's
`train_and_evaluate` on TensorFlow 2.15, its tasks run by the python of
`python -m bench.tf215.tf215_env`). Global examples/s = workers x 256 x timed
steps / seconds of the slowest worker (ps: the sum of each trainer's
examples/s). Every (runner, workers) setup runs
once per round, interleaved, for `--rounds` rounds; ratios are medians of
per-round ratios (`bench.perf.scaling_table`), written into bench/RESULTS.md
between the section markers of the model and strategy. Run it under `nice
-n -20` as root: the session's scheduler autogroup is given the same nice
(`share_nice_with_autogroup`), else other sessions' load takes its share
from every worker, which a lockstep collective step pays for twice.

This module imports no TensorFlow (only its children do).
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from bench import report
from bench.perf import scaling_table
from bench.perf import scaling_worker
from bench.tf215 import tf215_env
from harness import launch

__all__ = ["Setup", "run_setup", "worker_python", "share_nice_with_autogroup",
           "add_run_flags", "main", "BEGIN", "END", "RESULTS"]

Setup = scaling_table.Setup
BEGIN, END = scaling_table.markers("mlp")

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_BATCH_PER_WORKER = 256
RESULTS = os.path.join(_ROOT, "bench", "RESULTS.md")


def _worker_env(name, tf_config, runner=None):
  env = dict(os.environ)
  env.update({"TF_CONFIG": json.dumps(tf_config), "HARNESS_TASK": name,
              "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
              "PYTHONUNBUFFERED": "1"})
  if runner == "estimator215":  # TF 2.15's own Keras; no tf_keras there.
    del env["TF_USE_LEGACY_KERAS"]
  return env


def _stop(procs):
  """SIGKILLs the process group of each of our children still running."""
  for proc in procs:
    if proc.poll() is None:
      try:
        os.killpg(proc.pid, signal.SIGKILL)  # Its own group: only it.
      except ProcessLookupError:
        pass
  for proc in procs:
    try:
      proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
      pass


def share_nice_with_autogroup():
  """Gives this session's scheduler autogroup this process's nice value.

  With `kernel.sched_autogroup_enabled` (Linux's default) CPU time is
  shared between sessions first and by nice only inside one, so `nice -n
  -20` alone does not lift a benchmark above other sessions' load. The
  workers stay in this session (their own process group, not session) and
  the session's autogroup gets our nice (root only; silently skipped
  otherwise). Returns the autogroup line after, or None.
  """
  path = "/proc/self/autogroup"
  try:
    niceness = os.nice(0)
    if niceness < 0:
      with open(path, "w", encoding="utf-8") as f:
        f.write(str(niceness))
    with open(path, encoding="utf-8") as f:
      return f.read().strip()
  except OSError:
    return None


def _tail(path, chars=600):
  with open(path, encoding="utf-8", errors="replace") as f:
    return f.read()[-chars:]


def _parse_result(path):
  with open(path, encoding="utf-8", errors="replace") as f:
    for line in f:
      if line.startswith(scaling_worker.RESULT_PREFIX):
        return json.loads(line[len(scaling_worker.RESULT_PREFIX):])
  return None


def worker_python(runner):
  """The python a task of `runner` runs under: this one, or for
  estimator215 the tf.estimator 2.15 venv's (`bench.tf215.tf215_env`)."""
  if runner != "estimator215":
    return sys.executable
  python = tf215_env.python_of(tf215_env.DEFAULT_VENV_DIR)
  if not os.path.exists(python):
    raise FileNotFoundError(
        f"the estimator215 runner runs under {python}, which is missing: "
        "make it with `python -m bench.tf215.tf215_env` (python3.11 and "
        "PyPI, once).")
  return python


def run_setup(setup, *, warmup_steps, timed_steps, timeout_secs,
              model="mlp", worker_args=(), ps=0, independent=False):
  """Runs one cluster to completion; returns its result dict.

  Args:
    setup: which Setup.
    warmup_steps, timed_steps: per worker (multiples of steps_per_loop).
    timeout_secs: the whole cluster is killed after this many seconds.
    model: mlp, cnn or wide.
    worker_args: more `bench.perf.scaling_worker` flags (--runner, --strategy,
      communication options, threads).
    ps: parameter-server tasks (with --strategy=ps), on the cores after
      the workers' (or the last core when there are none left).
    independent: `setup.workers` one-worker clusters side by side, worker i
      on core i, none talking to another (no ps): what the cores give
      without communication. Their rates add up.

  Returns:
    {"examples_per_sec", "seconds" (slowest worker), "first_step_secs"
    (latest worker), "peak_rss_mib" (largest), "workers": [worker results],
    "load1"}, or with "error" set when a worker failed or timed out.
  """
  python = worker_python(setup.runner)
  load1 = os.getloadavg()[0]
  if independent:
    if ps:
      raise ValueError("independent=True runs one-worker clusters: no ps.")
    tf_configs = {f"worker/{i}": next(iter(launch.build_tf_configs(
        workers=1, ps=0).values())) for i in range(setup.workers)}
  else:
    tf_configs = launch.build_tf_configs(workers=setup.workers, ps=ps)
  trainers = [n for n in tf_configs if not n.startswith("ps/")]
  tmp = tempfile.mkdtemp(prefix="bench_scaling_")
  procs, logs, servers = [], [], []
  cores = sorted(os.sched_getaffinity(0))
  try:
    t0 = time.time()
    for core, name in enumerate(trainers + [n for n in tf_configs
                                            if n.startswith("ps/")]):
      tf_config = tf_configs[name]
      argv = ["taskset", "-c", str(cores[min(core, len(cores) - 1)]),
              python, "-m", "bench.perf.scaling_worker",
              f"--model_dir={tmp}/model",
              f"--model={model}",
              f"--batch_size={_BATCH_PER_WORKER}",
              f"--warmup_steps={warmup_steps}",
              f"--timed_steps={timed_steps}",
              f"--steps_per_loop={setup.steps_per_loop}", f"--t0={t0}",
              *worker_args]
      log_path = os.path.join(tmp, f"{name.replace('/', '-')}.log")
      with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            argv, cwd=_ROOT, env=_worker_env(name, tf_config, setup.runner), stdout=log,
            stderr=subprocess.STDOUT, process_group=0)
      if name.startswith("ps/"):
        servers.append(proc)
      else:
        procs.append(proc)
        logs.append(log_path)
    deadline = time.monotonic() + timeout_secs
    timed_out = False
    for proc in procs:
      try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        timed_out = True
        break
    _stop(procs + servers)
    results = [_parse_result(path) for path in logs]
    failures = [
        f"worker/{i}: exit {p.returncode}: {_tail(path)}"
        for i, (p, path, r) in enumerate(zip(procs, logs, results))
        if r is None]
    failures += [f"worker/{i}: {r['error']}" for i, r in enumerate(results)
                 if r is not None and "error" in r]
  finally:
    _stop(procs + servers)
    shutil.rmtree(tmp, ignore_errors=True)
  if timed_out:
    return {"error": f"timed out after {timeout_secs} s", "load1": load1,
            "workers": results}
  if failures:
    return {"error": failures[0], "load1": load1, "workers": results}
  replicas = {r["replicas"] for r in results}
  expected = 1 if independent else setup.workers
  if replicas != {expected}:
    return {"error": f"replicas in sync {replicas}, expected "
                     f"{expected}", "load1": load1, "workers": results}
  seconds = max(r["seconds"] for r in results)
  # Lockstep: every worker's steps end with the slowest. Parameter servers
  # and independent workers: each at its own pace; their rates add up.
  rate = (setup.workers * _BATCH_PER_WORKER * timed_steps / seconds
          if ps == 0 and not independent else sum(
              _BATCH_PER_WORKER * r["timed_steps"] / r["seconds"]
              for r in results))
  return {
      "examples_per_sec": rate,
      "seconds": seconds,
      "first_step_secs": max(r["first_step_secs"] for r in results),
      "peak_rss_mib": max(r["peak_rss_mib"] for r in results),
      "workers": results,
      "load1": load1,
  }


def _parse(argv):
  parser = argparse.ArgumentParser(prog="python -m bench.perf.scaling",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--model", choices=sorted(scaling_table.
                                                MODEL_DESCRIPTIONS),
                      default="mlp")
  parser.add_argument("--strategy", choices=("collective", "ps"),
                      default="collective")
  parser.add_argument("--ps", type=int, default=2,
                      help="parameter-server tasks with --strategy=ps")
  parser.add_argument("--workers", default="1,2",
                      help="comma-separated worker counts (one core each)")
  parser.add_argument("--runners", default="harness,bare,keras",
                      help="comma-separated: harness, bare, keras")
  parser.add_argument("--steps_per_loop", default="auto",
                      help="harness runner: comma-separated K values (an "
                      "integer or auto), each run as its own setup")
  parser.add_argument("--worker_flags", default="",
                      help="more bench.perf.scaling_worker flags for every "
                      "task, space-separated (e.g. --bytes_per_pack=0)")
  add_run_flags(parser)
  args = parser.parse_args(argv)
  args.worker_counts = [int(n) for n in args.workers.split(",")]
  args.runner_names = args.runners.split(",")
  args.loops = args.steps_per_loop.split(",")
  _check(parser, args)
  return args


def add_run_flags(parser):
  """The flags every run_setup caller takes: warm-up and timed steps, each
  run's timeout, the RESULTS file."""
  parser.add_argument("--warmup_steps", type=int, default=100)
  parser.add_argument("--timed_steps", type=int, default=400)
  parser.add_argument("--timeout_secs", type=int, default=600,
                      help="per cluster run")
  parser.add_argument("--out", default=RESULTS,
                      help="the RESULTS file; only bench/RESULTS.md's "
                      "figures are written into the README")


def _check(parser, args):
  runners = [r for r in scaling_worker.RUNNERS if r != "allreduce"]
  if "allreduce" in args.runner_names:
    parser.error(f"--runners={args.runners}: allreduce trains nothing (its "
                 "examples/s mean nothing); `python -m bench.perf.ceiling` "
                 "runs it.")
  unknown = set(args.runner_names) - set(runners)
  if unknown:
    parser.error(f"--runners={args.runners}: {sorted(unknown)} unknown; "
                 f"use {', '.join(runners)}.")
  needed = max(args.worker_counts) + (args.ps if args.strategy == "ps"
                                      else 0)
  cores = len(os.sched_getaffinity(0))
  if cores < max(args.worker_counts):
    parser.error(f"--workers={args.workers} needs {max(args.worker_counts)}"
                 f" cores (one each), this process may use {cores}.")
  if needed > cores:
    print(f"note: {needed} tasks on {cores} cores: ps tasks share the last "
          "core", flush=True)
  for k in args.loops:
    if k == "auto":
      if args.strategy != "ps" and (args.warmup_steps % 100
                                    or args.timed_steps % 100):
        parser.error("--steps_per_loop=auto runs 100 steps a loop here "
                     "(the cadence bound): --warmup_steps and "
                     "--timed_steps must be multiples of 100.")
    elif not k.isdigit() or int(k) < 1 or args.warmup_steps % int(k) or (
        args.timed_steps % int(k)):
      parser.error(f"--steps_per_loop value {k} must be auto or an integer "
                   f">= 1 dividing --warmup_steps={args.warmup_steps} and "
                   f"--timed_steps={args.timed_steps}.")


def _setups(args):
  setups = []
  for n in args.worker_counts:
    for runner in args.runner_names:
      loops = args.loops if runner.startswith("harness") else ["1"]
      setups += [Setup(runner=runner, workers=n, steps_per_loop=k)
                 for k in loops]
  return setups


def _worker_args(args, setup):
  extra = [f"--runner={setup.runner}", f"--strategy={args.strategy}"]
  if setup.runner.startswith("harness"):
    extra.append("--harness_defaults")
  return extra + args.worker_flags.split()


def main(argv=None):
  """Runs the interleaved setups, prints progress, writes `--out`."""
  args = _parse(argv)
  autogroup = share_nice_with_autogroup()
  setups = _setups(args)
  start = time.time()
  uptime_before = report.uptime()
  runs = {s: [] for s in setups}
  for round_index in range(args.rounds):
    for setup in setups:
      k = setup.steps_per_loop
      result = run_setup(
          Setup(runner=setup.runner, workers=setup.workers,
                steps_per_loop="0" if k == "auto" else k),
          warmup_steps=args.warmup_steps, timed_steps=args.timed_steps,
          timeout_secs=args.timeout_secs, model=args.model,
          worker_args=_worker_args(args, setup),
          ps=args.ps if args.strategy == "ps" else 0)
      runs[setup].append(result)
      shown = (f"{result['examples_per_sec']:.0f} ex/s"
               if "error" not in result else result["error"][:300])
      print(f"round {round_index + 1}/{args.rounds} | {setup.label} | "
            f"{shown} | load1 {result['load1']:.2f}", flush=True)
  command = "python -m bench.perf.scaling" + "".join(
      f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
  text = scaling_table.render(
      setups=setups, runs=runs, command=command, rounds=args.rounds,
      warmup_steps=args.warmup_steps, timed_steps=args.timed_steps,
      elapsed_secs=time.time() - start, uptime_before=uptime_before,
      uptime_after=report.uptime(), model=args.model,
      strategy=args.strategy, autogroup=autogroup,
      batch_per_worker=_BATCH_PER_WORKER, ps=args.ps,
      cores=len(os.sched_getaffinity(0)))
  begin, end = scaling_table.markers(args.model, args.strategy,
                                     len(os.sched_getaffinity(0)))
  report.write_section(args.out, text, begin=begin, end=end)
  if os.path.abspath(args.out) == RESULTS:  # Not a scratch copy's.
    with open(args.out, encoding="utf-8") as f:
      sentence = scaling_table.readme_sentence(f.read())
    if sentence and report.write_readme_span("scaling", sentence):
      print("wrote the README's scaling sentence")
  for what, med, each in scaling_table.speedups(setups, runs):
    print(f"{what}: {'n/a' if med is None else f'{med:.2f}x'} "
          f"(rounds: {', '.join(f'{r:.2f}' for r in each)})")
  print(f"wrote {args.out} ({time.time() - start:.0f} s)")
  return 0


if __name__ == "__main__":
  sys.exit(main())
