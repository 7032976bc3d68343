"""How fast a collective survivor notices a peer killed with SIGKILL.

    python -m bench.peer_loss               # 3 kills -> bench/RESULTS.md
    python -m bench.peer_loss --rounds=1 --out=/tmp/peer_loss.md

Each round runs the README's cluster without its evaluator,
`python -m harness.launch --workers=2 --max_restarts=1 -- python -m
harness.main --strategy=collective --model_fn=mnist_mlp --input_fn=synthetic
...`, waits until worker/1 logged a step, kills worker/1's process with
SIGKILL and reads the launcher's output, timestamped as it arrives:

* noticed: the survivor (worker/0) logged `lost peer` (its watch's
  warning or its PeerLostError);
* exited: the launcher logged `worker/0 exited` (its restart starts there);
* training again: both workers logged `starting at step` after the kill.

Then the launcher gets SIGTERM (it stops its tasks). Linux only (/proc).
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

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench.peer_loss: generated section begins -->"
END = "<!-- bench.peer_loss: generated section ends -->"
_START_SECS = 240
_AFTER_KILL_SECS = 240
_STOP_SECS = 60
_DEFAULT_OUT = os.path.join(_ROOT, "bench", "RESULTS.md")
# The documents whose `peer-loss` span states the figures.
_DOCS = (os.path.join(_ROOT, "README.md"),
         os.path.join(_ROOT, "docs", "RELIABILITY.md"))
_VICTIM = "worker/1"
_SURVIVOR = "worker/0"


class _Launch:
  """One `harness.launch` subprocess and its timestamped output lines."""

  def __init__(self, model_dir):
    command = [
        sys.executable, "-m", "harness.launch", "--workers=2",
        "--max_restarts=1", "--", sys.executable, "-m", "harness.main",
        "--strategy=collective", "--model_fn=mnist_mlp",
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


def run_once():
  """One kill; returns {'noticed', 'exited', 'training_again'} in s, or
  {'error': text}."""
  with tempfile.TemporaryDirectory(prefix="peer_loss_") as tmp:
    launch = _Launch(os.path.join(tmp, "model"))
    try:
      return _kill_and_watch(launch)
    finally:
      launch.stop()


def _kill_and_watch(launch):
  victim = re.escape(_VICTIM)
  if launch.wait(rf"^\[{victim}\].*\| step \d+/", _START_SECS) is None:
    return {"error": "no step of worker/1 within "
                     f"{_START_SECS} s: {launch.lines[-3:]}"}
  pid = launch.task_pid(_VICTIM)
  if pid is None:
    return {"error": "worker/1's process not found in /proc"}
  load1 = os.getloadavg()[0]
  killed = time.monotonic()
  os.kill(pid, signal.SIGKILL)
  survivor = re.escape(_SURVIVOR)
  noticed = launch.wait(rf"^\[{survivor}\].*lost peer", _AFTER_KILL_SECS,
                        killed)
  exited = launch.wait(rf"^launch \| {survivor} exited", _AFTER_KILL_SECS,
                       killed)
  again = [launch.wait(rf"^\[{re.escape(t)}\].*starting at step",
                       _AFTER_KILL_SECS, killed) for t in (_VICTIM, _SURVIVOR)]
  result = {"load1": load1, "message": next(
      (line.split("harness.main: ", 1)[-1][:150] for t, line in
       list(launch.lines) if t >= killed and re.search(
           rf"^\[{survivor}\].*PeerLostError", line)), None)}
  for name, when in (("noticed", noticed), ("exited", exited),
                     ("training_again", None if None in again else max(again))):
    result[name] = None if when is None else when - killed
  return result


def _fmt(value):
  return "-" if value is None else f"{value:.2f}"


def _median(runs, key):
  values = [r[key] for r in runs if r.get(key) is not None]
  return statistics.median(values) if values else None


def render(runs, *, command, elapsed_secs, uptime_before, uptime_after):
  rows = ["| kill | noticed (s) | survivor exited (s) | both training again "
          "(s) | load1 at kill | the survivor's error |",
          "|---|---|---|---|---|---|"]
  for i, r in enumerate(runs, 1):
    if "error" in r:
      rows.append(f"| {i} | error: {r['error'][:160]} | | | | |")
      continue
    rows.append(f"| {i} | {_fmt(r['noticed'])} | {_fmt(r['exited'])} | "
                f"{_fmt(r['training_again'])} | {r['load1']:.2f} | "
                f"`{r['message']}` |")
  return "\n".join([
      BEGIN,
      "## Peer loss: SIGKILL of a collective worker (bench.peer_loss)",
      "",
      f"`{command}` ({elapsed_secs:.0f} s; before: {uptime_before}; after: "
      f"{uptime_after}). Times from the SIGKILL of worker/1.",
      "",
      report.machine(),
      "",
      *rows,
      "",
      f"Median: noticed {_fmt(_median(runs, 'noticed'))} s, survivor exited "
      f"{_fmt(_median(runs, 'exited'))} s, both training again "
      f"{_fmt(_median(runs, 'training_again'))} s.",
      END,
  ])


def main(argv=None):
  argv = sys.argv[1:] if argv is None else argv
  parser = argparse.ArgumentParser(prog="python -m bench.peer_loss",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--out", default=_DEFAULT_OUT)
  args = parser.parse_args(argv)

  runs = []

  def measure():
    for i in range(args.rounds):
      runs.append(run_once())
      print(f"kill {i + 1}/{args.rounds}: {runs[-1]}", flush=True)
    return runs

  status = report.measure_and_write(
      "python -m bench.peer_loss", argv, measure, render, out=args.out,
      begin=BEGIN, end=END)
  if args.out == _DEFAULT_OUT and readme_sentence(runs):
    for doc in _DOCS:
      report.write_readme_span("peer-loss", readme_sentence(runs), doc)
  return status


def readme_sentence(runs):
  """The README's figures: the ranges over the kills that completed (None
  when one failed: the README keeps its figures then)."""
  if not runs or any("error" in r or r.get("noticed") is None
                     or r.get("exited") is None for r in runs):
    return None

  def span(key, digits=2):
    low, high = min(r[key] for r in runs), max(r[key] for r in runs)
    return f"{low:.{digits}f}-{high:.{digits}f}"
  return (f"a killed collective peer was noticed in {span('noticed')} s and "
          f"the survivor exited {span('exited')} s after the kill "
          f"({len(runs)} kills by `python -m bench.peer_loss` on a 2-core "
          f"machine, load {span('load1', 1)} at the kill)")


if __name__ == "__main__":
  sys.exit(main())
