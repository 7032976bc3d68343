"""An evaluator process that builds a multi-worker strategy, made safe.

    from harness.distribute import evaluator_guard

    evaluator_guard.install(os.environ)   # before the user's code runs

`harness.run` and the binary's evaluator call it (tf.estimator 2.15's
legacy scripts build their strategy in every task, the evaluator too).
"""

from absl import logging

from harness import _tf_private
from harness import cluster as cluster_lib

__all__ = ["install"]


def install(environ, *, cluster_info=None):
  """Lets an evaluator process construct multi-worker strategies safely.

  A legacy script builds its strategy at top level in every task. In an
  evaluator (TF_CONFIG task type "evaluator") a collective strategy then
  fails with `KeyError: 'evaluator'`, or, if the cluster lists the
  evaluator, starts a server and health checks on its port. With the guard,
  strategies built while TF_CONFIG's task is an evaluator see no cluster
  and initialise for local training (the evaluator needs no strategy). The
  guard is process-wide, idempotent, and inert for other task types.

  Args:
    environ: a mapping such as `os.environ`, read for TF_CONFIG. (The guard
      itself checks `os.environ`, which is what TensorFlow reads.)
    cluster_info: TF_CONFIG already parsed (`ClusterInfo`): `environ` unread.

  Returns:
    True if TF_CONFIG's task is an evaluator and the guard is installed.

  Raises:
    ClusterConfigError: TF_CONFIG is malformed.
  """
  info = cluster_info or cluster_lib.from_environ(environ)
  if info is None or info.task_type != cluster_lib.EVALUATOR:
    return False
  _tf_private.localize_tf_config_resolver({cluster_lib.EVALUATOR})
  logging.info("strategy | evaluator | strategies built here train locally")
  return True
