"""RunConfig's value rules: 2.15's property checks and harness's own.

    from harness.run_config import checks

    checks.validate_properties(values)   # ConfigError naming the value
    checks.fail("steps_per_loop must be ...", "use 1.", value)

`harness.run_config.RunConfig` keeps its values in one dict; its
constructor and `replace()` run `validate_properties` on it (2.15's message
first, then the value and the fix): 2.15's rules, then each harness field's
check from `harness.fields`, in a fixed order (the first broken rule is the
one reported). Also
here: 2.15's save_checkpoints_steps / _secs rule (constructor and
replace()), the strategy given in two places, `remote_cluster` in its three
spellings, and the short TF_CONFIG line RunConfig logs.
"""

import json
import numbers

from harness import cluster
from harness import errors
from harness import fields
from harness._tf import tf
from harness.fields import field as field_lib
from harness.spec import fn_args

__all__ = [
    "ENV_KNOBS", "fail", "checkpoint_cadence", "replaced_checkpoint_cadence", "validate_properties",
    "merged_strategy", "normalize_remote_cluster", "tf_config_summary",
]

# Knobs whose None falls back to an environment variable, then a default.
ENV_KNOBS = tuple(f.env for f in fields.FIELDS if f.env is not None)
# The TF_CONFIG log line's bound (the full JSON goes to DEBUG).
SUMMARY_CHARS = 150
_SAVE_CKPT_ERR = (
    "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set.")

# 2.15's per-property rules, in 2.15's order: (field, condition a value
# other than None must meet, 2.15's message, the fix).
_LEGACY_RULES = (
    ("model_dir", lambda d: d, "model_dir should be non-empty",
     "pass a directory path or None."),
    ("save_summary_steps", lambda s: s >= 0,
     "save_summary_steps should be >= 0", "use 0 to disable summaries."),
    ("save_checkpoints_steps", lambda s: s >= 0,
     "save_checkpoints_steps should be >= 0", "use None to disable."),
    ("save_checkpoints_secs", lambda s: s >= 0,
     "save_checkpoints_secs should be >= 0", "use None to disable."),
    ("session_config",
     lambda c: isinstance(c, tf.compat.v1.ConfigProto),
     "session_config must be instance of ConfigProto",
     "pass tf.compat.v1.ConfigProto(...) or None."),
    ("keep_checkpoint_max", lambda k: k >= 0,
     "keep_checkpoint_max should be >= 0", "use 0 or None to keep all."),
    ("keep_checkpoint_every_n_hours", lambda h: h > 0,
     "keep_checkpoint_every_n_hours should be > 0",
     "use a positive number of hours (10000 disables the feature)."),
    ("log_step_count_steps", lambda s: s > 0,
     "log_step_count_steps should be > 0", "use a positive step count."),
    ("tf_random_seed", lambda s: isinstance(s, numbers.Integral),
     "tf_random_seed must be integer.", "pass an int or None."),
    ("experimental_max_worker_delay_secs",
     lambda d: isinstance(d, numbers.Integral),
     "experimental_max_worker_delay_secs must be an integer if set.",
     "pass an int number of seconds or None."),
    ("session_creation_timeout_secs", lambda t: t > 0,
     "session_creation_timeout_secs should be > 0",
     "use a positive number of seconds."),
    ("device_fn", lambda f: callable(f) and set(fn_args(f)) == {"op"},
     'device_fn must be callable with exactly one argument "op".',
     "define it as `def device_fn(op): return device_string`."),
    ("protocol", lambda p: p in (None, "grpc", "grpc+verbs"),
     "protocol should be grpc or grpc+verbs", 'use "grpc" or None.'),
)


def fail(message, fix, value=None):
  """Raises ConfigError: `message` (2.15's sentence), the value, the fix
  (the form of `harness.fields`' checks)."""
  field_lib.fail(message, fix, value)


def checkpoint_cadence(steps, secs, unset):
  """2.15's constructor rule for save_checkpoints_steps / _secs.

  Args:
    steps: the constructor's `save_checkpoints_steps`, or `unset`.
    secs: its `save_checkpoints_secs`, or `unset`.
    unset: the constructor's "not given" default.

  Returns:
    (steps, secs): neither given, every 600 seconds; one given, the other
    None.

  Raises:
    ConfigError: both given, neither None.
  """
  if steps is unset and secs is unset:
    return None, 600
  if secs is unset:
    return steps, None
  if steps is unset:
    return None, secs
  if steps is not None and secs is not None:
    fail(_SAVE_CKPT_ERR, "pass only one of them (the other None).",
         (steps, secs))
  return steps, secs


def replaced_checkpoint_cadence(values, replaced):
  """`values` updated with `replaced` (a new dict), by 2.15's replace()
  rule: setting one of save_checkpoints_steps / _secs to a value clears
  the other; setting both to values raises ConfigError."""
  values = dict(values, **replaced)
  steps, secs = values["save_checkpoints_steps"], values[
      "save_checkpoints_secs"]
  if "save_checkpoints_steps" in replaced and (
      "save_checkpoints_secs" in replaced):
    if steps is not None and secs is not None:
      fail(_SAVE_CKPT_ERR, "pass only one of them (the other None).",
           (steps, secs))
  elif "save_checkpoints_steps" in replaced and steps is not None:
    values["save_checkpoints_secs"] = None
  elif "save_checkpoints_secs" in replaced and secs is not None:
    values["save_checkpoints_steps"] = None
  return values


def validate_properties(values):
  """Runs every check below on RunConfig's `values` dict, in order.

  Raises:
    ConfigError: the first value that breaks its rule (2.15's message
      first for 2.15's fields).
  """
  for check in _CHECKS:
    check(values)


def _check_legacy_properties(values):
  """2.15's per-property checks, with 2.15's message first."""
  for name, condition, message, fix in _LEGACY_RULES:
    value = values[name]
    if value is not None and not condition(value):
      fail(message, fix, value)


def _check_harness_fields(values):
  """harness's own fields, in the table's order (`harness.fields`)."""
  for field in fields.FIELDS:
    field.check(values[field.name])


# validate_properties' order: 2.15's fields, then harness's in the table's
# order. The first broken rule is the one reported: keep it.
_CHECKS = (_check_legacy_properties, _check_harness_fields)


def merged_strategy(values, name):
  """`name` from the constructor or from experimental_distribute, not both."""
  nested = getattr(values["experimental_distribute"], name, None)
  if nested is None:
    return values[name]
  if values[name] is not None:
    fail(f"Either `{name}` or `experimental_distribute.{name}` can be set.",
         "pass the strategy in one place only.")
  return nested


def normalize_remote_cluster(remote_cluster):
  """dict / ClusterSpec / ClusterDef -> {job: [addresses]}, checked."""
  if isinstance(remote_cluster, tf.train.ClusterSpec):
    remote_cluster = remote_cluster.as_dict()
  elif isinstance(remote_cluster, tf.train.ClusterDef):
    remote_cluster = tf.train.ClusterSpec(remote_cluster).as_dict()
  if not isinstance(remote_cluster, dict):
    raise errors.ClusterConfigError(
        f"experimental_distribute.remote_cluster is {remote_cluster!r}: it "
        "must be a dict, tf.train.ClusterSpec or ClusterDef. Fix: pass "
        '{"worker": ["host:port", ...]}.')
  text = json.dumps(remote_cluster, default=repr)
  return cluster.parse_remote_cluster(
      text, source="experimental_distribute.remote_cluster")


def tf_config_summary(info):
  """TF_CONFIG in one short line: the task, the jobs with their sizes, and
  the names of the other keys given (e.g. `task worker/1 of {chief: 1,
  worker: 30, ps: 4}; also model_dir`)."""
  jobs = ", ".join(f"{job}: {len(a)}" for job, a in info.cluster.items())
  text = f"task {info.task_label} of {{{jobs}}}"
  extra = [key for key in ("environment", "model_dir", "service",
                           "session_master", "eval_session_master")
           if getattr(info, key) is not None]
  if extra:
    text += "; also " + ", ".join(extra)
  if len(text) > SUMMARY_CHARS:
    text = text[:SUMMARY_CHARS - 3] + "..."
  return text
