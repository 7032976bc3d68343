"""TensorFlow's environment as harness sets it, before TensorFlow loads.

    tf_env.quiet_cpp_logs(os.environ)   # unless HARNESS_VERBOSITY asks

`harness._tf` applies it to its own process before importing TensorFlow;
`harness.launch` to each task it starts (a plain TensorFlow program
included), and drops from a task's output the C++ lines that the task's
level hides but TensorFlow printed anyway:

    hidden = tf_env.hidden_cpp_line(env)   # None: nothing to drop
    hidden("I0000 00:00:17.5 42 port.cc:153] oneDNN ...")   # True at 3

No TensorFlow here: the launcher imports none.
"""

import re

__all__ = ["VERBOSITY_ENV", "verbose_requested", "quiet_cpp_logs",
           "hidden_cpp_line"]

VERBOSITY_ENV = "HARNESS_VERBOSITY"


def verbose_requested(environ):
  """True when `environ` asks for TensorFlow's own logs."""
  return environ.get(VERBOSITY_ENV, "").lower() in ("debug", "verbose", "tf")


def quiet_cpp_logs(environ):
  """Hides TensorFlow's C++ log lines in `environ` unless they are asked
  for or the user set the level. 3 hides the ERROR lines too ("failed call
  to cuInit" on every CPU-only process); real failures still surface as
  Python exceptions."""
  if not verbose_requested(environ):
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


# TensorFlow's C++ log line: severity letter, MMDD, the time (hh:mm:ss.micros,
# or 00:00:<epoch seconds> before absl's log is initialised), thread,
# file:line]. TF 2.21 prints its import-time block (oneDNN, CUDA stub, CPU
# features) before absl's log is initialised, whatever TF_CPP_MIN_LOG_LEVEL
# says, after a line announcing it.
_CPP_LINE = re.compile(r"^([IWE])\d{4} [\d:.]+ +\d+ [\w.+-]+:\d+\] ")
_BEFORE_INIT = ("WARNING: All log messages before absl::InitializeLog() is "
                "called are written to STDERR")
_SEVERITY = {"I": 0, "W": 1, "E": 2}


def hidden_cpp_line(environ):
  """A test `line -> bool`: True for a TensorFlow C++ log line below the
  level `environ`'s TF_CPP_MIN_LOG_LEVEL sets (and for absl's notice that
  such lines go to stderr, a warning). None when the level hides nothing
  or is no number. FATAL lines are always kept."""
  try:
    level = int(environ.get("TF_CPP_MIN_LOG_LEVEL", "0"))
  except ValueError:
    return None
  if level <= 0:
    return None

  def hidden(line):
    if line == _BEFORE_INIT:
      return level > _SEVERITY["W"]
    match = _CPP_LINE.match(line)
    return bool(match) and _SEVERITY[match.group(1)] < level
  return hidden
