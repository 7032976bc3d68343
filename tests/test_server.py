"""Tests of harness.server: the config, the library and the real binary."""

import json
import os
import signal
import sys

from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness import errors
from harness import server
from harness._tf import tf
from harness.distribute import task_servers
from harness.launch import ports
from tests import _support
from tests import conftest

_START_SECS = 90  # TensorFlow's import is slow on a busy 2-core machine.
_STOP_SECS = 10
_CLIENT_SECS = 150


class ServerConfigTest(parameterized.TestCase):
  """The standalone server's config: `task_servers.server_config_for` with
  its independent CPU and GPU counts."""

  def _config(self, cluster, job, **counts):
    return task_servers.server_config_for(None, cluster=cluster,
                                          task_type=job, **counts)

  def test_devices_and_collective_leader(self):
    config = self._config({"worker": ["h:1", "h:2"], "ps": ["h:3"]},
                          "worker", num_cpu_devices=3, num_gpus=0)
    self.assertEqual(config.device_count["CPU"], 3)
    self.assertEqual(config.device_count["GPU"], 0)
    self.assertEqual(config.experimental.collective_group_leader,
                     "/job:worker/replica:0/task:0")

  def test_chief_leads_and_ps_gets_no_gpu(self):
    the_cluster = {"chief": ["h:0"], "worker": ["h:1"], "ps": ["h:3"]}
    ps_config = self._config(the_cluster, "ps", num_cpu_devices=2,
                             num_gpus=2)
    self.assertEqual(dict(ps_config.device_count), {"CPU": 2, "GPU": 0})
    self.assertEqual(ps_config.experimental.collective_group_leader,
                     "/job:chief/replica:0/task:0")
    worker_config = self._config(the_cluster, "worker", num_cpu_devices=1,
                                 num_gpus=2)
    self.assertEqual(dict(worker_config.device_count), {"CPU": 1, "GPU": 2})
    self.assertEqual(self._config({"ps": ["h:3"]}, "ps", num_cpu_devices=1,
                                  num_gpus=0)
                     .experimental.collective_group_leader, "")

  @parameterized.named_parameters(
      ("no_cpu", dict(num_cpu_devices=0, num_gpus=0), "`num_cpu_devices`"),
      ("negative_gpus", dict(num_cpu_devices=1, num_gpus=-1), "`num_gpus`"))
  def test_bad_device_counts(self, kwargs, message):
    with self.assertRaisesRegex(errors.ConfigError, message):
      self._config({"worker": ["h:1"]}, "worker", **kwargs)
    with self.assertRaisesRegex(errors.ConfigError, message):
      server.start_server({"worker": ["127.0.0.1:1"]}, "worker", 0, **kwargs)

  @parameterized.named_parameters(
      ("unknown_job", "ps", 0, r"Job 'ps' is not in the cluster"),
      ("index_too_big", "worker", 2, r"has 2 addresses \(valid index 0..1\)"),
      ("evaluator", "evaluator", 0, "runs no standard server"))
  def test_start_server_rejects_tasks_not_in_cluster(self, job, index,
                                                     message):
    the_cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"],
                   "evaluator": ["127.0.0.1:3"]}
    with self.assertRaisesRegex(errors.ClusterConfigError, message):
      server.start_server(the_cluster, job, index)

  def test_start_server_offers_cpu_devices(self):
    address = ports.address("127.0.0.1", ports.pick_free_port())
    started = server.start_server({"worker": [address]}, "worker", 0,
                                  num_cpu_devices=2)
    with tf.Graph().as_default():
      with tf.device("/job:worker/task:0/device:CPU:1"):
        total = tf.constant(20) + 22
      with tf.compat.v1.Session(started.target) as session:
        names = [d.name for d in session.list_devices()]
        self.assertEqual(session.run(total), 42)
    self.assertIn("/job:worker/replica:0/task:0/device:CPU:1", names)
    self.assertNotIn("/job:worker/replica:0/task:0/device:CPU:2", names)


class ServerFlagsTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("no_cluster", [], None, "No cluster task given"),
      ("bad_cpu", ["--num_cpu_devices=0"], None,
       "flag --num_cpu_devices=0"),
      ("bad_spec", ["--cluster_spec=worker=nohost", "--job_name=worker"], None,
       "flag --cluster_spec"),
      ("no_job_name", ["--cluster_spec=worker=127.0.0.1:2222"], None,
       "--job_name is required"),
      ("index_out_of_range", ["--cluster_spec=worker=127.0.0.1:2222",
                              "--job_name=worker", "--task_index=1"], None,
       "valid index 0..0"),
      ("evaluator", [], {"cluster": {"worker": ["127.0.0.1:2222"]},
                         "task": {"type": "evaluator", "index": 0}},
       "runs no standard server"),
      ("tf_config_not_json", [], "{oops", "not valid JSON"),
      ("positional", ["extra"], None, "unexpected arguments"))
  def test_bad_input_exits_2_with_one_message(self, args, tf_config, message):
    env = conftest.child_env(tf_config if isinstance(tf_config, dict)
                             else None)
    if isinstance(tf_config, str):
      env["TF_CONFIG"] = tf_config
    result = _support.run([sys.executable, "-m", "harness.server", *args],
                          env=env, timeout_secs=_START_SECS)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn(message, _support.flat(result.stderr))
    self.assertNotIn("Traceback", result.stderr)


  def test_bad_flags_exit_before_tensorflow_is_imported(self):
    # A bad task costs no TensorFlow import (~5 s of CPU on a busy machine).
    code = ("import sys\nfrom harness.server import cli\n"
            "sys.argv = ['harness.server', '--cluster_spec=worker=h:1']\n"
            "try:\n  cli.run()\nfinally:\n"
            "  print('tensorflow imported:', 'tensorflow' in sys.modules)\n")
    result = _support.run([sys.executable, "-c", code],
                          env=conftest.child_env(), timeout_secs=_START_SECS)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("--job_name is required", _support.flat(result.stderr))
    self.assertIn("tensorflow imported: False", result.stdout, result.stderr)


def _server(name, *args, tf_config=None):
  """A `python -m harness.server ARGS` child (tests._support.ChildProcess)."""
  return _support.ChildProcess(["-m", "harness.server", *args],
                               f"server {name}", tf_config=tf_config)


@pytest.mark.slow
class ServerClusterTest(absltest.TestCase):
  """Two workers (one from flags, one from TF_CONFIG) and a ps, as binaries,
  started once for the class: sessions and a parameter-server library
  client use them (the tests in name order), then signals stop them."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    addresses = [ports.address("127.0.0.1", p)
                 for p in ports.pick_free_ports(3)]
    the_cluster = {"worker": addresses[:2], "ps": addresses[2:]}
    spec = _support.cluster_spec(the_cluster)
    cls.addresses, cls.the_cluster = addresses, the_cluster
    cls.servers = {
        "worker/0": _server(
            "worker/0", f"--cluster_spec={spec}", "--job_name=worker",
            "--task_index=0", "--num_cpu_devices=2"),
        "worker/1": _server("worker/1", "--num_cpu_devices=2", tf_config={
            "cluster": the_cluster, "task": {"type": "worker", "index": 1}}),
        "ps/0": _server("ps/0", tf_config={
            "cluster": the_cluster, "task": {"type": "ps", "index": 0}}),
    }
    for proc in cls.servers.values():
      cls.addClassCleanup(proc.kill_group)

  def _wait_serving(self):
    """Each server listens (again, after any restart in place)."""
    for task, proc in self.servers.items():
      self.assertTrue(proc.wait_for(
          lambda p=proc: p.output.count("listening on") > p.output.count(
              "restarting this server in place"), _START_SECS),
                      f"{task}: {proc.describe()}")

  def test_clients_use_the_cluster(self):
    servers, addresses = self.servers, self.addresses
    # TensorFlow 2.21 listens on every interface; the line says so.
    listening = [f"listening on *:{a.rsplit(':', 1)[1]} (all interfaces; "
                 f"cluster address {a})" for a in addresses]
    expected = {
        "worker/0": f"server | worker/0 | {listening[0]} | 2 CPU devices",
        "worker/1": f"server | worker/1 | {listening[1]} | 2 CPU devices",
        "ps/0": f"server | ps/0 | {listening[2]} | 1 CPU devices",
    }
    for task, line in expected.items():
      self.assertTrue(servers[task].wait_for_text(line, _START_SECS),
                      servers[task].describe())

    with tf.Graph().as_default():
      with tf.device("/job:ps/task:0"):
        shared = tf.compat.v1.get_variable(
            "shared", initializer=tf.constant(1.0), use_resource=True)
      with tf.device("/job:worker/task:1/device:CPU:1"):
        doubled = tf.compat.v1.assign(shared, shared * 2.0)
        where = tf.raw_ops.Identity(input=doubled)
      with tf.compat.v1.Session(f"grpc://{addresses[0]}") as session:
        names = [d.name for d in session.list_devices()]
        session.run(shared.initializer)
        self.assertEqual(session.run(where), 2.0)
      # A second client, through the other worker, sees the same variable.
      with tf.compat.v1.Session(f"grpc://{addresses[1]}") as session:
        self.assertEqual(session.run(doubled), 4.0)
    self.assertIn("/job:worker/replica:0/task:1/device:CPU:1", names)
    self.assertIn("/job:ps/replica:0/task:0/device:CPU:0", names)
    self.assertNotIn("/job:ps/replica:0/task:0/device:CPU:1", names)

    # Collective ops between the workers: without the collective group
    # leader in the servers' config these wait until the deadline.
    with tf.Graph().as_default():
      reduced = []
      for index in range(2):
        with tf.device(f"/job:worker/task:{index}/device:CPU:0"):
          reduced.append(tf.raw_ops.CollectiveReduce(
              input=tf.constant([float(index + 1)]), group_size=2,
              group_key=1, instance_key=1, merge_op="Add", final_op="Id",
              subdiv_offsets=[0]))
      with tf.compat.v1.Session(f"grpc://{addresses[0]}") as session:
        values = session.run(reduced, options=tf.compat.v1.RunOptions(
            timeout_in_ms=30000))
    self.assertEqual([v.tolist() for v in values], [[3.0], [3.0]])

  def test_parameter_server_library_client(self):
    # From tests/test_remote.py (RemoteClusterTest), on this cluster.
    self._wait_serving()
    cluster = self.the_cluster
    model_dir = self.create_tempdir().full_path
    client = _support.ChildProcess(
        ["-m", "tests.programs.remote_client", f"--model_dir={model_dir}",
         f"--remote_cluster={json.dumps(cluster)}", "--strategy=ps",
         "--max_steps=60"], "client")
    self.addCleanup(client.kill_group)
    self.assertEqual(client.wait(_CLIENT_SECS), 0, client.describe())
    # Asynchronous trainers: each may have one step in flight at the end.
    step = _support.checkpoint_step(model_dir)
    self.assertBetween(step, 60, 62)
    for task in ("worker/0", "worker/1"):
      self.assertNotEmpty(
          _support.steps_logged(client.output, f"remote {task}"),
          client.describe())
    with open(os.path.join(model_dir, "result-client.json")) as f:
      result = json.load(f)
    self.assertEqual(result["metrics"]["global_step"], step)
    self.assertLess(result["metrics"]["mae"], 1.0)
    self.assertTrue(os.path.exists(
        os.path.join(result["exports"][-1], "saved_model.pb")))
    # A failing chief hook: the error reaches the caller, the other task
    # stops after its step, the servers stay up. The failure is recorded
    # once worker/0's session has closed (a second or more on a loaded
    # machine), so worker/1's bound is far off: at 350 steps/s it ran 300
    # steps to a max_steps of step + 400 before that in one suite run.
    failing = _support.ChildProcess(
        ["-m", "tests.programs.remote_client", f"--model_dir={model_dir}",
         f"--remote_cluster={json.dumps(cluster)}", "--strategy=ps",
         f"--max_steps={step + 20000}", f"--fail_at_step={step + 20}"],
        "failing client")
    self.addCleanup(failing.kill_group)
    self.assertEqual(failing.wait(_CLIENT_SECS), 1, failing.describe())
    self.assertIn("remote | worker/0 | failed: ValueError: hook failed",
                  failing.output)
    self.assertIn("worker/0 failed: stopping worker/1", failing.output)
    self.assertNotIn("did not stop", failing.output)
    self.assertIn("ValueError: hook failed at step", failing.lines[-1])
    # Its claims ended as a failure's: each server restarts in place (same
    # pid) and serves again.
    for proc in self.servers.values():
      self.assertTrue(proc.wait_for_text("restarting this server in place",
                                         _CLIENT_SECS), proc.describe())
    self._wait_serving()
    for proc in self.servers.values():
      self.assertIsNone(proc.proc.poll(), proc.describe())

  def test_signals_stop_it(self):
    # Last in name order: the other tests use the servers first.
    self._wait_serving()
    servers = self.servers
    stops = {"worker/0": signal.SIGTERM, "worker/1": signal.SIGINT,
             "ps/0": signal.SIGTERM}
    for task, signum in stops.items():
      code, secs = servers[task].stop(signum, _STOP_SECS)
      self.assertEqual(code, 0, servers[task].describe())
      self.assertLess(secs, 5, servers[task].describe())
      self.assertTrue(
          servers[task].wait_for_text(
              f"server | {task} | stopping on {signum.name}", _STOP_SECS),
          servers[task].describe())


if __name__ == "__main__":
  absltest.main()
