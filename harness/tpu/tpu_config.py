"""`TPUConfig`, `InputPipelineConfig` and the TPU `RunConfig` (2.15's API).

Usage (as BERT-era scripts write it)::

    config = tf.compat.v1.estimator.tpu.RunConfig(
        model_dir="/tmp/m", save_checkpoints_steps=1000,
        tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(
            iterations_per_loop=50))

The constructors keep tf.estimator 2.15's signatures, defaults and checks.
Off-TPU (`TPUEstimator(use_tpu=False)`) `iterations_per_loop` becomes
harness's `steps_per_loop` (see `steps_per_loop_for`); the other TPU
fields (shards, cores per replica, infeed settings) are kept and reported
but change nothing on CPU/GPU, as in 2.15.
"""

import collections
import numbers
import os
import re

from absl import logging

from harness import cluster as cluster_lib
from harness import errors
from harness import run_config as run_config_lib

__all__ = ["InputPipelineConfig", "TPUConfig", "RunConfig",
           "parse_iterations_per_loop", "IterationsPerLoop",
           "steps_per_loop_for"]

# TF_CONFIG["service"] key naming the TPU worker job (2.15's).
_TPU_WORKER_JOB_NAME = "tpu_worker_job_name"
_CORES_PER_REPLICA = (1, 2, 4, 8, 16, 32, 64, 128)
_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600}
_TIME_PATTERN = re.compile(r"^([1-9]\d*)([smh])$")


class InputPipelineConfig:
  """How input_fn is called per host / core on a TPU (2.15's constants)."""
  PER_SHARD_V1 = 1
  PER_HOST_V1 = 2
  PER_HOST_V2 = 3
  BROADCAST = 4
  SLICED = 5


IterationsPerLoop = collections.namedtuple("IterationsPerLoop",
                                           ["value", "unit"])


def parse_iterations_per_loop(iterations_per_loop):
  """`50` -> (50, "count"); `"30s"`, `"2m"`, `"1h"` -> (seconds, "seconds").

  Raises:
    ConfigError: not a positive int nor `<N>s|m|h`.
  """
  value = iterations_per_loop
  if isinstance(value, numbers.Integral) and not isinstance(value, bool):
    if value >= 1:
      return IterationsPerLoop(int(value), "count")
  elif isinstance(value, str):
    match = _TIME_PATTERN.match(value)
    if match:
      return IterationsPerLoop(
          int(match.group(1)) * _SECONDS_PER_UNIT[match.group(2)], "seconds")
  if isinstance(value, numbers.Integral) and not isinstance(value, bool):
    _check_positive_integer(value, "iterations_per_loop")
  raise errors.ConfigError(
      f"Invalid TPUConfig `iterations_per_loop` value: {value!r}. It must be "
      "positive: an integer (train steps per session.run) or a time such as "
      '"30s", "5m" or "1h". Fix: pass e.g. TPUConfig(iterations_per_loop=100).')


def _check_positive_integer(value, name):
  """2.15's check and sentences: TypeError unless an int, ValueError < 1."""
  if isinstance(value, bool) or not isinstance(value, numbers.Integral):
    raise errors.ConfigTypeError(
        f"{name} must be int, got {type(value)}. Fix: pass an int >= 1, or "
        "None.")
  if value < 1:
    raise errors.ConfigError(
        f"{name} must be positive, got {value}. Fix: pass an int >= 1, or "
        "None.")


def _tpu_job_name_from(environ):
  """TF_CONFIG["service"]["tpu_worker_job_name"] (2.15's), or None."""
  try:
    info = cluster_lib.from_environ(environ)
  except errors.ClusterConfigError:
    return None  # RunConfig reports a malformed TF_CONFIG, with its fix.
  service = info.service if info is not None else None
  name = (service or {}).get(_TPU_WORKER_JOB_NAME)
  if name:
    logging.info("Load TPU job name from TF_CONFIG: %s", name)
  return name


class TPUConfig(
    collections.namedtuple("TPUConfig", [
        "iterations_per_loop",
        "num_shards",
        "num_cores_per_replica",
        "per_host_input_for_training",
        "tpu_job_name",
        "initial_infeed_sleep_secs",
        "input_partition_dims",
        "eval_training_input_configuration",
        "experimental_host_call_every_n_steps",
        "experimental_allow_per_host_v2_parallel_get_next",
        "experimental_customized_tpu_infeed_outfeed_session_hook_class",
    ])):
  """TPU settings of a `TPUEstimator` (tf.estimator 2.15's fields/defaults).

  Off-TPU only `iterations_per_loop` acts: it is the number of training
  steps run inside one `session.run` (harness's `steps_per_loop`). Per
  2.15, `True`/`False` for `per_host_input_for_training` are stored as
  `PER_HOST_V1`/`PER_SHARD_V1`.
  """

  def __new__(cls,
              iterations_per_loop=2,
              num_shards=None,
              num_cores_per_replica=None,
              per_host_input_for_training=True,
              tpu_job_name=None,
              initial_infeed_sleep_secs=None,
              input_partition_dims=None,
              eval_training_input_configuration=(
                  InputPipelineConfig.PER_HOST_V1),
              experimental_host_call_every_n_steps=1,
              experimental_allow_per_host_v2_parallel_get_next=False,
              experimental_customized_tpu_infeed_outfeed_session_hook_class=(
                  None)):
    parse_iterations_per_loop(iterations_per_loop)
    if num_shards is not None:
      _check_positive_integer(num_shards, "TPUConfig num_shards")
    if input_partition_dims is not None:
      if len(input_partition_dims) not in (1, 2):
        raise errors.ConfigError(
            "input_partition_dims must be a list/tuple with one or two "
            f"elements, given: {input_partition_dims!r}.")
      if per_host_input_for_training is not InputPipelineConfig.PER_HOST_V2:
        raise errors.ConfigError(
            "input_partition_dims is only supported in PER_HOST_V2 mode. "
            "Fix: set per_host_input_for_training=InputPipelineConfig."
            "PER_HOST_V2.")
      if num_cores_per_replica is None:
        raise errors.ConfigError(
            "input_partition_dims requires setting num_cores_per_replica.")
    if (num_cores_per_replica is not None and
        num_cores_per_replica not in _CORES_PER_REPLICA):
      raise errors.ConfigError(
          "num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; got "
          f"{num_cores_per_replica!r}.")
    if eval_training_input_configuration not in (
        InputPipelineConfig.PER_HOST_V1, InputPipelineConfig.SLICED):
      raise errors.ConfigError(
          "eval_training_input_configuration must be PER_HOST_V1 or SLICED; "
          f"got {eval_training_input_configuration!r}.")
    if per_host_input_for_training is False:
      per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
    elif per_host_input_for_training is True:
      per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
    if initial_infeed_sleep_secs:
      _check_positive_integer(initial_infeed_sleep_secs,
                              "TPUConfig initial_infeed_sleep_secs")
    tpu_job_name = tpu_job_name or _tpu_job_name_from(os.environ)
    return super().__new__(
        cls, iterations_per_loop, num_shards, num_cores_per_replica,
        per_host_input_for_training, tpu_job_name, initial_infeed_sleep_secs,
        input_partition_dims, eval_training_input_configuration,
        experimental_host_call_every_n_steps,
        experimental_allow_per_host_v2_parallel_get_next,
        experimental_customized_tpu_infeed_outfeed_session_hook_class)


class RunConfig(run_config_lib.RunConfig):
  """`RunConfig` with a `tpu_config` and a cluster resolver (2.15's).

  Args:
    tpu_config: a `TPUConfig` (default `TPUConfig()`).
    evaluation_master: address for evaluation; default: `master`.
    master: address for training. Cannot be combined with `cluster`.
    cluster: a `tf.distribute.cluster_resolver.ClusterResolver`; its
      `master()` and `cluster_spec()` are used.
    **kwargs: `harness.RunConfig`'s arguments (including keyword-only
      `steps_per_loop`: when given, it wins over `iterations_per_loop`).
  """

  def __init__(self, tpu_config=None, evaluation_master=None, master=None,
               cluster=None, **kwargs):
    super().__init__(**kwargs)
    if tpu_config is not None and not isinstance(tpu_config, TPUConfig):
      raise errors.ConfigError(
          f"tpu_config must be a TPUConfig, given: {tpu_config!r}. Fix: pass "
          "tf.compat.v1.estimator.tpu.TPUConfig(iterations_per_loop=...).")
    self._tpu_config = tpu_config or TPUConfig()
    self._cluster = cluster
    self._steps_per_loop_given = "steps_per_loop" in kwargs
    self._tpu_master = self._tpu_evaluation_master = None
    if master is not None:
      if cluster is not None:
        raise errors.ConfigError(
            "Both master and cluster are set. Fix: pass one of them: the "
            "cluster resolver's master() is the training master.")
      self._tpu_master = master
    elif cluster:
      self._tpu_master = cluster.master()
    if evaluation_master is not None:
      self._tpu_evaluation_master = evaluation_master
    elif (not super().evaluation_master and
          self.task_type != run_config_lib.TaskType.EVALUATOR):
      self._tpu_evaluation_master = self.master
    if cluster:
      self._set_cluster_from(cluster)

  def _set_cluster_from(self, cluster):
    spec = cluster.cluster_spec()
    self._cluster_spec = spec
    config = self.session_config
    if config is None:
      config = run_config_lib.get_default_session_config()
      config.isolate_session_state = True
    else:
      config = type(config).FromString(config.SerializeToString())
    if config.HasField("cluster_def"):
      raise errors.ConfigError(
          "You cannot provide a ClusterResolver and "
          "session_config.cluster_def. Fix: drop one of them.")
    if spec:
      config.cluster_def.CopyFrom(spec.as_cluster_def())
    self._session_config = config

  @property
  def master(self):
    if self._tpu_master is not None:
      return self._tpu_master
    return super().master

  @property
  def evaluation_master(self):
    if self._tpu_evaluation_master is not None:
      return self._tpu_evaluation_master
    return super().evaluation_master

  @property
  def tpu_config(self):
    return self._tpu_config

  @property
  def cluster(self):
    return self._cluster

  @property
  def steps_per_loop_given(self):
    """True when the constructor was given `steps_per_loop` explicitly."""
    return self._steps_per_loop_given

  def _derive(self):
    super()._derive()
    cluster = getattr(self, "_cluster", None)
    if cluster:  # replace() re-derives: keep the resolver's cluster.
      self._set_cluster_from(cluster)

  def replace(self, **kwargs):
    """As `harness.RunConfig.replace`, plus `tpu_config` (2.15's rule)."""
    has_tpu_config = "tpu_config" in kwargs
    tpu_config = kwargs.pop("tpu_config", None)
    new = super().replace(**kwargs)
    if "steps_per_loop" in kwargs:
      new._steps_per_loop_given = True  # pylint: disable=protected-access
    if has_tpu_config:
      new._tpu_config = tpu_config  # pylint: disable=protected-access
    return new

  def __repr__(self):
    return f"{super().__repr__()[:-1]}, tpu_config={self._tpu_config})"


def steps_per_loop_for(config):
  """The `steps_per_loop` a TPUEstimator off-TPU trains with.

  `steps_per_loop` given to the RunConfig wins; else `iterations_per_loop`
  (a count), or "auto" for a time such as "60s" (harness picks K from the
  measured step time, as 2.15's TPU loop estimated its iteration count).
  """
  if not isinstance(config, RunConfig) or config.steps_per_loop_given:
    return config.steps_per_loop
  parsed = parse_iterations_per_loop(config.tpu_config.iterations_per_loop)
  if parsed.unit == "count":
    return parsed.value
  return run_config_lib.STEPS_PER_LOOP_AUTO
