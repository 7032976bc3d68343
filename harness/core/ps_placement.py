"""Which parameter server holds each variable: by size, or round robin.

    placement = ps_placement.BySize(num_ps)   # a replica_device_setter
    device_fn = tf.compat.v1.train.replica_device_setter(  # ps_strategy
        ps_tasks=num_ps, ps_strategy=placement, ...)

TensorFlow places ps variables round robin in creation order (tf.estimator
2.15's placement, and `RunConfig(ps_placement="round_robin")`, the
default). A model whose large and small variables alternate then puts
every large one on the same task: the bench wide model's 8 embedding
tables (6.4 MB each) all land on ps 0 of 2 and their 8 linear weights
(0.4 MB) on ps 1; the MLP's three kernels on ps 0 and its biases on ps 1.
`ps_placement="by_size"` gives each variable to the task holding the
fewest bytes so far (the lowest index on a tie), so the tasks' bytes, and
with them their share of the reads and updates, come out even.

Both are decided by creation order alone, so every trainer of a
between-graph cluster, building the same graph, places each variable on
the same task. The tally starts again in each graph.
"""

from harness._tf import tf

__all__ = ["BySize", "variable_bytes"]


def variable_bytes(op):
  """Bytes of the variable `op` creates (shape x dtype size), 0 when its
  shape or dtype is not known (a hash table, `validate_shape=False`)."""
  node = op if isinstance(op, tf.compat.v1.NodeDef) else op.node_def
  if "shape" not in node.attr or "dtype" not in node.attr:
    return 0
  shape = tf.TensorShape(node.attr["shape"].shape)
  if not shape.is_fully_defined():
    return 0
  dtype = tf.dtypes.as_dtype(node.attr["dtype"].type)
  size = dtype.size if dtype != tf.string else 0
  return shape.num_elements() * size


class BySize:
  """A `ps_strategy` for `tf.compat.v1.train.replica_device_setter`: each
  ps op goes to the task with the fewest bytes placed so far in its graph.

  Args:
    num_tasks: ps tasks, >= 1.
  """

  def __init__(self, num_tasks):
    if num_tasks < 1:
      raise ValueError(f"BySize needs num_tasks >= 1, got {num_tasks}.")
    self._num_tasks = num_tasks
    self._graph = None
    self._bytes = [0] * num_tasks

  @property
  def bytes_per_task(self):
    """Bytes placed on each task in the current graph (a copy)."""
    return list(self._bytes)

  def __call__(self, op):
    graph = getattr(op, "graph", None)
    if graph is not self._graph:  # A new graph: a new tally.
      self._graph, self._bytes = graph, [0] * self._num_tasks
    task = min(range(self._num_tasks), key=lambda i: (self._bytes[i], i))
    self._bytes[task] += variable_bytes(op)
    return task
