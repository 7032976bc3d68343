"""Runs an unmodified tf.estimator script on harness: `python -m harness.run`.

    python -m harness.run train.py --model_dir=/tmp/m      # a script
    python -m harness.run -m my_pkg.train --steps=100     # a module

As `coverage run` does, the program runs as if started by `python` itself:
`sys.argv` is `[script, *args]`, `__name__` is `"__main__"`, `sys.path[0]` is
the script's directory (the current directory for `-m`), and its exit status
(`sys.exit(n)`, or 1 for an uncaught exception) becomes ours. A stop by
Ctrl-C (SIGINT) or SIGTERM ends as `harness.main` ends: one line, no
traceback, exit status 130 (SIGINT) or 143 (SIGTERM). In an evaluator task
(TF_CONFIG), strategies the program builds initialise locally, as under
`harness.main` (`evaluator_guard.install`). Before anything else,
`harness.compat` is imported, so `tf.estimator`, `tf.compat.v1.estimator`
and the `tensorflow_estimator` modules resolve to harness and TensorFlow
loads with Keras 2.

Usage errors (no program, an unknown option, a missing script) print a
message and exit with status 2.
"""

import importlib.util
import os
import runpy
import sys

from harness import errors
from harness.cli import log_format

__all__ = ["main", "USAGE"]

USAGE = """\
usage: python -m harness.run [--] SCRIPT.py [ARG ...]
       python -m harness.run -m MODULE [ARG ...]

Runs a legacy tf.estimator program unchanged, with tf.estimator and the
tensorflow_estimator modules aliased to harness."""

_EXIT_USAGE = 2


def _usage_error(message):
  sys.stderr.write(log_format.fold(f"harness.run: error: {message}") +
                   f"\n{USAGE}\n")
  return _EXIT_USAGE


def _install_aliases():
  """Imports TensorFlow (TF_USE_LEGACY_KERAS=1) and puts the aliases in place.

  Before any line of the program runs, but not for `--help` or a usage
  error, which then answer without loading TensorFlow.
  """
  import harness.compat  # lazy: TensorFlow only once a program runs  # pylint: disable=g-import-not-at-top,unused-import
  from harness.distribute import evaluator_guard  # lazy: loads TensorFlow  # pylint: disable=g-import-not-at-top
  # An evaluator task (TF_CONFIG) builds the program's top-level strategy
  # for local use, as harness.main's does (a collective one would fail with
  # KeyError: 'evaluator'). A malformed TF_CONFIG is the program's
  # RunConfig's to report.
  try:
    evaluator_guard.install(os.environ)
  except errors.ClusterConfigError:
    pass


def _run_script(script, args):
  if not os.path.exists(script):
    return _usage_error(
        f"can't open file {os.path.abspath(script)!r}: no such file. Fix: "
        "pass the path of the legacy script (relative to the current "
        "directory), or `-m package.module` to run a module.")
  _install_aliases()
  sys.argv = [script, *args]
  script_dir = os.path.dirname(os.path.abspath(script))
  if sys.path:
    sys.path[0] = script_dir
  else:
    sys.path.insert(0, script_dir)
  runpy.run_path(script, run_name="__main__")
  return 0


def _run_module(module, args):
  # As `python -m`: sys.path[0] is the current directory, argv[0] becomes the
  # module's file (run_module sets it). The aliases first: finding the
  # module imports its parent packages.
  _install_aliases()
  cwd = os.getcwd()
  if sys.path:
    sys.path[0] = cwd
  else:
    sys.path.insert(0, cwd)
  try:
    found = importlib.util.find_spec(module)
  except ImportError as e:  # A missing parent package.
    found, why = None, str(e)
  else:
    why = f"No module named {module!r}"
  if found is None:
    return _usage_error(
        f"{why}. Fix: run from the directory that contains the package, or "
        "pass a script path instead of `-m`.")
  sys.argv = [module, *args]
  runpy.run_module(module, run_name="__main__", alter_sys=True)
  return 0


def _stopped(program, error):
  """One line for a program a signal stopped; its exit status (harness.main's:
  130 for SIGINT, 143 for SIGTERM)."""
  if isinstance(error, errors.TrainingPreemptedError):  # In a training loop.
    signal_name, message = error.signal_name or "SIGTERM", str(error)
  else:
    signal_name = "SIGINT"
    message = f"{program} was interrupted (SIGINT) outside a training loop."
  sys.stderr.write(log_format.fold(
      f"harness.run: {type(error).__name__}: {message}") + "\n")
  sys.stderr.flush()
  return (errors.EXIT_INTERRUPTED if signal_name == "SIGINT"
          else errors.EXIT_PREEMPTED)


def main(argv):
  """Runs the program `argv` names; returns its exit status.

  Args:
    argv: the command line after `python -m harness.run`: `[script, *args]`,
      `["--", script, *args]`, or `["-m", module, *args]`.

  Returns:
    0 when the program returns normally; 2 for a usage error; 130 / 143
    when Ctrl-C (KeyboardInterrupt) or a stop signal (TrainingPreemptedError)
    ended it, after one line on stderr. A program that calls `sys.exit(n)` or
    raises anything else propagates that (SystemExit / exception).
  """
  try:
    return _dispatch(argv)
  except (KeyboardInterrupt, errors.TrainingPreemptedError) as e:
    return _stopped(" ".join(argv[:2] if argv[:1] in (["-m"], ["--"])
                             else argv[:1]), e)


def _dispatch(argv):
  if not argv:
    return _usage_error("no program given.")
  first, rest = argv[0], list(argv[1:])
  if first in ("-h", "--help"):
    sys.stdout.write(USAGE + "\n")
    return 0
  if first == "-m":
    if not rest or rest[0].startswith("-"):
      return _usage_error(
          "-m needs a module name, e.g. `python -m harness.run -m "
          "my_pkg.train --steps=10`.")
    return _run_module(rest[0], rest[1:])
  if first == "--":
    if not rest:
      return _usage_error("no program given after `--`.")
    return _run_script(rest[0], rest[1:])
  if first.startswith("-"):
    return _usage_error(
        f"unknown option {first!r}: harness.run takes only `-m MODULE` or a "
        "script path; options after the program are passed to it. Fix: put "
        "the program's own flags after its name (or after `--`).")
  return _run_script(first, rest)


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
