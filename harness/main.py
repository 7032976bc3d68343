"""`python -m harness.main`: train, evaluate, predict or export a model_fn.

    python -m harness.main --model_fn=linear --input_fn=constant \\
        --max_steps=100 --model_dir=/tmp/linear --exporters=latest

Under a cluster, each task runs the same command with its own TF_CONFIG
(`python -m harness.launch --workers=2 -- python -m harness.main ...`).
This module wires `harness.cli.flags.parse` -> `harness.cli.preflight.preflight` ->
`harness.cli.job.run_job`, and turns what goes wrong into one message and an
exit status (`harness.cli.diagnose.explain` says what a failure means).
Exit status (`harness.errors`): 0 done, 1 a problem the user can fix (one
message on stderr, no traceback unless --verbosity=debug), 2 bad flags or
TF_CONFIG, 143 preempted by SIGTERM and 130 interrupted by SIGINT (Ctrl-C;
during training, after a checkpoint at the current step). The binary
handles both signals from its first line, in every role (Python as PID 1
of a pod ignores a SIGTERM it has no handler for). Before the job runs,
the binary checks that `--model_dir` can be written and that
`--mode=evaluate|predict` finds a checkpoint;
after, an exception raised in the user's own model_fn/input_fn code (or in
its tf.data pipeline), a NaN loss, a TensorFlow error while running the
graph, a full disk, a read-only folder, or a checkpoint that does not fit
the model is also one line and exit status 1 (docs/ERRORS.md lists the
cases). Anything else is a harness bug and
keeps its traceback.
"""

# First (issue 51): SIGTERM/SIGINT end the process with one line from its
# first instant, before the imports below (TensorFlow's among them); the
# stop flag takes over once the flags are read (main()).
from harness.cli import first_signal  # pylint: disable=g-bad-import-order
if __name__ == "__main__":
  first_signal.install("harness.main")
# pylint: disable=g-import-not-at-top,wrong-import-position,wrong-import-order
import gc
import logging as std_logging
import os
import sys
import traceback
import warnings

from absl import app
from absl import flags as absl_flags
from absl import logging

from harness import errors
from harness import tf_env
from harness.cli import diagnose
from harness.cli import flags
from harness.cli import job
from harness.cli import legacy_imports
from harness.cli import log_format
from harness.cli import preflight
from harness.guard import stop_signal
# pylint: enable=g-import-not-at-top,wrong-import-position,wrong-import-order

__all__ = ["main", "run"]

_ABSL_LEVELS = {"quiet": logging.WARNING, "info": logging.INFO,
                "debug": logging.DEBUG}
_HELP_ARGS = ("-h", "--help", "--helpfull", "-?", "--helpshort")


def _requested_verbosity(argv):
  """--verbosity's value before parsing: TF's noise is set at import."""
  for i, arg in enumerate(argv):
    if arg.startswith("--verbosity="):
      return arg.partition("=")[2]
    if arg == "--verbosity" and i + 1 < len(argv):
      return argv[i + 1]
  return None


def _set_verbosity(verbosity):
  log_format.use(debug=verbosity == "debug")
  os.environ[tf_env.VERBOSITY_ENV] = verbosity
  logging.set_verbosity(_ABSL_LEVELS.get(verbosity, logging.INFO))
  if verbosity != "debug":  # Raised by tf_keras with the user's frame.
    warnings.filterwarnings(
        "ignore", message=r"`tf\.layers\.\w+` is deprecated",
        category=UserWarning)
  if verbosity == "debug" and "tensorflow" in sys.modules:
    std_logging.getLogger("tensorflow").setLevel(std_logging.INFO)


def _stopped_line(label, stage):
  return (f"{label}: stopped while {stage} (outside the training loop); the "
          "newest checkpoint in --model_dir is intact. Fix: nothing is lost; "
          "run the same command again to resume from it.")


def _fail(error, code, debug, label=None):
  stage = stop_signal.STOP_SIGNAL.terminated_in
  if stage is not None and code in (errors.EXIT_FAILED,
                                    errors.EXIT_BAD_CONFIG):
    # SIGTERM raised inside an import (an ImportError, a "bad flag") or
    # TensorFlow's bindings: the stop, not what it looks like (issue 51).
    error, code, label = (_stopped_line(stop_signal.STOP_SIGNAL.label, stage),
                          errors.EXIT_PREEMPTED, "SIGTERM")
  if debug:
    traceback.print_exc()
  message = str(error)
  if code != 2:
    message = f"{label or type(error).__name__}: {message}"
  print(log_format.fold(f"harness.main: {message}"), file=sys.stderr,
        flush=True)
  return code


def _export_derived_tf_config(info, environ):
  """A JobSet pod's derived TF_CONFIG, set for TensorFlow's own readers.

  Strategies read TF_CONFIG from the environment themselves, so the one
  harness built from the pod's place (no TF_CONFIG set) is exported.
  """
  if info is not None and info.from_pod_place and not (
      environ.get("TF_CONFIG") or "").strip():
    environ["TF_CONFIG"] = info.to_json()
    logging.info("TF_CONFIG built from the JobSet pod's place: task %s",
                 info.task_label)


def main(argv, *, environ=None, handle_signals=False):
  """Parses `argv`, runs the job; returns the exit status.

  Args:
    argv: the command line, program name first.
    environ: mapping for TF_CONFIG etc. (default `os.environ`).
    handle_signals: SIGTERM/SIGINT handled for the whole process
      (`stop_signal.STOP_SIGNAL.install_for_process`), as the binary does.

  Returns:
    An exit status of `harness.errors`: EXIT_DONE, EXIT_FAILED
    (HarnessError), EXIT_BAD_CONFIG (FlagError), EXIT_PREEMPTED (SIGTERM),
    EXIT_INTERRUPTED (SIGINT).
  """
  environ = os.environ if environ is None else environ
  if any(arg in _HELP_ARGS for arg in argv[1:]):
    print(flags.help_text())
    return 0
  debug = _requested_verbosity(argv[1:]) == "debug"
  _set_verbosity(_requested_verbosity(argv[1:]) or "info")
  # A --model_fn/--input_fn module written for tf.estimator runs unchanged.
  legacy_imports.install_on_first_import()
  label = "harness.main"
  try:
    try:
      job_config, plan = flags.parse(argv, environ=environ)
    except errors.FlagError as e:
      return _fail(e, errors.EXIT_BAD_CONFIG, debug)
    except errors.HarnessError as e:
      return _fail(e, errors.EXIT_FAILED, debug)
    _set_verbosity(job_config.verbosity)
    # In a restarted JobSet, this process's lines show the attempt.
    log_format.show_attempt(plan.task_label, plan.restart_attempt)
    debug = job_config.verbosity == "debug"
    label = plan.task_label
    if handle_signals:  # The task's label and bound in the stop's lines.
      stop_signal.STOP_SIGNAL.install_for_process(
          label=label, stop_timeout_secs=float(job_config.stop_timeout_secs))
    return _run(job_config, plan, environ, debug)
  except (stop_signal.Terminated, Exception):  # pylint: disable=broad-except
    # SIGTERM outside the training loop (inside TensorFlow's bindings its
    # exception may come out as another one).
    stage = stop_signal.STOP_SIGNAL.terminated_in
    if stage is None:
      raise
    return _fail(_stopped_line(label, stage), errors.EXIT_PREEMPTED, debug,
                 "SIGTERM")


def _run(job_config, plan, environ, debug):
  """main()'s job, once the flags parsed (`job_config` and its `plan`): its
  exit status."""
  stop_signal.STOP_SIGNAL.stage = ("building the job (TensorFlow, the "
                                   "model_fn's graph)")
  _export_derived_tf_config(plan.cluster_info, environ)
  try:
    preflight.preflight(job_config, plan)
    if not job_config.dry_run:
      legacy_imports.install()
    job.run_job(job_config, plan=plan, environ=environ)
  except errors.FlagError as e:
    return _fail(e, errors.EXIT_BAD_CONFIG, debug)
  except errors.TrainingPreemptedError as e:
    return _fail(e, stop_signal.exit_status(e.signal_name or "SIGTERM"),
                 debug)
  except errors.HarnessError as e:
    return _fail(e, errors.EXIT_FAILED, debug)
  except KeyboardInterrupt as e:  # Ctrl-C outside the training loop.
    return _fail(
        "interrupted (SIGINT) before or after the training loop; the newest "
        "checkpoint in --model_dir is intact. Fix: run the same command "
        "again to resume from it.", errors.EXIT_INTERRUPTED, debug,
        type(e).__name__)
  except Exception as e:  # pylint: disable=broad-except
    if stop_signal.STOP_SIGNAL.terminated_in is not None:
      raise  # SIGTERM's, in TensorFlow's clothes: main() says it.
    label, message = diagnose.explain(
        e, plan.model_dir,
        params=job_config.params)
    if message is None:
      raise  # A harness bug: its traceback is what helps.
    return _fail(message, errors.EXIT_FAILED, debug, label)
  return errors.EXIT_DONE


def _parse_absl_defaults(argv):
  # absl's own flags (logging's among them) keep their defaults; ours are
  # parsed by harness.cli.flags, which reports every problem at once.
  absl_flags.FLAGS([argv[0]])
  return argv


def _main_then_exit(argv):
  """main(), then leaving without the interpreter's long shutdown.

  Every process: the job is done, its last line printed; what is left is
  TensorFlow's modules and the job's graphs, hundreds of thousands of
  objects that interpreter shutdown's full garbage collections walk, one
  after another, for seconds of silence after the last line (issue 39). The
  heap is frozen out of those collections (`gc.freeze`): the memory goes
  back with the process, and atexit handlers, buffered files and module
  teardown still run (tests/test_exit_pause.py).

  In a cluster task, nothing of shutdown: TensorFlow's in-process gRPC
  server cannot be stopped; interpreter shutdown then waits 10-20 s in its
  C++ teardown, and a supervisor would restart a task that lost its peer
  that much later. Event files, log handlers and the standard streams are
  flushed first, and AutoGraph's temporary source files (deleted by atexit
  otherwise) removed; nothing else is left to finish.
  """
  code = main(argv, handle_signals=True)
  gc.freeze()
  roles = sys.modules.get("harness.distribute.roles")  # Loaded if it served.
  if roles is None or not roles.serving():
    return code
  tf = sys.modules["tensorflow"]
  tf.compat.v1.summary.FileWriterCache.clear()  # Closes (flushes) writers.
  # AutoGraph's temporary files, which its atexit handlers would delete.
  from harness import _tf_private  # lazy: TensorFlow is loaded (it served)  # pylint: disable=g-import-not-at-top
  _tf_private.remove_autograph_files()
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)  # pylint: disable=protected-access


def run():
  """Console-script entry point (`harness-main`)."""
  # As PID 1 of a pod, a SIGTERM without a handler is ignored: one is in
  # place from the module's first line (`python -m`) or from here (the
  # console script); main() installs the stop flag's once the flags parsed.
  first_signal.install("harness.main")
  app.run(_main_then_exit, flags_parser=_parse_absl_defaults)


if __name__ == "__main__":
  run()
