"""2.15's `Using config: {...}` line, the first of every Estimator.

    using_config.log(config)   # INFO:tensorflow:Using config: {'_model_dir': ...

tf.estimator 2.15's Estimator logged `str(vars(config))` of its RunConfig
(estimator.py, `Estimator.__init__`) on TensorFlow's logger. harness's
RunConfig keeps its values elsewhere, so the line is rebuilt from the
properties, in 2.15's order and with 2.15's `_name` keys.
"""

import logging as std_logging

from harness.run_config import config as config_lib

__all__ = ["KEYS_215", "text", "log"]

# vars(RunConfig()) of tf.estimator 2.15, in its order: the constructor's
# arguments, then what it derived from TF_CONFIG.
KEYS_215 = config_lib.CONSTRUCTOR_ARGS + (
    "service", "cluster_spec", "task_type", "task_id",
    "global_id_in_cluster", "master", "evaluation_master", "is_chief",
    "num_ps_replicas", "num_worker_replicas")


def text(config):
  """`str(vars(config))` as 2.15 printed it, from `config`'s properties."""
  return str({f"_{name}": getattr(config, name) for name in KEYS_215})


def log(config):
  """Logs 2.15's `Using config: ...` INFO line on TensorFlow's logger."""
  std_logging.getLogger("tensorflow").info("Using config: %s", text(config))
