"""A server's claim as a graph: the variables and the one op that changes them.

`harness.distribute.server_claim` runs these ops on each server (the
client's claims and the server's `Watchdog`); see there for the protocol.
"""

__all__ = ["CONTAINER", "RESTART", "ClaimOps", "server_task", "server_device",
           "tf_module"]

CONTAINER = "harness_claim"
# The holder while a server waits for its watchdog to restart it: nobody
# can claim it until then.
RESTART = "!restart"


def tf_module():
  """TensorFlow, imported on first use."""
  from harness._tf import tf  # lazy: TF-free harness.server --help and flag errors; pylint: disable=g-import-not-at-top
  return tf


def server_task(job, index):
  return f"/job:{job}/replica:0/task:{index}"


def server_device(job, index):
  return f"{server_task(job, index)}/device:CPU:0"


class ClaimOps:
  """The claim graph of one server (built in its own tf.Graph)."""

  def __init__(self, device):
    tf = tf_module()
    self.graph = tf.Graph()
    with self.graph.as_default(), tf.device(device):
      self._holder = _variable(tf.string, "holder")
      self._deadline = _variable(tf.float64, "deadline")
      # Set by the server's Watchdog: an expired claim then waits for the
      # restart instead of being taken over with what its client left.
      self._watched = _variable(tf.bool, "watched")
      self.set_watched = tf.raw_ops.AssignVariableOp(
          resource=self._watched, value=tf.constant(True))
      self.token = tf.compat.v1.placeholder(tf.string, [])
      self.timeout = tf.compat.v1.placeholder(tf.float64, [])
      # "claim" (take or refresh), "clean" (clear), "expire" (restart now);
      # "clean" and "expire" act only if `token` holds the claim.
      self.action = tf.compat.v1.placeholder(tf.string, [])
      section = tf.CriticalSection(shared_name="harness_claim_lock")
      self.change = section.execute(self._change)
      self.watch = (*self._current(), tf.timestamp())

  def _current(self):
    """(holder, deadline) as stored; ("", 0) before the first claim."""
    tf = tf_module()
    ready = tf.raw_ops.VarIsInitializedOp(resource=self._holder)
    old_holder = tf.cond(
        ready, lambda: tf.raw_ops.ReadVariableOp(
            resource=self._holder, dtype=tf.string), lambda: tf.constant(""))
    old_deadline = tf.cond(
        ready, lambda: tf.raw_ops.ReadVariableOp(
            resource=self._deadline, dtype=tf.float64),
        lambda: tf.constant(0.0, tf.float64))
    return old_holder, old_deadline

  def _granted(self, old_holder, old_deadline, now):
    """(granted, mine): may `token` take or refresh the claim; holds it."""
    tf = tf_module()
    mine = tf.equal(old_holder, self.token)
    live = tf.logical_and(tf.not_equal(old_holder, ""), now < old_deadline)
    is_watched = tf.cond(
        tf.raw_ops.VarIsInitializedOp(resource=self._watched),
        lambda: tf.raw_ops.ReadVariableOp(resource=self._watched,
                                          dtype=tf.bool),
        lambda: tf.constant(False))
    free = tf.logical_or(
        tf.equal(old_holder, ""),
        tf.logical_and(tf.logical_not(live), tf.logical_not(is_watched)))
    granted = tf.logical_and(tf.logical_or(mine, free),
                             tf.not_equal(old_holder, RESTART))
    return granted, mine

  def _change(self):
    """`action` for `token`, run inside the critical section: (granted,
    the old holder, the seconds its claim had left)."""
    tf = tf_module()
    now = tf.timestamp()
    old_holder, old_deadline = self._current()
    granted, mine = self._granted(old_holder, old_deadline, now)
    claim = tf.logical_and(tf.equal(self.action, "claim"), granted)
    clean = tf.logical_and(tf.equal(self.action, "clean"), mine)
    expire = tf.logical_and(tf.equal(self.action, "expire"), mine)
    new_holder = tf.where(
        claim, self.token,
        tf.where(clean, tf.constant(""),
                 tf.where(expire, tf.constant(RESTART), old_holder)))
    new_deadline = tf.where(
        claim, now + self.timeout,
        tf.where(mine, tf.constant(0.0, tf.float64), old_deadline))
    with tf.control_dependencies([
        tf.raw_ops.AssignVariableOp(resource=self._holder, value=new_holder),
        tf.raw_ops.AssignVariableOp(resource=self._deadline,
                                    value=new_deadline)]):
      return (tf.identity(granted), tf.identity(old_holder),
              tf.identity(old_deadline - now))


def _variable(dtype, name):
  """The server's resource variable `name` (shared by every client graph)."""
  return tf_module().raw_ops.VarHandleOp(dtype=dtype, shape=[], container=CONTAINER,
                                   shared_name=name)
