"""model_dir path text: one normal form, URL detection (no TensorFlow).

The edges (`harness.main`'s flags, the Estimator and RunConfig constructors)
normalise a model_dir once; everything after uses the result as is::

    paths.normalize_model_dir("~/runs/m")      # "/home/me/runs/m"
    paths.normalize_model_dir("rel/m")         # "<cwd>/rel/m"
    paths.normalize_model_dir("gs://b/m")      # "gs://b/m" (URLs unchanged)

`merge_model_dirs` is the one rule that picks a run's model_dir from the
Estimator's argument (or `--model_dir`), RunConfig's and TF_CONFIG's.
No file is read or created here; `harness.state.storage` does the file access
(`storage.resolve_model_dir`: this rule, a temporary folder when nothing
names one, and the one log line).
"""

import os

from harness import errors

__all__ = ["is_url", "normalize_model_dir", "merge_model_dirs",
           "FROM_ARGUMENT", "FROM_RUN_CONFIG", "FROM_TF_CONFIG",
           "FROM_NOTHING"]


def is_url(path):
  """True for "scheme://..." paths (gs://, s3://, hdfs://, ram://, ...)."""
  return "://" in os.fsdecode(os.fspath(path))


def normalize_model_dir(model_dir):
  """The one form of a model_dir every task and log line uses.

  `~` is expanded and a relative local path made absolute (against the
  current directory, once, so a later chdir changes nothing); URLs such as
  `gs://bucket/m` or `ram://m/` are returned unchanged.

  Args:
    model_dir: str, bytes or os.PathLike, or None.

  Returns:
    str, or None when `model_dir` is None or empty.
  """
  if model_dir is None:
    return None
  path = os.fsdecode(os.fspath(model_dir))
  if not path:
    return None
  if is_url(path):
    return path
  # Path arithmetic on a local path (expanduser reads $HOME, abspath the
  # current directory); nothing under model_dir is touched.
  return os.path.abspath(os.path.expanduser(path))  # local-fs: normalising


# Where a run's model_dir came from (`merge_model_dirs`'s `source`).
FROM_ARGUMENT = "from Estimator(model_dir=...)"
FROM_RUN_CONFIG = "from RunConfig(model_dir=...)"
FROM_TF_CONFIG = "from TF_CONFIG's model_dir"
FROM_NOTHING = "temporary: nothing named one"


def merge_model_dirs(*, argument=None, run_config=None, tf_config=None):
  """THE model_dir rule (tf.estimator 2.15's), with no file access.

  The candidates, most specific first: the Estimator's `model_dir`
  argument (`harness.main` passes `--model_dir` there), `RunConfig`'s
  `model_dir` argument, TF_CONFIG's "model_dir". Any two that are given
  must agree; the first one given wins. A task's plan
  (`harness.plan.plan_task`) merges the binary's --model_dir, or
  RunConfig's, with TF_CONFIG's; the Estimator its argument with its
  RunConfig's. Every candidate is normalised (`normalize_model_dir`)
  before it is compared.

  Args:
    argument: the Estimator's (or --model_dir's) value, or None.
    run_config: RunConfig's value, or None.
    tf_config: TF_CONFIG's "model_dir", or None.

  Returns:
    (model_dir, source): the normalised path, or None when no candidate
    names one (a run then makes a temporary folder); `source` is one of the
    `FROM_*` texts, for the log line.

  Raises:
    ConfigError: `run_config` is "", or `argument` and the RunConfig's (or
      TF_CONFIG's) model_dir differ (2.15's messages).
    ClusterConfigError: `run_config` and TF_CONFIG's model_dir differ.
  """
  if run_config is not None and not os.fspath(run_config):
    raise errors.ConfigError(
        "model_dir should be non-empty. Fix: pass a path or None.")
  argument, configured, in_tf_config = (
      normalize_model_dir(argument), normalize_model_dir(run_config),
      normalize_model_dir(tf_config))
  if configured and in_tf_config and configured != in_tf_config:
    raise errors.ClusterConfigError(
        "`model_dir` provided in RunConfig construct, if set, must have the "
        "same value as the model_dir in TF_CONFIG. model_dir: "
        f'{os.fsdecode(run_config)}\nTF_CONFIG["model_dir"]: {tf_config}.\n'
        "Fix: drop one of them, or make them equal.")
  source = FROM_RUN_CONFIG if configured else FROM_TF_CONFIG
  configured = configured or in_tf_config
  if argument and configured and argument != configured:
    raise errors.ConfigError(
        "`model_dir` are set both in constructor and `RunConfig`, but with "
        f"different values. In constructor: '{argument}', in `RunConfig`: "
        f"'{configured}'  Fix: set model_dir in one place only, or to the "
        "same value.")
  if argument:
    return argument, FROM_ARGUMENT
  if configured:
    return configured, source
  return None, FROM_NOTHING
