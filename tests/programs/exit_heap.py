"""`python -m harness.main`, reporting the heap its shutdown is left with.

    python tests/programs/exit_heap.py --model_fn=linear --input_fn=constant \\
        --max_steps=5 --model_dir=/tmp/linear

Runs the binary as `python -m harness.main` would, with one atexit handler
registered before harness loads, so that it runs last (atexit is last-in,
first-out), just before the interpreter's shutdown. It prints one line,
`exit_heap {...}`: `walked`, the objects shutdown's garbage collections
walk (`gc.get_objects()`); `frozen`, those kept out of them
(`gc.get_freeze_count()`); `collect_secs`, the time of one full collection
then, which is what each of shutdown's collections costs.
"""

import atexit
import gc
import runpy
import sys
import time


def _report():
  walked, frozen = len(gc.get_objects()), gc.get_freeze_count()
  start = time.monotonic()
  gc.collect()
  report = {"walked": walked, "frozen": frozen,
            "collect_secs": round(time.monotonic() - start, 3)}
  print(f"exit_heap {report}", flush=True)


if __name__ == "__main__":
  atexit.register(_report)
  sys.argv = ["harness.main", *sys.argv[1:]]
  runpy.run_module("harness.main", run_name="__main__", alter_sys=True)
