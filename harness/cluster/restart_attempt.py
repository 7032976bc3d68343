"""Which JobSet restart attempt this process belongs to.

    attempt = restart_attempt.from_environ(os.environ)  # 2, or None
    restart_attempt.label("chief/0", attempt)           # "chief/0 attempt 2"

A JobSet restarts all its Jobs together and counts the restarts in the pod
annotation `jobset.sigs.k8s.io/restart-attempt`; the pod templates harness
renders pass it to the container through the downward API as
`$JOBSET_RESTART_ATTEMPT`. Read once at the edge (the job's plan, a
RunConfig), it goes into the log lines' task label and the live metrics'
`attempt` label, so the lines and series of one attempt can be told apart.
Unset or empty (outside a JobSet, or a pod without the annotation): None,
and nothing changes. No TensorFlow here.
"""

from harness import errors

__all__ = ["RESTART_ATTEMPT_ENV", "RESTART_ATTEMPT_ANNOTATION",
           "from_environ", "label"]

RESTART_ATTEMPT_ENV = "JOBSET_RESTART_ATTEMPT"
RESTART_ATTEMPT_ANNOTATION = "jobset.sigs.k8s.io/restart-attempt"


def from_environ(environ):
  """$JOBSET_RESTART_ATTEMPT of `environ` as an int >= 0, or None (unset).

  Raises:
    ConfigError: the variable is set to something else than an int >= 0.
  """
  text = (environ.get(RESTART_ATTEMPT_ENV) or "").strip()
  if not text:
    return None
  try:
    attempt = int(text)
  except ValueError:
    attempt = -1
  if attempt < 0:
    raise errors.ConfigError(
        f"${RESTART_ATTEMPT_ENV}={text!r}: the JobSet restart attempt is an "
        f"int >= 0 (the pod annotation {RESTART_ATTEMPT_ANNOTATION}). Fix: "
        "render it from that annotation through the downward API, or unset "
        "it.")
  return attempt


def label(task_label, attempt):
  """`task_label` as the log lines show it: "chief/0 attempt 2" (unchanged
  when `attempt` is None)."""
  return task_label if attempt is None else f"{task_label} attempt {attempt}"
