"""Threads and memory of standalone-client servers over client kill cycles.

    python -m bench.perf.client_kills            # 30 cycles, prints a table
    python -m bench.perf.client_kills --cycles=5 --out=/tmp/kills.md

Starts two `python -m harness.server` workers on 127.0.0.1 (collective
strategy, one CPU device each), then, `--cycles` times: starts a client
(`python -m harness.main --remote_cluster=... --strategy=collective`), waits
until both workers step, kills the client's process group with SIGKILL at a
random point within 0.5 s, waits until each server noticed the lost client
(its claim expired after `--claim_timeout_secs`) and restarted in place, and
reads the servers' threads and RSS from /proc/<pid>/status. The restart log
line also gives the threads and RSS just before the restart, i.e. what the
killed client left behind. Flat means: the after-restart figures do not grow
with the cycle number. Linux only (/proc).

`--baseline_repo=DIR` runs servers and clients from another checkout (e.g.
one from before server claims existed): no claim flag is passed, nothing is
waited for but `--settle_secs` after each kill, then the servers' threads and
RSS are read, to show what accumulates without the restarts.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from harness.launch import ports

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_START_SECS = 180
_RESTART = re.compile(r"restarting this server in place \(restart (\d+)\) to "
                      r"release what it left \((\d+) threads, (\d+) MiB RSS")


class _Proc:

  def __init__(self, args, env, cwd):
    self.lines = []
    self.proc = subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    threading.Thread(target=self._read, daemon=True).start()

  def _read(self):
    for line in self.proc.stdout:
      self.lines.append(line.rstrip("\n"))

  def count(self, pattern):
    return sum(1 for line in list(self.lines) if re.search(pattern, line))

  def wait_until(self, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      if predicate():
        return True
      if self.proc.poll() is not None:
        return bool(predicate())
      time.sleep(0.1)
    return False

  def kill(self):
    if self.proc.poll() is None:
      os.killpg(self.proc.pid, signal.SIGKILL)
      self.proc.wait(timeout=30)


def _usage(pid):
  with open(f"/proc/{pid}/status", encoding="ascii") as f:
    fields = dict(line.split(":", 1) for line in f if ":" in line)
  return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) // 1024


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cycles", type=int, default=30)
  parser.add_argument("--claim_timeout_secs", type=int, default=5)
  parser.add_argument("--out", default=None, help="also write the table here")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--baseline_repo", default=None)
  parser.add_argument("--settle_secs", type=float, default=5.0)
  args = parser.parse_args()
  rng = random.Random(args.seed)
  repo = args.baseline_repo or _REPO
  env = dict(os.environ, PYTHONPATH=repo)
  env.pop("TF_CONFIG", None)
  addresses = [f"127.0.0.1:{p}" for p in ports.pick_free_ports(2)]
  spec = "worker=" + ",".join(addresses)
  servers = [_Proc(["-m", "harness.server", f"--cluster_spec={spec}",
                    "--job_name=worker", f"--task_index={i}",
                    ] + ([] if args.baseline_repo else ["--bind_address=*"]),
                   env, repo) for i in range(2)]
  rows = []
  model_dir = None
  try:
    for server in servers:
      if not server.wait_until(lambda s=server: s.count("listening on"),
                               _START_SECS):
        sys.exit("server did not start:\n" + "\n".join(server.lines[-20:]))
    rows.append((0, None, [(None, None) + _usage(s.proc.pid)
                           for s in servers]))
    print("cycle 0 (fresh servers):", rows[-1][2], flush=True)
    model_dir = tempfile.mkdtemp(prefix="bench_client_kills_")
    for cycle in range(1, args.cycles + 1):
      client = _Proc(
          ["-m", "harness.main", "--model_fn=linear", "--input_fn=constant",
           f"--remote_cluster={spec}", "--strategy=collective",
           "--max_steps=1000000000", "--mode=train",
           "--save_checkpoints_steps=500", "--log_step_count_steps=20",
           f"--model_dir={model_dir}"] + ([] if args.baseline_repo else [
               f"--remote_claim_timeout_secs={args.claim_timeout_secs}"]),
          env, repo)
      started = time.monotonic()
      stepping = client.wait_until(
          lambda c=client: c.count(r"remote worker/0 \| step") and c.count(
              r"remote worker/1 \| step"), _START_SECS)
      if not stepping:
        client.kill()
        sys.exit(f"cycle {cycle}: client did not step:\n"
                 + "\n".join(client.lines[-30:]))
      time.sleep(rng.uniform(0, 0.5))
      client.kill()
      restarted = []
      if args.baseline_repo:
        time.sleep(args.settle_secs)
        restarted = [(None, None) + _usage(s.proc.pid) for s in servers]
        rows.append((cycle, time.monotonic() - started, restarted))
        print(f"cycle {cycle}: {restarted}", flush=True)
        continue
      for server in servers:
        ok = server.wait_until(
            lambda s=server: s.count("listening on") >= cycle + 1, _START_SECS)
        if not ok:
          sys.exit(f"cycle {cycle}: server did not restart:\n"
                   + "\n".join(server.lines[-30:]))
        before = [m.groups() for m in map(_RESTART.search, server.lines) if m]
        threads_before, rss_before = (int(before[-1][1]), int(before[-1][2])
                                      ) if before else (None, None)
        restarted.append((threads_before, rss_before) +
                         _usage(server.proc.pid))
      rows.append((cycle, time.monotonic() - started, restarted))
      print(f"cycle {cycle}: {restarted} ({rows[-1][1]:.0f} s)", flush=True)
  finally:
    for server in servers:
      server.kill()
    if model_dir:
      shutil.rmtree(model_dir, ignore_errors=True)
  table = ["| cycle | worker/0 threads before -> after restart | worker/0 RSS "
           "MiB before -> after | worker/1 threads before -> after | "
           "worker/1 RSS MiB before -> after |", "|---|---|---|---|---|"]
  for cycle, _, usage in rows:
    cells = []
    for tb, rb, ta, ra in usage:
      cells.append(f"{tb if tb is not None else '-'} -> {ta}")
      cells.append(f"{rb if rb is not None else '-'} -> {ra}")
    table.append(f"| {cycle} | " + " | ".join(cells) + " |")
  after = [[u[2] for u in usage] for _, _, usage in rows]
  rss = [[u[3] for u in usage] for _, _, usage in rows]
  summary = (f"after-restart threads per server: min {min(map(min, after))}, "
             f"max {max(map(max, after))}; RSS MiB: min {min(map(min, rss))},"
             f" max {max(map(max, rss))} over {len(rows) - 1} cycles")
  text = "\n".join(table) + "\n\n" + summary + "\n"
  print(text)
  if args.out:
    with open(args.out, "w", encoding="utf-8") as f:
      f.write(text)


if __name__ == "__main__":
  main()
