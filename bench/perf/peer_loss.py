"""How fast the survivors notice a peer killed with SIGKILL, in two clusters.

    python -m bench.perf.peer_loss               # 3 kills a case -> RESULTS.md
    python -m bench.perf.peer_loss --rounds=1 --out=/tmp/peer_loss.md

The cases are the README's clusters without their evaluator, `python -m
harness.launch ... --max_restarts=1 -- python -m harness.main
--model_fn=mnist_mlp --input_fn=synthetic ...`:

* collective: `--workers=2`, `--strategy=collective`; worker/1 is killed,
  worker/0 survives;
* ps: `--chief --workers=1 --ps=1` (between-graph replication); ps/0 is
  killed, chief/0 and worker/0 survive.

Each round waits until the victim's trainers logged a step, kills the
victim's process with SIGKILL and reads the launcher's output, timestamped
as it arrives (figures from the kill; with two survivors, the later one):

* noticed: each survivor logged `lost peer` (its watch's warning or its
  PeerLostError);
* exited: the launcher logged `<survivor> exited` (its restart starts there);
* training again: every trainer logged `starting at step` after the kill.

Then the launcher gets SIGTERM (it stops its tasks). Linux only (/proc).
The README's and docs/RELIABILITY.md's `peer-loss` spans (collective) and
RELIABILITY's `peer-loss-ps` span state the ranges of the newest run.
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench import report

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BEGIN = "<!-- bench.perf.peer_loss: generated section begins -->"
END = "<!-- bench.perf.peer_loss: generated section ends -->"
_START_SECS = 240
_AFTER_KILL_SECS = 240
_STOP_SECS = 60
_DEFAULT_OUT = os.path.join(_ROOT, "bench", "RESULTS.md")
# The documents whose `peer-loss` span states the figures.
_DOCS = (os.path.join(_ROOT, "README.md"),
         os.path.join(_ROOT, "docs", "RELIABILITY.md"))
# case -> (launch flags, harness.main flags, victim, survivors, the task
# whose step shows the cluster trains).
CASES = {
    "collective": (["--workers=2"], ["--strategy=collective"], "worker/1",
                   ("worker/0",), "worker/1"),
    "ps": (["--chief", "--workers=1", "--ps=1"], [], "ps/0",
           ("chief/0", "worker/0"), "worker/0"),
}


class _Launch:
  """One `harness.launch` subprocess and its timestamped output lines."""

  def __init__(self, model_dir, launch_flags, main_flags):
    command = [
        sys.executable, "-m", "harness.launch", *launch_flags,
        "--max_restarts=1", "--", sys.executable, "-m", "harness.main",
        *main_flags, "--model_fn=mnist_mlp",
        "--input_fn=synthetic", f"--model_dir={model_dir}",
        "--max_steps=1000000"]
    self.model_dir = model_dir
    self.lines = []
    self.proc = subprocess.Popen(
        command, cwd=_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    threading.Thread(target=self._read, daemon=True).start()

  def _read(self):
    for line in self.proc.stdout:
      self.lines.append((time.monotonic(), line.rstrip("\n")))

  def first(self, pattern, after=0.0):
    """Time of the first line matching `pattern` at or after `after`."""
    return next((t for t, line in list(self.lines)
                 if t >= after and re.search(pattern, line)), None)

  def wait(self, pattern, timeout_secs, after=0.0):
    deadline = time.monotonic() + timeout_secs
    while time.monotonic() < deadline and self.proc.poll() is None:
      found = self.first(pattern, after)
      if found is not None:
        return found
      time.sleep(0.05)
    return self.first(pattern, after)

  def task_pid(self, task):
    """The pid of `task`'s harness.main process (HARNESS_TASK, model_dir)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
      try:
        with open(f"/proc/{pid}/environ", "rb") as f:
          env = f.read().split(b"\0")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
          cmdline = f.read().split(b"\0")
      except OSError:
        continue
      if (f"HARNESS_TASK={task}".encode() in env
          and b"harness.main" in cmdline
          and f"--model_dir={self.model_dir}".encode() in cmdline):
        return int(pid)
    return None

  def stop(self):
    if self.proc.poll() is None:
      self.proc.send_signal(signal.SIGTERM)
    try:
      self.proc.wait(_STOP_SECS)
    except subprocess.TimeoutExpired:
      os.killpg(self.proc.pid, signal.SIGKILL)
      self.proc.wait(_STOP_SECS)


def run_once(case="collective"):
  """One kill; returns {'noticed', 'exited', 'training_again'} in s (and
  'load1', 'message'), or {'error': text}."""
  launch_flags, main_flags, victim, survivors, trainer = CASES[case]
  with tempfile.TemporaryDirectory(prefix="peer_loss_") as tmp:
    launch = _Launch(os.path.join(tmp, "model"), launch_flags, main_flags)
    try:
      return _kill_and_watch(launch, victim, survivors, trainer)
    finally:
      launch.stop()


def _latest(times):
  return None if None in times else max(times)


def _kill_and_watch(launch, victim, survivors, trainer):
  if launch.wait(rf"^\[{re.escape(trainer)}\].*\| step \d+/",
                 _START_SECS) is None:
    return {"error": f"no step of {trainer} within "
                     f"{_START_SECS} s: {launch.lines[-3:]}"}
  pid = launch.task_pid(victim)
  if pid is None:
    return {"error": f"{victim}'s process not found in /proc"}
  load1 = os.getloadavg()[0]
  killed = time.monotonic()
  os.kill(pid, signal.SIGKILL)
  noticed = [launch.wait(rf"^\[{re.escape(t)}\].*lost peer", _AFTER_KILL_SECS,
                         killed) for t in survivors]
  exited = [launch.wait(rf"^launch \| {re.escape(t)} exited",
                        _AFTER_KILL_SECS, killed) for t in survivors]
  trainers = [t for t in (victim, *survivors) if not t.startswith("ps/")]
  again = [launch.wait(rf"^\[{re.escape(t)}\].*starting at step",
                       _AFTER_KILL_SECS, killed) for t in trainers]
  result = {"load1": load1, "message": next(
      (line.split("harness.main: ", 1)[-1][:150] for t, line in
       list(launch.lines) if t >= killed and re.search(
           rf"^\[{re.escape(survivors[0])}\].*PeerLostError", line)), None)}
  for name, when in (("noticed", _latest(noticed)),
                     ("exited", _latest(exited)),
                     ("training_again", _latest(again))):
    result[name] = None if when is None else when - killed
  return result


def _fmt(value):
  return "-" if value is None else f"{value:.2f}"


def _median(runs, key):
  values = [r[key] for r in runs if r.get(key) is not None]
  return statistics.median(values) if values else None


def render(cases, *, command, elapsed_secs, uptime_before, uptime_after):
  """The RESULTS.md section; `cases`: case -> its rounds' results."""
  rows = ["| case | kill | noticed (s) | survivors exited (s) | all training "
          "again (s) | load1 at kill | the first survivor's error |",
          "|---|---|---|---|---|---|---|"]
  medians = []
  for case, runs in cases.items():
    for i, r in enumerate(runs, 1):
      if "error" in r:
        rows.append(f"| {case} | {i} | error: {r['error'][:160]} | | | | |")
        continue
      rows.append(f"| {case} | {i} | {_fmt(r['noticed'])} | "
                  f"{_fmt(r['exited'])} | {_fmt(r['training_again'])} | "
                  f"{r['load1']:.2f} | `{r['message']}` |")
    medians.append(
        f"{case}: noticed {_fmt(_median(runs, 'noticed'))} s, survivors "
        f"exited {_fmt(_median(runs, 'exited'))} s, all training again "
        f"{_fmt(_median(runs, 'training_again'))} s.")
  victims = ", ".join(f"{case}: {CASES[case][2]}" for case in cases)
  return "\n".join([
      BEGIN,
      "## Peer loss: SIGKILL of a cluster task (bench.perf.peer_loss)",
      "",
      f"`{command}` ({elapsed_secs:.0f} s; before: {uptime_before}; after: "
      f"{uptime_after}). Times from the SIGKILL of the victim ({victims}).",
      "",
      report.machine(),
      "",
      *rows,
      "",
      "Median: " + " ".join(medians),
      END,
  ])


def main(argv=None):
  argv = sys.argv[1:] if argv is None else argv
  parser = argparse.ArgumentParser(prog="python -m bench.perf.peer_loss",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--out", default=_DEFAULT_OUT)
  args = parser.parse_args(argv)
  cases = {case: [] for case in CASES}

  def measure():
    for case, runs in cases.items():
      for i in range(args.rounds):
        runs.append(run_once(case))
        print(f"{case} kill {i + 1}/{args.rounds}: {runs[-1]}", flush=True)
    return cases

  status = report.measure_and_write(
      "python -m bench.perf.peer_loss", argv, measure, render, out=args.out,
      begin=BEGIN, end=END)
  if args.out == _DEFAULT_OUT:
    for span, case in (("peer-loss", "collective"), ("peer-loss-ps", "ps")):
      sentence = readme_sentence(cases[case], case)
      for doc in _DOCS:
        if sentence:
          report.write_readme_span(span, sentence, doc)
  return status


_SUBJECTS = {
    "collective": ("a killed collective peer was noticed in {noticed} s and "
                   "the survivor exited {exited} s after the kill"),
    "ps": ("a killed ps was noticed by both trainers (chief and worker) in "
           "{noticed} s, both exited {exited} s after the kill and trained "
           "again {again} s after it (the ps and both trainers restarted)"),
}


def readme_sentence(runs, case="collective"):
  """The docs' figures for `case`: ranges over the kills that completed
  (None when one failed: the docs keep their figures then)."""
  keys = ("noticed", "exited", "training_again")
  if not runs or any("error" in r or None in (r.get(k) for k in keys)
                     for r in runs):
    return None

  def span(key, digits=2):
    low, high = min(r[key] for r in runs), max(r[key] for r in runs)
    return f"{low:.{digits}f}-{high:.{digits}f}"
  subject = _SUBJECTS[case].format(noticed=span("noticed"),
                                   exited=span("exited"),
                                   again=span("training_again", 1))
  return (f"{subject} ({len(runs)} kills by `python -m bench.perf.peer_loss` "
          "on a "
          f"2-core machine, load {span('load1', 1)} at the kill)")


if __name__ == "__main__":
  sys.exit(main())
