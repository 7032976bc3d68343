"""A process that ignores SIGTERM and starts one like it in its own session.

    python tests/programs/stubborn_tree.py PIDS_FILE

Once both ignore SIGTERM, writes "<own pid> <grandchild's pid>" to PIDS_FILE
and prints "ready"; then both sleep (300 s at most) until killed. Used by
tests/test_processes.py: the shape of a `harness.launch` task tree.
"""

import os
import signal
import subprocess
import sys
import time

_SLEEP_SECS = 300
_GRANDCHILD = ("import signal, time\n"
               "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
               "print('ready', flush=True)\n"
               f"time.sleep({_SLEEP_SECS})\n")


def main(pids_file):
  signal.signal(signal.SIGTERM, signal.SIG_IGN)
  grandchild = subprocess.Popen(  # pylint: disable=consider-using-with
      [sys.executable, "-c", _GRANDCHILD], stdout=subprocess.PIPE, text=True,
      start_new_session=True)
  grandchild.stdout.readline()  # Its "ready": SIGTERM ignored there too.
  with open(pids_file + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {grandchild.pid}")
  os.replace(pids_file + ".tmp", pids_file)
  print("ready", flush=True)
  time.sleep(_SLEEP_SECS)


if __name__ == "__main__":
  main(sys.argv[1])
