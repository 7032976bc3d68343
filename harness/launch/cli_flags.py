"""`python -m harness.launch`'s flags, usage line and `--help` text.

`cli.run` defines them (`define`) only when the module runs as a binary.
"""

import types

from absl import flags

from harness.cli import binary_flags
from harness.cli import tensorboard_server
from harness.launch import netns

__all__ = ["define", "USAGE", "HELP", "help_text"]


def define():
  """Defines the binary's flags and returns their holders.

  Called only when the module runs as a binary, so that importing it as a
  library adds no flags that could clash with other modules' flags.
  """
  return types.SimpleNamespace(
      workers=flags.DEFINE_integer("workers", 1, "Number of worker tasks.",
                                   lower_bound=0),
      chief=flags.DEFINE_bool("chief", False, "Whether to add a chief task."),
      ps=flags.DEFINE_integer("ps", 0, "Number of parameter server tasks.",
                              lower_bound=0),
      evaluator=flags.DEFINE_bool(
          "evaluator", False, "Whether to add an evaluator task (not in the "
          "cluster; its TF_CONFIG task is evaluator/0)."),
      max_restarts=flags.DEFINE_integer(
          "max_restarts", 0, "Restarts per task after a non-zero exit or a "
          "signal.", lower_bound=0),
      host=flags.DEFINE_string("host", "127.0.0.1",
                               "Address every task listens on."),
      timeout_secs=flags.DEFINE_float(
          "timeout_secs", 0, "If > 0, stop everything after this many "
          "seconds and exit 124.", lower_bound=0),
      grace_secs=flags.DEFINE_float(
          "grace_secs", 10, "Seconds between SIGTERM and SIGKILL when "
          "stopping tasks.", lower_bound=0),
      network_isolation=flags.DEFINE_enum(
          "network_isolation", "auto", netns.MODES, "auto: run the "
          "tasks in a private network namespace when the platform allows "
          "(TensorFlow servers listen on every interface), else warn; netns: "
          "require it; none: share this machine's network (needed for "
          "gs:// model_dirs) and warn."),
      # TensorBoard: one server for the cluster's model_dir.
      tensorboard=flags.DEFINE_integer(
          "tensorboard", None, "--tensorboard[=PORT]: serve the tasks' "
          "--model_dir with TensorBoard on 127.0.0.1:PORT while the cluster "
          "runs and print its URL; a bare --tensorboard is port "
          f"{tensorboard_server.DEFAULT_PORT}, 0 picks a free port.",
          lower_bound=0, upper_bound=65535),
      tensorboard_keep=flags.DEFINE_bool(
          "tensorboard_keep", False, "Leave --tensorboard's server running "
          "after the cluster ends (prints its pid)."))


USAGE = ("usage: python -m harness.launch --workers=N [--chief] [--ps=P] "
          "[--evaluator] [--max_restarts=R] [--timeout_secs=S] "
          "[--tensorboard[=PORT]] -- COMMAND...")


HELP = """\
Runs a training cluster on this machine, one subprocess a task: each runs the
command after `--` with its own TF_CONFIG (free ports on --host) and
HARNESS_TASK=<job>/<index>.

    python -m harness.launch --workers=2 --ps=1 --evaluator -- \\
        python -m harness.main --model_dir=/tmp/m ...

Output lines are prefixed by their task, `[worker/1] ...`; the launcher's,
`launch | `. A task's stderr loses TensorFlow's C++ lines below its
TF_CPP_MIN_LOG_LEVEL (3 unless set; TF 2.21 prints some at import). Exit
status: 0 once every chief, worker and evaluator task exited 0 (ps tasks are
then stopped); a failed task's status (128+N for signal N) once its restarts
are used up; 124 after --timeout_secs."""


def help_text(flag):
  names = [holder.name for holder in vars(flag).values()]
  return (f"{USAGE}\n\n{HELP}\n\nflags:\n"
          + binary_flags.flag_help(flags.FLAGS, names))
