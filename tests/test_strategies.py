"""Tests of harness.distribute.strategies: v1 strategies configured per task, for real.

Fast tests build strategies inside graphs (so the test process's eager
context is left alone) and train on one machine; the slow ones start real
worker / ps processes (tests/programs/strategy_worker.py) on 127.0.0.1.
"""

import json
import os
import subprocess
import sys
import textwrap

from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness import _tf_private
from harness import errors
from harness._tf import tf
from harness.core import strategy_classifier
from harness.distribute import collective_config
from harness.distribute import evaluator_guard
from harness.distribute import graph_strategy as graph_strategy_lib
from harness.distribute import strategies
from harness.distribute import task_devices
from harness.distribute import task_servers
from tests import _processes
from tests import _support
from tests import conftest

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PROCESS_TIMEOUT_SECS = 90
_V1 = tf.compat.v1.distribute
_V2 = tf.distribute
_CLUSTER = {"chief": ["127.0.0.1:2001"],
            "worker": ["127.0.0.1:2002", "127.0.0.1:2003"],
            "evaluator": ["127.0.0.1:2004"]}
_PS_CLUSTER = {"chief": ["127.0.0.1:2001"], "worker": ["127.0.0.1:2002"],
               "ps": ["127.0.0.1:2005"]}


def _in_graph(build):
  with tf.Graph().as_default():
    return build()


class StrategyKindTest(parameterized.TestCase):

  @parameterized.parameters(
      ("mirrored", lambda: _V1.MirroredStrategy(["/cpu:0"])),
      ("mirrored", lambda: _V2.MirroredStrategy(["/cpu:0"])),
      ("collective", _V1.experimental.MultiWorkerMirroredStrategy),
      ("collective", _V2.MultiWorkerMirroredStrategy),
      ("parameter_server", _V1.experimental.ParameterServerStrategy),
      ("central_storage", _V1.experimental.CentralStorageStrategy),
      ("central_storage", _V2.experimental.CentralStorageStrategy),
      ("one_device", lambda: _V1.OneDeviceStrategy("/cpu:0")),
      ("one_device", lambda: _V2.OneDeviceStrategy("/cpu:0")),
      ("default", _V2.get_strategy),
  )
  def test_kind(self, kind, build):
    self.assertEqual(strategy_classifier.strategy_kind(_in_graph(build)), kind)

  def test_none_and_non_strategy(self):
    self.assertIsNone(strategy_classifier.strategy_kind(None))
    with self.assertRaisesRegex(errors.ConfigError, "not a tf.distribute"):
      strategy_classifier.strategy_kind("mirrored")


class ToGraphStrategyTest(parameterized.TestCase):

  def test_v1_passes_through(self):
    strategy = _in_graph(lambda: _V1.MirroredStrategy(["/cpu:0"]))
    self.assertIs(graph_strategy_lib.to_graph_strategy(strategy), strategy)

  @parameterized.parameters(
      (lambda: _V2.MirroredStrategy(["/cpu:0"]), _V1.MirroredStrategy),
      (lambda: _V2.OneDeviceStrategy("/cpu:0"), _V1.OneDeviceStrategy),
      (_V2.experimental.CentralStorageStrategy,
       _V1.experimental.CentralStorageStrategy),
  )
  def test_tf2_maps_to_v1_with_same_devices(self, build, v1_class):
    strategy = _in_graph(build)
    graph_strategy = graph_strategy_lib.to_graph_strategy(strategy)
    self.assertIsInstance(graph_strategy, v1_class)
    self.assertEqual(list(graph_strategy.extended.worker_devices),
                     list(strategy.extended.worker_devices))

  def test_tf2_collective_keeps_communication_options(self):
    options = _V2.experimental.CommunicationOptions(
        timeout_seconds=7,
        implementation=_V2.experimental.CommunicationImplementation.RING)
    strategy = _in_graph(lambda: _V2.MultiWorkerMirroredStrategy(
        communication_options=options))
    graph_strategy = graph_strategy_lib.to_graph_strategy(strategy)
    self.assertIsInstance(graph_strategy,
                          _V1.experimental.MultiWorkerMirroredStrategy)
    kept = _tf_private.collective_communication_options(graph_strategy)
    self.assertEqual(kept.timeout_seconds, 7)
    self.assertEqual(kept.implementation,
                     _V2.experimental.CommunicationImplementation.RING)

  def test_none_and_default_mean_no_strategy(self):
    self.assertIsNone(graph_strategy_lib.to_graph_strategy(None))
    self.assertIsNone(graph_strategy_lib.to_graph_strategy(_V2.get_strategy()))

  def test_tf2_parameter_server_is_rejected(self):
    # The real constructor connects to a running cluster; the check needs
    # only an instance of the class.
    cls = _V2.experimental.ParameterServerStrategy
    with self.assertRaisesRegex(
        errors.ConfigError, r"ParameterServerStrategyV2.*ClusterCoordinator"
        r".*tf\.compat\.v1\.distribute\.experimental\.ParameterServer"):
      graph_strategy_lib.to_graph_strategy(cls.__new__(cls))


class MakeStrategyTest(parameterized.TestCase):

  @parameterized.parameters(
      ("mirrored", 2, _V1.MirroredStrategy),
      ("collective", 2, _V1.experimental.MultiWorkerMirroredStrategy),
      ("parameter_server", 1, _V1.experimental.ParameterServerStrategy),
      ("central_storage", 2, _V1.experimental.CentralStorageStrategy),
      ("one_device", 1, _V1.OneDeviceStrategy),
  )
  def test_kinds(self, kind, count, v1_class):
    strategy = strategies.make_strategy(kind, num_devices_per_worker=count)
    self.assertIsInstance(strategy, v1_class)
    self.assertEqual(strategy_classifier.strategy_kind(strategy), kind)
    self.assertEqual(strategy.num_replicas_in_sync, count)

  def test_default_is_none(self):
    self.assertIsNone(strategies.make_strategy("default"))

  @parameterized.parameters(
      (dict(kind="mirorred"), errors.ConfigError, "mirorred.*valid kinds"),
      (dict(kind="one_device", num_devices_per_worker=2), errors.ConfigError,
       "one device"),
      (dict(kind="mirrored", num_devices_per_worker=0), errors.ConfigError,
       ">= 1, got 0"),
      (dict(kind="mirrored", device_type="TPU"), errors.ConfigError, "TPU"),
      (dict(kind="parameter_server", cluster={"worker": ["h:1"]}),
       errors.ClusterConfigError, 'no "ps" job'),
      (dict(kind="collective", cluster=_PS_CLUSTER),
       errors.ClusterConfigError, 'has a "ps" job'),
      (dict(kind="mirrored", cluster=_CLUSTER), errors.NotSupportedError,
       "3 training tasks"),
      (dict(kind="parameter_server", num_devices_per_worker=2),
       errors.NotSupportedError, "GPUs only"),
  )
  def test_errors(self, kwargs, error, message):
    kind = kwargs.pop("kind")
    with self.assertRaisesRegex(error, message):
      strategies.make_strategy(kind, **kwargs)


class ConfigureForTaskTest(parameterized.TestCase):

  def test_collective_worker_two_cpu_devices(self):
    strategy = strategies.make_strategy("collective")
    user_config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    config = strategies.configure_for_task(
        strategy, cluster=_CLUSTER, task_type="worker", task_id=1,
        session_config=user_config, num_devices_per_worker=2)
    self.assertEqual(config.experimental.collective_group_leader,
                     "/job:chief/replica:0/task:0")
    self.assertEqual(list(config.device_filters), ["/job:worker/task:1"])
    self.assertEqual(config.device_count["CPU"], 2)
    self.assertTrue(config.allow_soft_placement)
    self.assertEqual(user_config.device_filters, [])  # Not modified.
    self.assertEqual(strategy.num_replicas_in_sync, 6)  # 3 tasks x 2.
    self.assertEqual(list(strategy.extended.worker_devices),
                     ["/job:worker/replica:0/task:1/device:CPU:0",
                      "/job:worker/replica:0/task:1/device:CPU:1"])

  def test_collective_keeps_tensorflows_scoped_allocator_by_default(self):
    # The strategy packs the gradients itself in graph mode; harness leaves
    # configure()'s rewrite setting (ON) as it is.
    config = strategies.configure_for_task(
        strategies.make_strategy("collective"), cluster=_CLUSTER,
        task_type="worker", task_id=1)
    rewrite = config.graph_options.rewrite_options
    self.assertEqual(rewrite.scoped_allocator_optimization, rewrite.ON)

  @parameterized.parameters("ON", "OFF")
  def test_collective_packing_set_by_the_user_is_kept(self, toggle):
    user_config = tf.compat.v1.ConfigProto()
    rewrite = user_config.graph_options.rewrite_options
    rewrite.scoped_allocator_optimization = getattr(rewrite, toggle)
    config = strategies.configure_for_task(
        strategies.make_strategy("collective"), cluster=_CLUSTER,
        task_type="worker", task_id=1, session_config=user_config)
    self.assertEqual(
        config.graph_options.rewrite_options.scoped_allocator_optimization,
        getattr(rewrite, toggle))
    self.assertEqual(collective_config.user_scoped_allocator(user_config),
                     getattr(rewrite, toggle))

  def test_no_user_choice_is_none(self):
    self.assertIsNone(collective_config.user_scoped_allocator(None))
    self.assertIsNone(collective_config.user_scoped_allocator(
        tf.compat.v1.ConfigProto()))

  def test_collective_keeps_devices_it_was_built_with(self):
    strategy = strategies.make_strategy("collective", num_devices_per_worker=2)
    config = strategies.configure_for_task(
        strategy, cluster=_CLUSTER, task_type="chief", task_id=0)
    self.assertEqual(strategy.num_replicas_in_sync, 6)
    self.assertEqual(task_devices.cpu_devices_per_worker(strategy), 2)
    self.assertEqual(config.device_count["CPU"], 2)

  @parameterized.parameters(("mirrored", 2, 2), ("one_device", 1, 1),
                            ("parameter_server", 1, 1), ("default", 1, 1))
  def test_cpu_devices_per_worker(self, kind, count, expected):
    strategy = strategies.make_strategy(kind, num_devices_per_worker=count)
    self.assertEqual(task_devices.cpu_devices_per_worker(strategy), expected)

  def test_collective_leader_is_worker_0_without_chief(self):
    strategy = strategies.make_strategy("collective")
    config = strategies.configure_for_task(
        strategy, cluster={"worker": ["h:1", "h:2"]}, task_type="worker",
        task_id=0)
    self.assertEqual(config.experimental.collective_group_leader,
                     "/job:worker/replica:0/task:0")
    self.assertEqual(strategy.num_replicas_in_sync, 2)
    self.assertNotIn("CPU", config.device_count)

  def test_parameter_server_filters(self):
    strategy = strategies.make_strategy("parameter_server")
    config = strategies.configure_for_task(
        strategy, cluster=_PS_CLUSTER, task_type="worker", task_id=0)
    self.assertEqual(list(config.device_filters),
                     ["/job:worker/task:0", "/job:ps"])
    self.assertFalse(strategy.extended.should_checkpoint)

  @parameterized.parameters(
      (dict(task_type="evaluator", task_id=0), errors.ClusterConfigError,
       "trains no model"),
      (dict(task_type="worker", task_id=2), errors.ClusterConfigError,
       r"valid index 0\.\.1"),
  )
  def test_task_errors(self, kwargs, error, message):
    strategy = strategies.make_strategy("collective")
    with self.assertRaisesRegex(error, message):
      strategies.configure_for_task(strategy, cluster=_CLUSTER, **kwargs)

  def test_tf2_strategy_is_rejected(self):
    strategy = _in_graph(lambda: _V2.MirroredStrategy(["/cpu:0"]))
    with self.assertRaisesRegex(errors.ConfigError, "to_graph_strategy"):
      strategies.configure_for_task(strategy, cluster=None, task_type=None,
                                    task_id=None)

  def test_parameter_server_with_cpu_devices_is_not_supported(self):
    strategy = strategies.make_strategy("parameter_server")
    with self.assertRaisesRegex(errors.NotSupportedError, "GPUs only"):
      strategies.configure_for_task(
          strategy, cluster=_PS_CLUSTER, task_type="chief", task_id=0,
          num_devices_per_worker=2)

  def test_server_config_for(self):
    strategy = strategies.make_strategy("collective")
    session_config = strategies.configure_for_task(
        strategy, cluster=_CLUSTER, task_type="chief", task_id=0,
        num_devices_per_worker=2)
    config = task_servers.server_config_for(
        session_config, cluster=_CLUSTER, task_type="chief",
        num_devices_per_worker=2)
    self.assertEqual(dict(config.device_count), {"CPU": 2, "GPU": 0})
    self.assertEqual(list(config.device_filters), ["/job:chief/task:0"])
    self.assertEqual(config.experimental.collective_group_leader,
                     "/job:chief/replica:0/task:0")
    ps_config = task_servers.server_config_for(
        None, cluster=_PS_CLUSTER, task_type="ps", num_devices_per_worker=2)
    self.assertEqual(dict(ps_config.device_count), {"CPU": 1, "GPU": 0})

  def test_no_server_target_for_unstarted_strategy(self):
    strategy = strategies.make_strategy("collective")
    self.assertIsNone(task_servers.in_process_server_target(
        strategy, cluster=_CLUSTER, task_type="chief", task_id=0))


class LocalTrainingTest(parameterized.TestCase):
  """One machine, two CPU devices through the returned session config."""

  @parameterized.parameters("mirrored", "collective", "central_storage")
  def test_two_cpu_replicas_train(self, kind):
    strategy = strategies.make_strategy(kind, num_devices_per_worker=2)
    config = strategies.configure_for_task(
        strategy, cluster=None, task_type=None, task_id=None,
        num_devices_per_worker=2)
    self.assertEqual(strategy.num_replicas_in_sync, 2)
    with tf.Graph().as_default(), strategy.scope():
      global_step = tf.compat.v1.train.get_or_create_global_step()
      features = tf.ones([4, 3])

      def step_fn():
        loss = tf.reduce_mean(tf.compat.v1.layers.dense(features, 1) ** 2)
        return tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=global_step)

      train_op = strategy.group(strategy.extended.call_for_each_replica(
          step_fn))
      final = _FinalStepHook(global_step)
      with tf.compat.v1.train.MonitoredSession(
          session_creator=tf.compat.v1.train.ChiefSessionCreator(
              config=config),
          hooks=[tf.compat.v1.train.StopAtStepHook(last_step=3), final]) as (
              session):
        while not session.should_stop():
          session.run(train_op)
    self.assertEqual(final.step, 3)


class _FinalStepHook(tf.compat.v1.train.SessionRunHook):

  def __init__(self, global_step):
    self._global_step, self.step = global_step, None

  def end(self, session):
    self.step = session.run(self._global_step)


class EvaluatorGuardTest(absltest.TestCase):

  def test_not_installed_for_a_worker(self):
    environ = {"TF_CONFIG": json.dumps(
        {"cluster": {"worker": ["h:1"]}, "task": {"type": "worker",
                                                  "index": 0}})}
    self.assertFalse(evaluator_guard.install(environ))
    self.assertFalse(evaluator_guard.install({}))

  @pytest.mark.slow
  def test_evaluator_builds_legacy_strategies(self):
    # TF_CONFIG as a launcher writes it: the evaluator is not in the cluster.
    script = textwrap.dedent("""
        import json, os, sys
        os.environ["TF_CONFIG"] = json.dumps({
            "cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
            "task": {"type": "evaluator", "index": 0}})
        from harness import _tf_private
        from harness.distribute import evaluator_guard
        from harness._tf import tf
        try:
          tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy()
        except KeyError as e:
          print("UNGUARDED KeyError", e)
        print("INSTALLED", evaluator_guard.install(os.environ))
        built = [
            tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy(),
            tf.distribute.MultiWorkerMirroredStrategy(),
            tf.compat.v1.distribute.experimental.ParameterServerStrategy()]
        print("BUILT", [s.num_replicas_in_sync for s in built],
              [_tf_private.started_in_process_server(s) for s in built])
        os.environ["TF_CONFIG"] = json.dumps({
            "cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
            "task": {"type": "worker", "index": 0}})
        with tf.Graph().as_default():  # Graph mode: starts no server.
          s = tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy()
        print("WORKER", s.num_replicas_in_sync)
        sys.stdout.flush()
        os._exit(0)
        """)
    out = _run_python(self, ["-c", script])
    self.assertIn("UNGUARDED KeyError 'evaluator'", out)
    self.assertIn("INSTALLED True", out)
    self.assertIn("BUILT [1, 1, 1] [False, False, False]", out)
    self.assertIn("WORKER 2", out)  # The guard leaves other tasks alone.


def _run_python(test, args):
  """Runs one Python child to completion; fails the test on a bad exit."""
  result = _support.run([sys.executable] + args,
                        timeout_secs=_PROCESS_TIMEOUT_SECS)
  test.assertEqual(result.returncode, 0, result.description)
  return result.output


def _run_cluster(test, cluster, *, kind, num_devices=1, steps=10,
                 user_strategy="none", expect_failure=False):
  """Runs every task of `cluster` as a process; returns trainers' RESULTs.

  With `expect_failure`, returns {(task_type, task_id): output} instead and
  checks that every trainer exited non-zero.
  """
  procs = []
  try:
    for task_type in sorted(cluster, key=lambda job: job != "ps"):
      for task_id in range(len(cluster[task_type])):
        spec = dict(cluster=cluster, task_type=task_type, task_id=task_id,
                    kind=kind, num_devices=num_devices, steps=steps,
                    user_strategy=user_strategy,
                    serve_secs=_PROCESS_TIMEOUT_SECS)
        command = [sys.executable, "-m", "tests.programs.strategy_worker",
                   json.dumps(spec)]
        procs.append((task_type, task_id, command, _processes.popen(
            command, cwd=_REPO_ROOT, env=conftest.child_env(),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    results = {}
    for task_type, task_id, command, proc in procs:
      if task_type == "ps":
        continue
      try:
        out, _ = proc.communicate(timeout=_PROCESS_TIMEOUT_SECS)
      except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        test.fail(f"{task_type}/{task_id} timed out: {command}\n{out[-3000:]}")
      if expect_failure:
        test.assertNotEqual(proc.returncode, 0, f"{command}\n{out[-3000:]}")
        results[(task_type, task_id)] = out
        continue
      lines = [l for l in out.splitlines() if l.startswith("RESULT ")]
      test.assertTrue(
          proc.returncode == 0 and lines,
          f"{task_type}/{task_id} exited {proc.returncode}: {command}\n"
          f"{out[-3000:]}")
      results[(task_type, task_id)] = json.loads(lines[-1][len("RESULT "):])
    return results
  finally:
    for _, _, _, proc in procs:
      if proc.poll() is None:
        proc.kill()
        proc.communicate()


_local_cluster = _support.loopback_cluster


@pytest.mark.slow
class MultiWorkerTest(parameterized.TestCase):
  """Real worker processes, each with its own in-process server."""

  @parameterized.named_parameters(
      # One CPU each, no user strategy: test_chaos, test_k8s_netns.
      ("two_cpus_each", 2, "none"),
      ("v1_built_eagerly_with_tf_config", 1, "v1_eager"),
      ("tf2_built_eagerly_with_tf_config", 1, "v2_eager"),
      # The fix the too-few-devices error suggests.
      ("v1_built_eagerly_on_two_logical_cpus", 2, "v1_eager_logical"),
  )
  def test_collective_workers_stay_in_sync(self, num_devices, user_strategy):
    steps = 10
    results = _run_cluster(self, _local_cluster(worker=2), kind="collective",
                           num_devices=num_devices, steps=steps,
                           user_strategy=user_strategy)
    first, second = results[("worker", 0)], results[("worker", 1)]
    for result in (first, second):
      self.assertEqual(result["num_replicas_in_sync"], 2 * num_devices)
      self.assertEqual(result["variables"]["global_step"], steps)
      self.assertEqual(result["local_steps"], steps)
    self.assertEqual(first["variables"], second["variables"])
    self.assertNotEqual(first["variables"]["dense/bias"], [0.0])  # Trained.

  def test_too_few_devices_on_a_server_the_strategy_started_is_an_error(self):
    # Without the check, a cluster's workers hang in their first
    # collective. One worker shows it: the check is on the task's own
    # server, before any collective.
    outputs = _run_cluster(self, _local_cluster(worker=1), kind="collective",
                           num_devices=2, user_strategy="v1_eager",
                           expect_failure=True)
    for out in outputs.values():
      self.assertIn("ConfigError: num_devices_per_worker=2 CPU devices", out)
      self.assertIn("set_logical_device_configuration", out)

  def test_parameter_server_trainers_share_the_global_step(self):
    steps = 40
    results = _run_cluster(self, _local_cluster(chief=1, worker=1, ps=1),
                           kind="parameter_server", steps=steps)
    chief, worker = results[("chief", 0)], results[("worker", 0)]
    final_step = max(chief["variables"]["global_step"],
                     worker["variables"]["global_step"])
    self.assertGreaterEqual(final_step, steps)
    self.assertGreater(chief["local_steps"], 0)
    self.assertGreater(worker["local_steps"], 0)
    self.assertEqual(chief["local_steps"] + worker["local_steps"], final_step)


if __name__ == "__main__":
  absltest.main()
