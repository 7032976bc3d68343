"""One task of a multi-process strategy test (run by tests/test_strategies.py).

    python -m tests.programs.strategy_worker '<json spec>'

The spec: {"cluster": {...}, "task_type": ..., "task_id": ..., "kind": ...,
"num_devices": N, "steps": N, "user_strategy": "none" | "v1_eager" |
"v2_eager"}. A trainer builds a tiny Dense regression under the strategy,
trains with MonitoredSession until global_step reaches `steps`, and prints
one line `RESULT {json}` with its local step count, the final variables and
the number of replicas in sync. A "ps" task serves until killed (at most
`serve_secs`). With "v1_eager"/"v2_eager" the strategy is constructed in
eager mode with TF_CONFIG set, as a legacy script does.
"""

import json
import os
import sys
import time
import traceback

from harness._tf import tf
from harness.distribute import graph_strategy
from harness.distribute import strategies
from harness.distribute import task_devices
from harness.distribute import task_servers

_RECOVERY_WAIT_SECS = 0.2


class _WaitForChiefCreator(tf.compat.v1.train.SessionCreator):
  """WorkerSessionCreator, polling the chief every 0.2 s instead of 30 s."""

  def __init__(self, scaffold, master, config):
    self._scaffold, self._master, self._config = scaffold, master, config

  def create_session(self):
    self._scaffold.finalize()
    manager = tf.compat.v1.train.SessionManager(
        local_init_op=self._scaffold.local_init_op,
        ready_op=self._scaffold.ready_op,
        ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
        graph=tf.compat.v1.get_default_graph(),
        recovery_wait_secs=_RECOVERY_WAIT_SECS)
    return manager.wait_for_session(self._master, config=self._config,
                                    max_wait_secs=60)


class _ReadAtEndHook(tf.compat.v1.train.SessionRunHook):
  """Reads every global variable when the session ends."""

  def __init__(self):
    self.values = {}

  def end(self, session):
    variables = tf.compat.v1.global_variables()
    values = session.run(variables)
    self.values = {v.op.name: value.tolist() if hasattr(value, "tolist")
                   else value for v, value in zip(variables, values)}


def _user_strategy(spec):
  """The strategy as the user's script would construct it."""
  how = spec.get("user_strategy", "none")
  if how == "none":
    return strategies.make_strategy(
        spec["kind"], num_devices_per_worker=spec["num_devices"],
        cluster=spec["cluster"])
  os.environ["TF_CONFIG"] = json.dumps({
      "cluster": spec["cluster"],
      "task": {"type": spec["task_type"], "index": spec["task_id"]}})
  if how == "v1_eager_logical":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * spec["num_devices"])
    how = "v1_eager"
  if how == "v1_eager":
    return tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy()
  return tf.distribute.MultiWorkerMirroredStrategy()


def _dataset_fn(input_context):
  features = tf.random.stateless_normal(
      [64, 3], seed=[1, input_context.input_pipeline_id])
  labels = tf.reduce_sum(features, axis=1, keepdims=True)
  return tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(4)


def _step_fn(inputs):
  features, labels = inputs
  predictions = tf.compat.v1.layers.dense(features, 1, name="dense")
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
  train_op = optimizer.minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return train_op, loss


def train(spec):
  """Trains one task; returns what the RESULT line reports."""
  cluster, task_type, task_id = (spec["cluster"], spec["task_type"],
                                 spec["task_id"])
  count = spec["num_devices"]
  user_strategy = _user_strategy(spec)
  target = task_servers.in_process_server_target(
      user_strategy, cluster=cluster, task_type=task_type, task_id=task_id,
      num_devices_per_worker=count)
  strategy = graph_strategy.to_graph_strategy(user_strategy)
  session_config = strategies.configure_for_task(
      strategy, cluster=cluster, task_type=task_type, task_id=task_id,
      num_devices_per_worker=count)
  if target is None:
    server = tf.distribute.Server(
        tf.train.ClusterSpec(task_devices.training_cluster(cluster)),
        job_name=task_type, task_index=task_id, start=True,
        config=task_servers.server_config_for(
            session_config, cluster=cluster, task_type=task_type,
            num_devices_per_worker=count))
    target = server.target
  is_chief = task_type == "chief" or (
      task_type == "worker" and task_id == 0 and "chief" not in cluster)
  with tf.Graph().as_default(), strategy.scope():
    tf.compat.v1.train.get_or_create_global_step()
    iterator = strategy.make_input_fn_iterator(_dataset_fn)
    train_op, loss = strategy.extended.call_for_each_replica(
        _step_fn, args=(iterator.get_next(),))
    loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, loss, axis=None)
    train_op = strategy.group(train_op)
    scaffold = tf.compat.v1.train.Scaffold(local_init_op=tf.group(
        tf.compat.v1.train.Scaffold.default_local_init_op(),
        iterator.initializer))
    if is_chief or spec["kind"] == "collective":
      creator = tf.compat.v1.train.ChiefSessionCreator(
          scaffold=scaffold, master=target, config=session_config)
    else:
      creator = _WaitForChiefCreator(scaffold, target, session_config)
    reader = _ReadAtEndHook()
    hooks = [tf.compat.v1.train.StopAtStepHook(last_step=spec["steps"]),
             reader]
    local_steps = 0
    with tf.compat.v1.train.MonitoredSession(
        session_creator=creator, hooks=hooks) as session:
      while not session.should_stop():
        session.run(train_op)
        local_steps += 1
  return {"local_steps": local_steps, "variables": reader.values,
          "num_replicas_in_sync": strategy.num_replicas_in_sync,
          "session_target": target}


def serve(spec):
  """Runs a parameter server until killed or `serve_secs` pass."""
  cluster = spec["cluster"]
  server = tf.distribute.Server(
      tf.train.ClusterSpec(task_devices.training_cluster(cluster)),
      job_name=spec["task_type"], task_index=spec["task_id"], start=True,
      config=task_servers.server_config_for(None, cluster=cluster,
                                          task_type=spec["task_type"]))
  print("SERVING", flush=True)
  time.sleep(spec.get("serve_secs", 120))
  del server


def main(argv):
  spec = json.loads(argv[1])
  status = 0
  try:
    if spec["task_type"] == "ps":
      serve(spec)
    else:
      print("RESULT " + json.dumps(train(spec)), flush=True)
  except Exception:  # pylint: disable=broad-except
    traceback.print_exc()
    status = 1
  sys.stdout.flush()
  sys.stderr.flush()
  # A running gRPC server (ours or the one an eager strategy started) can
  # keep interpreter shutdown waiting forever, after an error too.
  os._exit(status)  # pylint: disable=protected-access


if __name__ == "__main__":
  main(sys.argv)
