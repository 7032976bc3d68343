"""Tests of harness.core.train_graph: the order of the global-step read.

The hooks (summaries, logging, checkpoints) decide from the global step they
fetch with the train_op. Unordered, TensorFlow may read it before or after
that run's increment, and the summary steps then shift by one from run to
run (a real flake: loss summaries at 20, 30, 40 instead of 21, 31). The read
is made before model_fn, which is built under a control dependency on it.
"""

from absl.testing import absltest

from harness import _tf_private
from harness import run_config as run_config_lib
from harness import spec as spec_lib
from harness._tf import tf
from harness.core import train_graph


def _input_fn():
  return {"x": tf.constant([[1.0], [2.0]])}, tf.constant([[2.0], [4.0]])


def _model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable("w", [1, 1])
  loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return spec_lib.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def _ancestors(op):
  """Every op `op` waits for: data and control inputs, transitively."""
  seen, todo = set(), [op]
  while todo:
    current = todo.pop()
    for parent in ([t.op for t in current.inputs] +
                   list(current.control_inputs)):
      if parent not in seen:
        seen.add(parent)
        todo.append(parent)
  return seen


def _step_increments(graph, global_step):
  return [op for op in graph.get_operations()
          if op.type == "AssignAddVariableOp" and
          op.inputs[0].op is global_step.handle.op]


class GlobalStepReadOrderTest(absltest.TestCase):

  def _build(self):
    config = run_config_lib.RunConfig()
    call = lambda f, l, mode, cfg: spec_lib.call_model_fn(
        _model_fn, f, l, mode, {}, cfg)
    graph = tf.Graph()
    with graph.as_default():
      built = train_graph.build_local(call, lambda: _input_fn(), {}, config)
    return graph, built

  def test_the_increment_waits_for_the_hooks_read(self):
    graph, built = self._build()
    reads = graph.get_collection(_tf_private.GLOBAL_STEP_READ_KEY)
    self.assertLen(reads, 1)
    increments = _step_increments(graph, built.global_step)
    self.assertLen(increments, 1)
    self.assertIn(reads[0].op, _ancestors(increments[0]))

  def test_the_read_sees_the_step_before_each_run(self):
    graph, built = self._build()
    read = graph.get_collection(_tf_private.GLOBAL_STEP_READ_KEY)[0]
    with graph.as_default(), tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      seen = [session.run([built.spec.train_op, read])[1] for _ in range(50)]
    self.assertEqual(seen, list(range(50)))

  def test_the_check_fails_without_the_dependency(self):
    # The same model_fn built with no read made first: nothing orders them.
    graph = tf.Graph()
    with graph.as_default():
      step = tf.compat.v1.train.create_global_step()
      features, labels = _input_fn()
      spec = _model_fn(features, labels, "train")
      read = step.read_value()
    del spec
    increments = _step_increments(graph, step)
    self.assertLen(increments, 1)
    self.assertNotIn(read.op, _ancestors(increments[0]))


if __name__ == "__main__":
  absltest.main()
