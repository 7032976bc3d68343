"""TensorFlow's environment as harness sets it, before TensorFlow loads.

    tf_env.quiet_cpp_logs(os.environ)   # unless HARNESS_VERBOSITY asks

`harness._tf` applies it to its own process before importing TensorFlow;
`harness.launch` to each task it starts (a plain TensorFlow program
included). No TensorFlow here: the launcher imports none.
"""

__all__ = ["VERBOSITY_ENV", "verbose_requested", "quiet_cpp_logs"]

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
