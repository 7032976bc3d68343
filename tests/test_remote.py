"""Tests of harness.distribute.remote: standalone clients driving `harness.server`s.

The fast tests check the start-up checks against sockets and an in-process
server. The slow ones start real `python -m harness.server` processes on
127.0.0.1 and real clients (`python -m harness.main --remote_cluster=...`
and tests/programs/remote_client.py), and check what a user sees: exit
codes, log lines, checkpoints, eval results and exports.
"""

import json
import os
import re
import signal
import socket
import time

from absl.testing import absltest
import pytest

from harness import errors
from harness import run_config as run_config_lib
from harness._tf import tf
from harness.distribute import remote_servers
from harness.distribute import strategies
from harness.launch import ports
from tests import _support

_CLIENT_SECS = 150
_SIGTERM_START_SECS = 240  # TF start-up on a loaded 2-core machine.
_STOP_SECS = 60  # The tasks stop after their current step, then exit.
_LOG_EVERY = 10
_RESTARTED = "restarting this server in place"  # harness.server's line.


def _main_args(cluster, model_dir, max_steps):
  spec = _support.cluster_spec(cluster)
  return ["-m", "harness.main", "--model_fn=linear", "--input_fn=constant",
          f"--remote_cluster={spec}", "--strategy=collective",
          "--num_gpus_per_worker=2", "--cpu_stand_in",
          f"--max_steps={max_steps}", "--save_checkpoints_steps=20",
          f"--log_step_count_steps={_LOG_EVERY}", "--eval_steps=2",
          "--exporters=latest", "--throttle_secs=0", "--batch_size=20",
          f"--model_dir={model_dir}"]


def _closed_address():
  return f"127.0.0.1:{ports.pick_free_port()}"  # Nothing listens there.


class TasksTest(absltest.TestCase):

  def test_chief_first_then_workers(self):
    cluster = {"ps": ["h:3"], "worker": ["h:1", "h:2"], "chief": ["h:0"]}
    self.assertEqual(remote_servers.trainer_tasks(cluster),
                     [("chief", 0), ("worker", 0), ("worker", 1)])
    self.assertEqual(remote_servers.chief_task(cluster), ("chief", 0))
    self.assertEqual(remote_servers.chief_task({"worker": ["h:1"]}), ("worker", 0))

  def test_no_trainer_is_an_error(self):
    with self.assertRaisesRegex(errors.ClusterConfigError, "nothing would"):
      remote_servers.chief_task({"ps": ["h:3"]})


class CheckServersTest(absltest.TestCase):

  def test_closed_port_fails_within_the_bound_naming_it(self):
    closed, listener = _closed_address(), _support.silent_listener(self)
    start = time.monotonic()
    with self.assertRaises(errors.RemoteClusterError) as caught:
      remote_servers.check_reachable({"worker": [listener, closed]},
                             timeout_secs=1.0)
    self.assertLess(time.monotonic() - start, 5.0)
    message = str(caught.exception)
    self.assertIn(f"worker/1 at {closed}", message)
    self.assertNotIn(listener, message)
    self.assertIn("Cannot reach 1 of the 2 servers", message)

  def test_listening_ports_pass(self):
    listener = _support.silent_listener(self)
    remote_servers.check_reachable({"worker": [listener]}, timeout_secs=1.0)

  def test_a_port_that_is_not_a_tensorflow_server(self):
    listener = _support.silent_listener(self)
    start = time.monotonic()
    with self.assertRaisesRegex(errors.RemoteClusterError,
                                "not a working TensorFlow server"):
      remote_servers.check_servers({"worker": [listener]}, timeout_secs=1.0)
    self.assertLess(time.monotonic() - start, 10.0)

  def test_server_with_too_few_devices_or_another_cluster(self):
    address, other = _closed_address(), _support.silent_listener(self)
    server = tf.distribute.Server(
        tf.train.ClusterSpec({"worker": [address]}), job_name="worker",
        task_index=0, start=True)
    self.assertTrue(server.target)
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "--num_cpu_devices=2"):
      remote_servers.check_servers({"worker": [address]}, num_cpu_devices=2,
                           timeout_secs=5.0)
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "does not know task worker/1"):
      remote_servers.check_servers({"worker": [address, other]},
                           timeout_secs=5.0)


class ConfigTest(absltest.TestCase):

  def test_remote_cluster_with_tf_config_cluster_is_rejected(self):
    tf_config = {"cluster": {"worker": ["127.0.0.1:2222"]},
                 "task": {"type": "worker", "index": 0}}
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "unset TF_CONFIG's cluster in the client"):
      run_config_lib.RunConfig(
          experimental_distribute=run_config_lib.DistributeConfig(
              train_distribute=strategies.make_strategy("collective"),
              remote_cluster={"worker": ["127.0.0.1:2223"]}),
          environ={"TF_CONFIG": json.dumps(tf_config)})

  def test_single_machine_strategy_is_not_supported(self):
    config = run_config_lib.RunConfig(
        experimental_distribute=run_config_lib.DistributeConfig(
            train_distribute=strategies.make_strategy("mirrored"),
            remote_cluster={"worker": ["127.0.0.1:2223"]}), environ={})
    with self.assertRaisesRegex(errors.NotSupportedError,
                                "MultiWorkerMirroredStrategy"):
      run_config_lib.check_supported_config(config)


@pytest.mark.slow
class RemoteClusterTest(absltest.TestCase):
  """The README walkthrough's cluster: two servers with 2 CPU devices each,
  started once for the class; each test drives it with its own clients
  (one at a time: a cluster has one client) and its own model_dir."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.cluster = _support.loopback_cluster(worker=2)
    cls.servers = _support.start_servers(cls.addClassCleanup, cls.cluster,
                                         num_cpu_devices=2)

  def _client(self, name, *flags):
    client = _support.ChildProcess(
        ["-m", "harness.main", "--model_fn=linear", "--input_fn=constant",
         f"--remote_cluster={_support.cluster_spec(self.cluster)}",
         "--strategy=collective", "--num_gpus_per_worker=2",
         "--cpu_stand_in", "--batch_size=20", *flags], name)
    self.addCleanup(client.kill_group)
    return client

  def _assert_servers_up(self):
    for server in self.servers:  # Stopping a client leaves them running.
      self.assertIsNone(server.proc.poll(), server.describe())

  def test_collective_client_killed_then_resumed(self):
    # A client killed mid-run, a second one refused while it trains, a
    # third that resumes and finishes (from TwoClientsTest, once in
    # tests/test_server_claim.py: one client per cluster).
    cluster = self.cluster
    model_dir = self.create_tempdir().full_path
    first = _support.ChildProcess(_main_args(cluster, model_dir, 100000),
                                  "client 1")
    self.addCleanup(first.kill_group)
    self.assertTrue(first.wait_for(
        lambda: (_support.checkpoint_step(model_dir) or 0) > 0 and (
            _support.steps_logged(first.output, "remote worker/1")),
        _CLIENT_SECS), first.describe())
    refused = _support.ChildProcess(
        _main_args(cluster, model_dir + "-2", 20), "client 2 (refused)")
    self.addCleanup(refused.kill_group)
    self.assertEqual(refused.wait(_CLIENT_SECS), 1, refused.describe())
    self.assertIn(f"is driven by another client: host {socket.gethostname()}"
                  f", pid {first.proc.pid}", refused.output,
                  refused.describe())
    self.assertNotIn("train | remote", refused.output)
    self.assertIsNone(first.proc.poll(), first.describe())
    restarts = [server.output.count(_RESTARTED) for server in self.servers]
    first.kill_group()  # SIGKILL mid-run: its claims are never released.
    self.assertEqual(first.proc.returncode, -signal.SIGKILL)
    resumed_from = _support.checkpoint_step(model_dir)
    max_steps = resumed_from + 40
    second = _support.ChildProcess(_main_args(cluster, model_dir, max_steps),
                                   "client 3")
    self.addCleanup(second.kill_group)
    self.assertEqual(second.wait(_CLIENT_SECS), 0, second.describe())
    output = second.output
    # It expired the dead client's claims itself, or found them expired
    # already; either way each server restarted before granting its claim.
    self.assertRegex(output, "no longer running on this host|claimed 2",
                     second.describe())
    for server, before in zip(self.servers, restarts):
      self.assertGreater(server.output.count(_RESTARTED), before,
                         server.describe())
    # Both tasks trained in lock step from the checkpoint to the end.
    for task in ("worker/0", "worker/1"):
      steps = _support.steps_logged(output, f"remote {task}")
      self.assertNotEmpty(steps, second.describe())
      self.assertBetween(steps[0], resumed_from + 1,
                         resumed_from + _LOG_EVERY)
      self.assertEqual(steps[-1], max_steps)
    self.assertEqual(_support.checkpoint_step(model_dir), max_steps)
    # Evaluated and exported in the client.
    self.assertIn(f"eval results | client | global_step {max_steps}", output)
    self.assertRegex(output, r"\n  accuracy +1\n")
    export = re.search(r"\n  export: +(\S+)", output).group(1)
    self.assertTrue(os.path.exists(os.path.join(export, "saved_model.pb")))
    # The servers never needed a restart by hand (same pids).
    self._assert_servers_up()

  def test_sigint_exits_130_naming_the_checkpoint_step(self):
    # From tests/test_remote_interrupt.py (ClientCtrlCTest).
    model_dir = self.create_tempdir().full_path
    client = self._client(
        "client", "--max_steps=1000000", "--save_checkpoints_steps=20",
        "--log_step_count_steps=10", "--mode=train",
        f"--model_dir={model_dir}")
    self.assertTrue(client.wait_for(
        lambda: (_support.checkpoint_step(model_dir) or 0) > 0 and (
            _support.steps_logged(client.output, "remote worker/1")),
        _CLIENT_SECS), client.describe())
    code, _ = client.stop(signal.SIGINT, _STOP_SECS)
    self.assertEqual(code, errors.EXIT_INTERRUPTED, client.describe())
    step = _support.checkpoint_step(model_dir)
    self.assertEqual(
        _support.last_error(client.output),
        "harness.main: TrainingPreemptedError: client: training was "
        "interrupted (SIGINT); the tasks were asked to stop after their "
        f"current step and the newest checkpoint is at step {step}. Fix: run "
        "the same command again to resume from it.", client.describe())
    self._assert_servers_up()

  def test_sigterm_one_line_a_save_and_143(self):
    # From tests/test_stop_stages.py (ClientSigtermTest): on SIGTERM one
    # line and a save, as on Ctrl-C; before, it died silently.
    model_dir = self.create_tempdir().full_path
    child = self._client(
        "client", "--max_steps=1000000", "--save_checkpoints_steps=100000",
        "--log_step_count_steps=10", f"--model_dir={model_dir}")
    self.assertTrue(child.wait_for(
        lambda: _support.steps_logged(child.output, "remote worker/1"),
        _SIGTERM_START_SECS), child.describe())
    before = _support.checkpoint_step(model_dir)
    # The client's own bound: 5 s for its tasks to stop, then the claims'
    # release (up to its 30 s timeout when a collective task stopped one
    # step after its peer and waits in an all-reduce; as on Ctrl-C).
    code, _ = child.stop(signal.SIGTERM, 90)
    self.assertEqual(code, errors.EXIT_PREEMPTED, child.describe())
    step = _support.checkpoint_step(model_dir)
    self.assertGreater(step, before or 0, child.describe())  # The stop's save.
    lines = [line for line in child.lines if
             "harness.main: TrainingPreemptedError: client: training was "
             "preempted (SIGTERM)" in line]
    self.assertLen(lines, 1, child.describe())
    self.assertIn(f"the newest checkpoint is at step {step}. Fix:",
                  " ".join(child.output.split()))  # The line is folded.
    self.assertNotIn("Traceback", child.output, child.describe())

  def test_client_of_a_closed_port_exits_1_naming_it(self):
    closed = _closed_address()
    client = _support.ChildProcess(
        ["-m", "tests.programs.remote_client", "--model_dir="
         + self.create_tempdir().full_path,
         f"--remote_cluster={json.dumps({'worker': [closed]})}",
         "--strategy=collective", "--connect_timeout_secs=2"], "client")
    self.addCleanup(client.kill_group)
    self.assertEqual(client.wait(60), 1, client.describe())
    message = client.lines[-1]
    self.assertIn("RemoteClusterError", message)
    self.assertIn(f"worker/0 at {closed}", message)
    self.assertIn("within 2 s", message)

  def test_main_with_tf_config_and_remote_cluster_is_a_flag_error(self):
    tf_config = {"cluster": {"worker": ["127.0.0.1:2222"]},
                 "task": {"type": "worker", "index": 0}}
    client = _support.ChildProcess(
        ["-m", "harness.main",
         # Functions whose modules import no TensorFlow: a flag error fast.
         "--model_fn=tests.programs.no_tf_fns:model_fn",
         "--input_fn=tests.programs.no_tf_fns:make_input_fn",
         "--strategy=collective", "--remote_cluster=worker=127.0.0.1:2223",
         "--model_dir=" + self.create_tempdir().full_path], "client",
        tf_config=tf_config)
    self.addCleanup(client.kill_group)
    self.assertEqual(client.wait(60), 2, client.describe())  # Bad flags.
    self.assertIn("flag --remote_cluster=", client.output)
    self.assertIn("TF_CONFIG also names a cluster", client.output)
    self.assertIn("unset TF_CONFIG in the client", client.output)


if __name__ == "__main__":
  absltest.main()
