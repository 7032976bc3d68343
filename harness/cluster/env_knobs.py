"""A knob: a seconds field whose None falls back to a variable, then a default.

    from harness.cluster import env_knobs

    env_knobs.resolve_secs(None, env_knobs.PEER_TIMEOUT, os.environ)  # 60.0
    env_knobs.resolve_secs(5, env_knobs.PEER_TIMEOUT, os.environ)     # 5.0

A `Knob` names its field, its variable and its default; a `harness.fields`
entry that has one (`Field.env`) is a knob: RunConfig field, `harness.main`
flag, and resolved once a process by its plan (`harness.plan.knobs`, which
loops over those entries; `harness.main` and `RunConfig` both plan). The
two first knobs' defaults live here (`PEER_TIMEOUT`, `RESTART_WAIT`): the
flags' help text, `RunConfig`, `harness.guard.preemption` and the docs take
them from here. Also `NotGiven`, harness's "not given" defaults. No
TensorFlow here.
"""

import dataclasses
import enum
import numbers

from harness import errors

__all__ = ["Knob", "PEER_TIMEOUT", "RESTART_WAIT", "NotGiven", "resolve_secs",
           "check_secs"]


class NotGiven(enum.Enum):
  """harness's "not given" defaults, in one place and one style: the members
  of this enum (their `is` identity survives copy and pickle; a repr that
  says what the default does)."""
  # `RunConfig(save_checkpoints_steps=, save_checkpoints_secs=)`.
  CHECKPOINT_DEFAULT = "2.15's checkpoint cadence"
  # `evaluator.run_continuous(idle_timeout_secs=)`, a flag's default.
  RUN_CONFIG_VALUE = "RunConfig's value"

  def __repr__(self):
    return f"<{self.value}>"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Knob:
  """A seconds-valued setting: its field/flag name, variable and default."""
  name: str
  env: str
  default: float


PEER_TIMEOUT = Knob(name="peer_timeout_secs", env="HARNESS_PEER_TIMEOUT_SECS",
                    default=60.0)
RESTART_WAIT = Knob(name="restart_wait_secs", env="HARNESS_RESTART_WAIT_SECS",
                    default=600.0)


def check_secs(name, value, *, allow_none=False, example=None):
  """Returns `value` as float seconds > 0, or raises ConfigError naming it."""
  if value is None and allow_none:
    return None
  if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
      value > 0):
    fix = f"use e.g. {example:g}" if example is not None else (
        "use a positive number")
    if allow_none:
      fix += ", or None"
    raise errors.ConfigError(
        f"`{name}` is {value!r}: it must be a number of seconds > 0. Fix: "
        f"{fix}.")
  return float(value)


def resolve_secs(value, knob, environ):
  """The knob's seconds: `value`, else `environ[knob.env]`, else the default.

  Args:
    value: the RunConfig field / flag value, or None.
    knob: a `Knob` (a `harness.fields` entry's `env`).
    environ: mapping read for the fallback variable.

  Raises:
    ConfigError: `value` or the variable is not a number of seconds > 0.
  """
  if value is not None:
    return check_secs(knob.name, value, example=knob.default)
  text = (environ or {}).get(knob.env, "")
  if not str(text).strip():
    return knob.default
  try:
    secs = float(text)
  except ValueError:
    secs = -1.0
  if not secs > 0:
    raise errors.ConfigError(
        f"{knob.env}={text!r} is not a number of seconds > 0. Fix: set it to "
        f"e.g. {knob.default:g}, unset it for the default "
        f"({knob.default:g} s), or pass --{knob.name} / RunConfig("
        f"{knob.name}=...).")
  return secs
