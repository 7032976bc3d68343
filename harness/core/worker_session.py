"""A worker's session creator that waits for the chief's initialisation.

    creator = WaitForChiefSessionCreator(scaffold, master, config,
                                         max_wait_secs=7200,
                                         recovery_wait_secs=1.0)

Used by `core/train_loop` for tasks that do not initialise variables
themselves (ps-style workers).
"""

from harness._tf import tf

__all__ = ["WaitForChiefSessionCreator"]


class WaitForChiefSessionCreator(tf.compat.v1.train.SessionCreator):
  """A worker's session: waits (polling every few s) for the chief's init.

  MonitoredTrainingSession's worker creator polls every 30 s with no way
  to change it; a new worker would sit idle up to 30 s for nothing.
  """

  def __init__(self, scaffold, master, config, max_wait_secs,
               recovery_wait_secs):
    self._scaffold = scaffold
    self._master = master
    self._config = config
    self._max_wait_secs = max_wait_secs
    self._recovery_wait_secs = recovery_wait_secs

  def create_session(self):
    self._scaffold.finalize()
    manager = tf.compat.v1.train.SessionManager(
        local_init_op=self._scaffold.local_init_op,
        local_init_feed_dict=self._scaffold.local_init_feed_dict,
        ready_op=self._scaffold.ready_op,
        ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
        graph=tf.compat.v1.get_default_graph(),
        recovery_wait_secs=self._recovery_wait_secs)
    return manager.wait_for_session(
        self._master, config=self._config, max_wait_secs=self._max_wait_secs)
