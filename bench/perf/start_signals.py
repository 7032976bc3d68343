"""SIGTERM at every instant of start-up: 143 (or 0 if done), one line, always.

    python -m bench.perf.start_signals             # 0.1 .. 4.0 s, both doors
    python -m bench.perf.start_signals --door=plain --first=0.5 --last=1 \\
        --step=0.5
    python -m bench.perf.start_signals --from_handler   # from the first line

Each instant starts a fresh run and sends SIGTERM that many seconds after
it started: `plain` is `python -m harness.main` alone (a linear model,
`_STEPS` steps, a fresh model_dir); `pod` is the rendered container command
(`harness.k8s.ENTRYPOINT` + `python -m harness.main ...`, a one-chief
cluster in HARNESS_K8S_CLUSTER) under `unshare --pid --fork --mount-proc`,
so that it is PID 1 of its own PID namespace as in a pod, and the signal
goes to that PID 1. A run passes when it exits 143 with exactly one line of
the binary's own (`harness.main: ...`, `harness.k8s.start: ...`) and no
traceback, or exits 0 (done). Before the first line of Python runs, no
code can handle a signal: a plain process dies of it (-15) and PID 1 drops
it; `--from_handler` counts the instants from that first line (the tests
do, so that a loaded machine's slow interpreter start-up does not decide
them). Prints one row per run and a summary; exit
status 1 when a run failed. Issue 51; tests/test_start_signals.py runs a
sample of the instants.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_WAIT_SECS = 120  # After the signal: a TensorFlow import to finish.
# Steps of a run: more than any machine trains in the 4 s of the sweep (20
# steps were done 3 s after the first line on a quiet 2-core machine, so a
# lost signal looked like a finished run), and few enough that a run whose
# signal is lost ends (exit 0, a failure for the pod door) within _WAIT_SECS.
_STEPS = 20000
_BINARY_LINE = ("harness.main: ", "harness.k8s.start: ")


def unshare_prefix():
  """`unshare --pid --fork --mount-proc`, or None (not root, no unshare,
  or the kernel refuses a PID namespace)."""
  unshare = shutil.which("unshare")
  if unshare is None or os.geteuid() != 0:
    return None
  prefix = [unshare, "--pid", "--fork", "--mount-proc"]
  try:
    ok = subprocess.run(prefix + ["true"], capture_output=True, timeout=30,
                        check=False).returncode == 0
  except (OSError, subprocess.TimeoutExpired):
    ok = False
  return prefix if ok else None


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def command(door, model_dir):
  """(argv, extra environment) of one run through `door`."""
  from harness.k8s import config  # pylint: disable=g-import-not-at-top
  main = [sys.executable, "-m", "harness.main", "--model_fn=linear",
          "--input_fn=constant", f"--max_steps={_STEPS}",
          f"--model_dir={model_dir}"]
  if door == "plain":
    return main, {}
  entry = [sys.executable if a == "python" else a for a in config.ENTRYPOINT]
  main[0] = "python"  # As rendered; start.py execs it from PATH.
  env = {config.CLUSTER_ENV: json.dumps(
      {"chief": [f"127.0.0.1:{_free_port()}"]}),
         config.TASK_TYPE_ENV: "chief", config.TASK_INDEX_ENV: "0"}
  return unshare_prefix() + entry + main, env


def _namespace_init(proc, timeout_secs=10):
  """The host pid of unshare's child (PID 1 of the namespace), or None."""
  path = f"/proc/{proc.pid}/task/{proc.pid}/children"
  deadline = time.monotonic() + timeout_secs
  while time.monotonic() < deadline:
    try:
      with open(path, encoding="ascii") as f:  # local-fs: procfs
        children = f.read().split()
    except OSError:
      return None
    if children:
      return int(children[0])
    time.sleep(0.005)
  return None


def _handles_sigterm(pid):
  """Whether process `pid` has a SIGTERM handler now (its SigCgt mask)."""
  try:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:  # local-fs: procfs
      caught = next(line for line in f if line.startswith("SigCgt:"))
  except (OSError, StopIteration):
    return False
  return bool(int(caught.split()[1], 16) & (1 << (15 - 1)))


def _wait_for_handler(pid, timeout_secs=120):
  deadline = time.monotonic() + timeout_secs
  while not _handles_sigterm(pid) and time.monotonic() < deadline:
    time.sleep(0.002)


def run_once(door, at_secs, from_handler=False):
  """One run signalled `at_secs` after its start (`from_handler`: after its
  first process installed a SIGTERM handler, i.e. ran its first line, which
  on a loaded machine is seconds after the start): a dict of what it did."""
  model_dir = tempfile.mkdtemp(prefix="start_signals-")
  argv, extra = command(door, model_dir)
  env = dict(os.environ, PYTHONPATH=_ROOT, **extra)
  env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
  try:
    with tempfile.TemporaryFile("w+") as out:
      start = time.monotonic()
      proc = subprocess.Popen(argv, cwd=_ROOT, env=env, stdout=out,
                              stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL,
                              start_new_session=True)
      target = _namespace_init(proc) if door == "pod" else proc.pid
      if from_handler and target is not None:
        _wait_for_handler(target)
        start = time.monotonic()
      time.sleep(max(0.0, start + at_secs - time.monotonic()))
      sent = time.monotonic() - start
      if target is not None and proc.poll() is None:
        os.kill(target, 15)
      try:
        code = proc.wait(timeout=_WAIT_SECS)
      except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        code = proc.wait(timeout=30)
        code = f"hung ({code})"
      out.seek(0)
      text = out.read()
  finally:
    shutil.rmtree(model_dir, ignore_errors=True)
  lines = [line for line in text.splitlines()
           if line.startswith(_BINARY_LINE)]
  ok = code == 0 or (code == 143 and len(lines) == 1 and
                     "Traceback" not in text)
  return {"door": door, "at": at_secs, "sent": round(sent, 2), "code": code,
          "lines": lines, "ok": ok, "output": text}


def instants(first, last, step):
  count = int(round((last - first) / step)) + 1
  return [round(first + i * step, 3) for i in range(count)]


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--door", choices=("plain", "pod", "both"),
                      default="both")
  parser.add_argument("--first", type=float, default=0.1)
  parser.add_argument("--last", type=float, default=4.0)
  parser.add_argument("--step", type=float, default=0.1)
  parser.add_argument("--from_handler", action="store_true",
                      help="count each instant from the first process's "
                      "first line (its SIGTERM handler), not its start")
  args = parser.parse_args(argv)
  doors = ["plain", "pod"] if args.door == "both" else [args.door]
  if "pod" in doors and unshare_prefix() is None:
    print("pod door skipped: unshare --pid --fork --mount-proc does not work "
          "here (needs root and util-linux)")
    doors.remove("pod")
  failed = 0
  for door in doors:
    for at in instants(args.first, args.last, args.step):
      result = run_once(door, at, args.from_handler)
      failed += not result["ok"]
      line = result["lines"][0][:110] if result["lines"] else "(no line)"
      print(f"{door:5} {at:4.1f}s (sent {result['sent']:.2f}) exit "
            f"{result['code']} {'ok' if result['ok'] else 'FAILED'} "
            f"{len(result['lines'])} line(s): {line}", flush=True)
      if not result["ok"]:
        print(result["output"][-3000:], flush=True)
  total = sum(len(instants(args.first, args.last, args.step)) for _ in doors)
  print(f"{total - failed} of {total} runs ok ({', '.join(doors)})")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
