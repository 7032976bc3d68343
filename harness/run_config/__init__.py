"""harness.run_config: tf.estimator 2.15's `run_config` module.

    config = harness.run_config.RunConfig(model_dir="/tmp/m",
                                          save_checkpoints_steps=500)
    config = config.replace(keep_checkpoint_max=10)
    config.is_chief, config.task_type, config.cluster_spec

The package door; each name lives in the module a reader comes to change:
`config` (the `RunConfig` class: constructor, properties, `replace()`),
`checks` (its value rules and their messages), `distribution` (strategies
and TF_CONFIG -> task facts, `DistributeConfig`, `TaskType`, the default
session config, `check_supported_config`) and `model_dir`
(`resolve_model_dir`, the Estimator's model_dir merge).

`__all__` is what `tensorflow_estimator.python.estimator.run_config`
forwards (`harness.compat.aliases`); harness's own constants (defined in
`harness.fields`) are importable here too, outside it.
"""

from harness.fields import DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS
from harness.fields import DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS
from harness.fields import STEPS_PER_LOOP_AUTO
from harness.run_config.config import RunConfig
from harness.run_config.distribution import check_supported_config
from harness.run_config.distribution import DistributeConfig
from harness.run_config.distribution import get_default_session_config
from harness.run_config.distribution import INDEPENDENT_WORKER
from harness.run_config.distribution import STANDALONE_CLIENT
from harness.run_config.distribution import TaskType
from harness.run_config.model_dir import resolve_model_dir

__all__ = [
    # tf.estimator 2.15's run_config.
    "RunConfig", "DistributeConfig", "TaskType", "get_default_session_config",
    # harness's steps before a run.
    "resolve_model_dir", "check_supported_config",
]
