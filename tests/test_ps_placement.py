"""Tests of parameter-server variable placement (`RunConfig.ps_placement`).

"round_robin" (the default) is TensorFlow's placement, as tf.estimator 2.15
used; "by_size" gives each variable to the ps task holding the fewest bytes
(`harness.core.ps_placement`), on both ps paths: no strategy (the
Estimator's `replica_device_setter`) and a v1 ParameterServerStrategy. The
graphs are built for a cluster without starting a server.
"""

import json

from absl.testing import absltest
from absl.testing import parameterized

import harness
from harness import errors
from harness._tf import tf
from harness.core import ps_placement
from harness.core import train_graph

_CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
            "ps": ["127.0.0.1:3", "127.0.0.1:4"]}
# The wide model's order: a large table, then its small linear weight.
_SHAPES = [("global_step", []), ("e0", [1000, 16]), ("l0", [1000, 1]),
           ("e1", [1000, 16]), ("l1", [1000, 1]), ("e2", [1000, 16]),
           ("l2", [1000, 1])]


def _config(placement=None):
  environ = {"TF_CONFIG": json.dumps(
      {"cluster": _CLUSTER, "task": {"type": "worker", "index": 0}})}
  kwargs = {} if placement is None else {"ps_placement": placement}
  return harness.RunConfig(environ=environ, **kwargs)


def _make_variables():
  return {name: tf.compat.v1.get_variable(name, shape, dtype=tf.float32)
          for name, shape in _SHAPES}


def _tasks(variables):
  return {name: int(v.device.split("/task:")[1][0])
          for name, v in variables.items()}


def _bytes_on(tasks):
  sizes = {name: 4 * max(1, int(tf.TensorShape(shape).num_elements()))
           for name, shape in _SHAPES}
  totals = [0, 0]
  for name, task in tasks.items():
    totals[task] += sizes[name]
  return totals


class BySizeTest(absltest.TestCase):

  def test_each_variable_to_the_lightest_task(self):
    with tf.Graph().as_default(), tf.compat.v1.device(
        tf.compat.v1.train.replica_device_setter(
            ps_tasks=2, ps_strategy=ps_placement.BySize(2))):
      tasks = _tasks(_make_variables())
    # global_step (4 B) to 0, e0 to 1, l0 to 0, e1 to 0, l1 to 1, e2 ...
    self.assertEqual(tasks, {"global_step": 0, "e0": 1, "l0": 0, "e1": 0,
                             "l1": 1, "e2": 1, "l2": 0})
    # Three tables on two tasks: two and one (round robin: all three on
    # task 0, 192 KB against 12 KB).
    self.assertEqual(_bytes_on(tasks), [72004, 132000])

  def test_a_new_graph_starts_a_new_tally(self):
    placement = ps_placement.BySize(2)
    for _ in range(2):  # The same graph twice: the same placement.
      with tf.Graph().as_default(), tf.compat.v1.device(
          tf.compat.v1.train.replica_device_setter(
              ps_tasks=2, ps_strategy=placement)):
        tasks = _tasks(_make_variables())
      self.assertEqual(tasks["e0"], 1)
      self.assertEqual(placement.bytes_per_task, [72004, 132000])

  def test_unknown_sizes_count_nothing(self):
    with tf.Graph().as_default():
      table = tf.raw_ops.MutableHashTableV2(key_dtype=tf.string,
                                            value_dtype=tf.int64)
      self.assertEqual(ps_placement.variable_bytes(table.op), 0)
      v = tf.Variable(tf.zeros([3, 5], tf.float64))
      self.assertEqual(
          ps_placement.variable_bytes(v.handle.op), 3 * 5 * 8)

  def test_needs_a_task(self):
    with self.assertRaisesRegex(ValueError, "num_tasks >= 1, got 0"):
      ps_placement.BySize(0)


class RunConfigPlacementTest(parameterized.TestCase):

  def test_default_is_tensorflows_round_robin(self):
    self.assertEqual(harness.RunConfig().ps_placement, "round_robin")
    with tf.Graph().as_default(), tf.compat.v1.device(
        train_graph.replica_device_setter(_config())):
      tasks = _tasks(_make_variables())
    self.assertEqual([tasks[n] for n, _ in _SHAPES], [0, 1, 0, 1, 0, 1, 0])

  def test_by_size_without_a_strategy(self):
    with tf.Graph().as_default(), tf.compat.v1.device(
        train_graph.replica_device_setter(_config("by_size"))):
      tasks = _tasks(_make_variables())
    self.assertEqual(tasks["e0"], 1)
    self.assertNotEqual(tasks["e1"], tasks["e2"])

  @parameterized.parameters("by_size", "round_robin")
  def test_parameter_server_strategy(self, placement):
    strategy = tf.compat.v1.distribute.experimental.ParameterServerStrategy()
    strategy.configure(cluster_spec=_CLUSTER, task_type="worker", task_id=0)
    with tf.Graph().as_default():
      with strategy.scope(), train_graph._ps_placed(
          strategy, _config(placement)):
        tasks = _tasks(_make_variables())
      after = tf.compat.v1.get_variable("after", [1000, 16])
    tables = {tasks[n] for n in ("e0", "e1", "e2")}
    self.assertEqual(tables, {0, 1} if placement == "by_size" else {1})
    self.assertNotIn("/job:ps", after.device)  # Outside the scope: local.

  def test_a_bad_value_names_the_choices(self):
    with self.assertRaisesRegex(
        errors.ConfigError, "ps_placement must be one of round_robin, "
        "by_size. Given: 'evenly'"):
      harness.RunConfig(ps_placement="evenly")


if __name__ == "__main__":
  absltest.main()
