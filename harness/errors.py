"""The one error hierarchy of harness.

Every error a user can cause derives from `HarnessError`, so a caller (or the
`harness.main` binary) can tell "you asked for something wrong" apart from a
bug. Messages name the offending value, the rule it breaks, where the value
came from and how to fix it, e.g.::

    TF_CONFIG task {"type": "worker", "index": 2} is not in the cluster:
    cluster["worker"] has 2 addresses (valid index 0..1).

This module imports nothing from TensorFlow.
"""

__all__ = [
    "EXIT_DONE",
    "EXIT_FAILED",
    "EXIT_BAD_CONFIG",
    "EXIT_INTERRUPTED",
    "EXIT_PREEMPTED",
    "HarnessError",
    "ConfigError",
    "ClusterConfigError",
    "FlagError",
    "ModelFnError",
    "InputFnError",
    "CheckpointError",
    "RemoteClusterError",
    "RemoteClusterBusyError",
    "PeerLostError",
    "ModelDirLeaseError",
    "ModelDirDeletedError",
    "ServerStartError",
    "LegacyKerasError",
    "NotSupportedError",
    "ConfigTypeError",
    "ModelFnTypeError",
    "ClusterConfigTypeError",
    "TrainingStalledError",
    "PeersNotReadyError",
    "NotTrainedError",
]

# The exit statuses of harness's binaries, written once (docs/ERRORS.md "Exit
# status"); the k8s renderings turn them into failure policies.
EXIT_DONE = 0
EXIT_FAILED = 1  # A problem while the job starts or runs: a restart may help.
EXIT_BAD_CONFIG = 2  # Bad flags or TF_CONFIG: no restart can help.
EXIT_INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C, after the stop checkpoint.
EXIT_PREEMPTED = 143  # 128 + SIGTERM: preempted, after the stop checkpoint.


class HarnessError(Exception):
  """Base class of every error harness raises on purpose."""


class ConfigError(HarnessError, ValueError):
  """A configuration value breaks a rule (RunConfig, specs, flags)."""


class ClusterConfigError(ConfigError):
  """TF_CONFIG or a remote cluster description is invalid."""


class FlagError(ConfigError):
  """A command-line flag of a harness binary is invalid."""


class ModelFnError(HarnessError, ValueError):
  """A `model_fn` has a bad signature or returned a bad `EstimatorSpec`."""


class InputFnError(HarnessError, ValueError):
  """An `input_fn` has a bad signature or returned a bad structure."""


class CheckpointError(HarnessError, RuntimeError):
  """A checkpoint cannot be read, or does not match the model."""


class NotTrainedError(CheckpointError, ValueError):
  """model_dir holds no checkpoint to read (tf.estimator raised ValueError)."""


class RemoteClusterError(HarnessError, ConnectionError):
  """Servers of a remote cluster cannot be reached in the allowed time."""


class RemoteClusterBusyError(RemoteClusterError):
  """Another live standalone client drives the remote cluster's servers."""


class PeerLostError(HarnessError, RuntimeError):
  """A task of the training cluster stopped answering."""


class ServerStartError(HarnessError, RuntimeError):
  """A task's in-process server cannot start: the RunConfig lacks the
  cluster, task or master (tf.estimator raised RuntimeError)."""


class ModelDirLeaseError(HarnessError, RuntimeError):
  """Another trainer holds (or took over) the lease of this model_dir."""


class ModelDirDeletedError(HarnessError, ValueError):
  """The trainer's model_dir was deleted (or replaced by a new folder) while
  it trained: the next checkpoint would go where no earlier one is
  (tf.estimator raised ValueError from the Saver when the folder was gone)."""

  @staticmethod
  def message(model_dir, detail):
    """The one-line text for `model_dir` (`detail`: what showed it)."""
    return (
        f"--model_dir={model_dir} was deleted while the job ran "
        f"({detail}); its checkpoints went with it. Fix: keep "
        "model_dir in place while a job writes it (did a cleanup or another "
        "job remove it?), then run the same command again (from step 0 if "
        "nothing is left).")


class TrainingPreemptedError(HarnessError, RuntimeError):
  """Training stopped early on SIGTERM; the chief checkpointed that step.

  A supervisor (harness.launch --max_restarts, a k8s Job) restarts the task
  and training resumes at exactly that step. SIGINT (Ctrl-C) stops training
  the same way; `signal_name` says which signal it was.
  """

  signal_name = "SIGTERM"


class PredictionInterruptedError(TrainingPreemptedError):
  """`--mode=predict` stopped by SIGINT (Ctrl-C) or SIGTERM; the predictions
  file holds complete lines. A TrainingPreemptedError, so that a binary ends
  it as any stopped run (130 / 143, one line); nothing is to be resumed."""


class LegacyKerasError(HarnessError, ImportError):
  """TensorFlow was imported without `TF_USE_LEGACY_KERAS=1`."""


class NotSupportedError(HarnessError, NotImplementedError):
  """A tf.estimator feature harness does not implement (yet)."""


class ConfigTypeError(ConfigError, TypeError):
  """A configuration value has the wrong type (tf.estimator raised
  TypeError there; this is both, so either `except` clause catches it)."""


class ModelFnTypeError(ModelFnError, TypeError):
  """A `model_fn` returned a value of the wrong type where tf.estimator
  raised TypeError (e.g. a hook that is not a SessionRunHook)."""


class ClusterConfigTypeError(ClusterConfigError, TypeError):
  """TF_CONFIG has a value of the wrong type where tf.estimator raised
  TypeError (e.g. a non-dict "service")."""


class TrainingStalledError(HarnessError, RuntimeError):
  """The train_op ran many times without advancing the global step."""


class PeersNotReadyError(HarnessError, TimeoutError):
  """Tasks a training session needs did not answer in the allowed time."""
