"""A pod's first process: its TF_CONFIG, then `exec` of the container's args.

    python -m harness.k8s.start -- python -m harness.main --model_fn=...

Every rendered container's command (`config.ENTRYPOINT`). No shell: this
process is the container's PID 1 from its first instant and handles SIGTERM
and SIGINT from its first line (`harness.cli.first_signal`: one line, exit
143 or 130; a shell as PID 1 ignored them). It works out the pod's TF_CONFIG
(`entrypoint.tf_config_from_environ`; a bad variable is one line and exit
status `CONFIG_ERROR_EXIT_CODE`), exports it and `exec`s the args. Before
`exec`ing `python -m harness.main` it blocks both signals: a blocked signal
stays pending across `exec`, even for PID 1, and harness.main unblocks them
once its handler is in place, so one sent in between is delivered, not
lost. Any other command is `exec`d with them unblocked (it may install no
handler of its own).
"""

# First: a SIGTERM from now on is one line and 143 (issue 51).
from harness.cli import first_signal  # pylint: disable=g-bad-import-order
if __name__ == "__main__":
  first_signal.install("harness.k8s.start", "working out the pod's TF_CONFIG")
# pylint: disable=g-import-not-at-top,wrong-import-position,wrong-import-order
import os
import sys

from harness import errors
from harness.k8s import config as config_lib
from harness.k8s import entrypoint
# pylint: enable=g-import-not-at-top,wrong-import-position,wrong-import-order

__all__ = ["main", "unblocks_first"]


def unblocks_first(command):
  """Whether `command` is `python -m harness.main ...` (it unblocks the
  signals `first_signal.block` held back)."""
  return len(command) >= 3 and os.path.basename(command[0]).startswith(
      "python") and command[1:3] == ["-m", "harness.main"]


def main(argv, environ=None):
  """`exec`s `argv[1:]` (after `--`) with the pod's TF_CONFIG exported.

  Returns the exit status when it does not `exec`: CONFIG_ERROR_EXIT_CODE
  for a bad pod variable or no command.
  """
  environ = os.environ if environ is None else environ
  command = argv[1:]
  if command[:1] == ["--"]:
    command = command[1:]
  if not command:
    print("harness.k8s.start: no command to run. Fix: give it after `--`, "
          "e.g. `python -m harness.k8s.start -- python -m harness.main "
          "--model_fn=...`.", file=sys.stderr, flush=True)
    return config_lib.CONFIG_ERROR_EXIT_CODE
  try:
    environ["TF_CONFIG"] = entrypoint.tf_config_from_environ(environ)
  except errors.HarnessError as e:
    print(f"harness.k8s.start: {e}", file=sys.stderr, flush=True)
    return config_lib.CONFIG_ERROR_EXIT_CODE
  sys.stdout.flush()
  sys.stderr.flush()
  if unblocks_first(command):
    first_signal.block()
  try:
    os.execvpe(command[0], command, environ)
  except OSError as e:
    first_signal.install("harness.k8s.start", "starting the command")
    print(f"harness.k8s.start: cannot run {command[0]!r}: {e}. Fix: the "
          "container's args name a program on its PATH.", file=sys.stderr,
          flush=True)
    return errors.EXIT_FAILED
  return errors.EXIT_FAILED  # Not reached: exec replaced this process.


if __name__ == "__main__":
  sys.exit(main(sys.argv))
