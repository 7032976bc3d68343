"""The knobs with an environment fallback, resolved once by the plan.

    from harness.plan import knobs

    values, attempt = knobs.resolve({"peer_timeout_secs": None}, os.environ,
                                    problems)
    values["peer_timeout_secs"]  # the value, else the variable, else 60.0

A knob is a `harness.fields` field whose entry names an `env`
(`harness.cluster.env_knobs.Knob`): `resolve` loops over those entries, so
a new one is its table entry plus the code that reads
`config.<name>` (RunConfig's property) or `plan.knobs[<name>]`. Also
$JOBSET_RESTART_ATTEMPT, read at the same edge. No TensorFlow here.
"""

from harness import errors
from harness import fields
from harness.cluster import env_knobs
from harness.cluster import restart_attempt

__all__ = ["KNOB_FIELDS", "NAMES", "RESTART_ATTEMPT", "resolve"]

# The table's fields with an environment fallback, in its order.
KNOB_FIELDS = tuple(field for field in fields.FIELDS if field.env is not None)
NAMES = tuple(field.name for field in KNOB_FIELDS)
# `Problem.rule` of a bad $JOBSET_RESTART_ATTEMPT.
RESTART_ATTEMPT = "restart_attempt"


def resolve(values, environ, problems):
  """({knob: seconds}, restart attempt) from `values`, else `environ`.

  Args:
    values: {field name: value or None}; a knob missing is None.
    environ: mapping read for the knobs' variables and the attempt.
    problems: list that gets (rule, ConfigError) for each bad one (its
      default, or None for the attempt, taken in its place).

  Returns:
    ({name: float seconds} for every knob, the attempt or None).
  """
  resolved = {}
  for field in KNOB_FIELDS:
    try:
      resolved[field.name] = env_knobs.resolve_secs(values.get(field.name),
                                                    field.env, environ)
    except errors.ConfigError as e:
      problems.append((field.name, e))
      resolved[field.name] = field.env.default
  try:
    return resolved, restart_attempt.from_environ(environ)
  except errors.ConfigError as e:
    problems.append((RESTART_ATTEMPT, e))
    return resolved, None
