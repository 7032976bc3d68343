"""The Estimator's model_dir and RunConfig: 2.15's merge, decided once.

    model_dir, config = model_dir.resolve_model_dir(model_dir, config)

`Estimator.__init__` (and `keras_lib.model_to_estimator`) hand their
`model_dir` argument and `config` here: the argument is merged with the
model_dir of the config's plan (`RunConfig.plan`, which names where it came
from; `harness.state.paths.merge_model_dirs`, once), and the result, which
the RunConfig carries from then on, logged in one line with its source
(`harness.state.storage.resolve_model_dir`).
"""

import logging as std_logging

from absl import logging

from harness.run_config import checks
from harness.run_config.config import RunConfig
from harness.run_config.distribution import get_default_session_config
from harness.state import paths
from harness.state import storage

__all__ = ["resolve_model_dir"]


def resolve_model_dir(constructor_model_dir, config):
  """The Estimator's model_dir and config: 2.15's merge, decided once.

  Args:
    constructor_model_dir: the Estimator's `model_dir` (str, PathLike,
      None); `harness.main` passes `--model_dir` here.
    config: a `RunConfig` or None (a default one is made).

  Returns:
    (model_dir, config): the constructor's model_dir, else the plan's
    (RunConfig's, else TF_CONFIG's), else a new temporary folder (one log
    line says which);
    config has that model_dir and, if it had none, the default
    session_config.

  Raises:
    ConfigError: config is not a RunConfig, or the model_dirs differ.
  """
  if config is None:
    config = RunConfig()
    # tf.estimator 2.15's line, on TensorFlow's logger as 2.15 wrote it.
    std_logging.getLogger("tensorflow").info("Using default config.")
  if not isinstance(config, RunConfig):
    checks.fail(
        f"config must be an instance of `RunConfig`, but provided {config}.",
        "pass tf.estimator.RunConfig(...) (harness.RunConfig).")
  if config.session_config is None:
    config = config.replace(session_config=get_default_session_config())
  plan = config.plan
  # The property, not the plan: a RunConfig subclass may override it (2.15's
  # own tests do); when it is the plan's, the plan says where it came from.
  configured = config.model_dir
  model_dir, source = paths.merge_model_dirs(argument=constructor_model_dir,
                                             run_config=configured)
  if source == paths.FROM_RUN_CONFIG and paths.normalize_model_dir(
      configured) == paths.normalize_model_dir(plan.model_dir):
    source = plan.model_dir_source
  model_dir = storage.resolve_model_dir(model_dir, source)
  if config.model_dir != model_dir:
    config = config.replace(model_dir=model_dir)
  return model_dir, config
