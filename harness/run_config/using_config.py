"""2.15's `Using config: {...}` line, the first of every Estimator.

    using_config.log(config)   # INFO:tensorflow:Using config: {'_model_dir': ...

tf.estimator 2.15's Estimator logged `str(vars(config))` of its RunConfig
(estimator.py, `Estimator.__init__`) on TensorFlow's logger. harness's
RunConfig keeps its values elsewhere, so the line is rebuilt from the
properties, in 2.15's order and with 2.15's `_name` keys.
"""

import logging as std_logging

__all__ = ["KEYS_215", "text", "log"]

# vars(RunConfig()) of tf.estimator 2.15, in its order.
KEYS_215 = (
    "model_dir", "tf_random_seed", "save_summary_steps",
    "save_checkpoints_steps", "save_checkpoints_secs", "session_config",
    "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
    "log_step_count_steps", "train_distribute", "device_fn", "protocol",
    "eval_distribute", "experimental_distribute",
    "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
    "checkpoint_save_graph_def", "service", "cluster_spec", "task_type",
    "task_id", "global_id_in_cluster", "master", "evaluation_master",
    "is_chief", "num_ps_replicas", "num_worker_replicas")


def text(config):
  """`str(vars(config))` as 2.15 printed it, from `config`'s properties."""
  return str({f"_{name}": getattr(config, name) for name in KEYS_215})


def log(config):
  """Logs 2.15's `Using config: ...` INFO line on TensorFlow's logger."""
  std_logging.getLogger("tensorflow").info("Using config: %s", text(config))
