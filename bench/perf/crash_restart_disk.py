"""Disk used by a model_dir after N kill -9 / restart cycles (issue 19.1).

Each cycle starts `python -m harness.main` on the same model_dir, waits
until it wrote `--new_checkpoints` checkpoints past the newest one on disk,
then kills its process group with SIGKILL at a random moment (seeded). At
the end it prints the checkpoint count, the bytes of checkpoint files, the
bytes of the whole model_dir and the leftover temporary folders::

    python -m bench.perf.crash_restart_disk --model_dir=/tmp/crash --cycles=8 \\
        -- --model_fn=mnist_mlp --input_fn=synthetic --keep_checkpoint_max=2

Run it with PYTHONPATH pointing at the harness to measure (e.g. an older
checkout, for a before/after figure).
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import time

_INDEX_RE = re.compile(r"^model\.ckpt-(\d+)\.index$")
_LEFTOVER_RE = re.compile(r"(_temp(_[0-9a-f]{32})?$|\.tempstate|^\.temp-|"
                          r"\.tmp[0-9a-f]{32}$|^\.tmp-)")


def _steps(model_dir):
  try:
    names = os.listdir(model_dir)
  except FileNotFoundError:
    return []
  return sorted(int(m.group(1)) for m in map(_INDEX_RE.match, names) if m)


def _usage(model_dir):
  """(bytes of model.ckpt-* files, bytes of everything, leftover paths)."""
  checkpoint_bytes = total = 0
  leftovers = []
  for root, dirs, files in os.walk(model_dir):
    leftovers += [os.path.join(root, d) for d in dirs if _LEFTOVER_RE.search(d)]
    leftovers += [os.path.join(root, f) for f in files
                  if _LEFTOVER_RE.search(f) and not _LEFTOVER_RE.search(
                      os.path.basename(root))]
    for name in files:
      size = os.path.getsize(os.path.join(root, name))
      total += size
      if root == model_dir and name.startswith("model.ckpt-"):
        checkpoint_bytes += size
  return checkpoint_bytes, total, leftovers


def run_cycles(model_dir, cycles, new_checkpoints, harness_args, seed=0,
               timeout_secs=300):
  """Runs the kill -9 / restart cycles; returns the per-cycle records."""
  rng = random.Random(seed)
  command = [sys.executable, "-m", "harness.main", f"--model_dir={model_dir}",
             "--max_steps=100000000"] + list(harness_args)
  records = []
  for cycle in range(cycles):
    before = (_steps(model_dir) or [-1])[-1]
    with open(os.path.join(os.path.dirname(model_dir.rstrip("/")) or ".",
                           f"crash_cycle_{cycle}.log"), "w") as log:
      process = subprocess.Popen(command, stdout=log, stderr=log,
                                 start_new_session=True)
      deadline = time.monotonic() + timeout_secs
      try:
        while time.monotonic() < deadline:
          if len([s for s in _steps(model_dir) if s > before]) >= (
              new_checkpoints):
            break
          if process.poll() is not None:
            raise RuntimeError(f"cycle {cycle}: exited {process.returncode}"
                               f" before the kill; see {log.name}")
          time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.5))  # Somewhere in the next save.
      finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    checkpoint_bytes, total, leftovers = _usage(model_dir)
    records.append({"cycle": cycle, "checkpoints": len(_steps(model_dir)),
                    "checkpoint_bytes": checkpoint_bytes, "total": total,
                    "leftovers": len(leftovers)})
    print(f"cycle {cycle}: {records[-1]}", flush=True)
  return records


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--cycles", type=int, default=8)
  parser.add_argument("--new_checkpoints", type=int, default=2)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("harness_args", nargs="*")
  args = parser.parse_args(argv)
  run_cycles(args.model_dir, args.cycles, args.new_checkpoints,
             args.harness_args, seed=args.seed)
  checkpoint_bytes, total, leftovers = _usage(args.model_dir)
  print(f"after {args.cycles} kill -9/restart cycles: "
        f"{len(_steps(args.model_dir))} checkpoints, checkpoint files "
        f"{checkpoint_bytes / 1e6:.1f} MB, model_dir {total / 1e6:.1f} MB, "
        f"{len(leftovers)} leftover temporary file(s)/folder(s)")


if __name__ == "__main__":
  main()
