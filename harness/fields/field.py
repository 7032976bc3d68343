"""What one entry of the field table says, and the checks entries share.

    from harness.fields import field

    field.Field(name="xla", default=False, type=bool, check=..., doc=...,
                flag=field.Flag(kind=field.BOOL, help="..."))
    field.fail("xla must be True or False.", "use False.", value)

A `Field` is one harness RunConfig field: its name, RunConfig's default,
the check that refuses a bad value (ConfigError in RunConfig's words), the
text of its `Args:` entry, how `python -m harness.main` takes it (`Flag`)
and the environment variable its None falls back to (`env`). No
TensorFlow here.
"""

import dataclasses
import numbers
from typing import Any, Callable

from harness import errors
from harness.cluster import env_knobs

__all__ = [
    "Field", "Flag", "FLAG_KINDS", "INT", "SECS", "BOOL", "STRING", "ENUM",
    "PORT", "STEPS_PER_LOOP", "SAME_DEFAULT", "fail", "positive_secs",
    "check_bool",
]

# How `harness.main` defines a field's flag (`harness.cli.flag_definitions`).
INT = "int"  # An integer >= `Flag.minimum` (None passes).
SECS = "secs"  # A float of seconds > 0 (None passes: `Field.env` or waits).
BOOL = "bool"
STRING = "string"
ENUM = "enum"  # One of `Flag.choices`.
PORT = "port"  # A TCP port, 0..65535.
STEPS_PER_LOOP = "steps_per_loop"  # An integer >= 1, or "auto".
FLAG_KINDS = (INT, SECS, BOOL, STRING, ENUM, PORT, STEPS_PER_LOOP)
# `Flag.default`: the flag's default is RunConfig's.
SAME_DEFAULT = env_knobs.NotGiven.RUN_CONFIG_VALUE


@dataclasses.dataclass(frozen=True, kw_only=True)
class Flag:
  """How `python -m harness.main` takes a field.

  Attributes:
    kind: one of `FLAG_KINDS`.
    help: the `--help` text.
    default: the binary's default where it is not RunConfig's (else
      `SAME_DEFAULT`).
    minimum: kind INT: the smallest value the flag accepts.
    fix: kind INT: the fix its validator names.
    choices: kind ENUM: the values.
    to_run_config: the flag's value -> RunConfig's argument (None: as is).
  """
  kind: str
  help: str
  default: Any = SAME_DEFAULT
  minimum: int | None = None
  fix: str | None = None
  choices: tuple[str, ...] = ()
  to_run_config: Callable[[Any], Any] | None = None

  def __post_init__(self):
    if self.kind not in FLAG_KINDS:
      raise ValueError(f"Flag kind {self.kind!r} is not one of {FLAG_KINDS}. "
                       "Fix: use one of them (harness.cli.flag_definitions "
                       "defines a flag of each).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Field:
  """One harness RunConfig field, declared once.

  Attributes:
    name: the RunConfig argument, property, `replace()` key, JobConfig
      field and flag.
    default: RunConfig's default.
    type: the JobConfig field's annotation (the flag's value type).
    check: `check(value)` raises ConfigError (or NotSupportedError) naming
      the value, the rule and the fix; RunConfig's constructor and
      `replace()` run it.
    doc: RunConfig's `Args:` entry (without the name).
    flag: how `harness.main` takes it.
    env: the variable a None value falls back to, then its default (a
      knob: the plan resolves it, `harness.plan.knobs`; RunConfig's
      property and the binary's RunConfig take the plan's seconds).
  """
  name: str
  default: Any
  type: Any
  check: Callable[[Any], Any]
  doc: str
  flag: Flag
  env: env_knobs.Knob | None = None

  def __post_init__(self):
    if self.env is not None and self.env.name != self.name:
      raise ValueError(f"Field {self.name!r}: its env knob is named "
                       f"{self.env.name!r}. Fix: name the Knob {self.name!r} "
                       "(its errors name the field).")

  @property
  def flag_default(self):
    """The binary's default: the flag's own, else RunConfig's."""
    if self.flag.default is SAME_DEFAULT:
      return self.default
    return self.flag.default


def fail(message, fix, value=None):
  """Raises ConfigError: `message` (2.15's sentence), the value, the fix."""
  given = "" if value is None else f" Given: {value!r}."
  message = message if message.endswith((".", " ")) else message + "."
  raise errors.ConfigError(f"{message}{given} Fix: {fix}")


def positive_secs(value):
  """True for a real number of seconds > 0 (a bool is not one)."""
  return (not isinstance(value, bool) and isinstance(value, numbers.Real)
          and value > 0)


def check_bool(name, what, fix):
  """A check that `name`'s value is True or False (`what` it switches)."""
  def check(value):
    if not isinstance(value, bool):
      fail(f"{name} must be True or False ({what}).", fix, value)
  return check
