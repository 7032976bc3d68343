"""DNNRegressor's model_fn with parameter servers, two ways:

    python -m harness.launch --chief --workers=1 --ps=1 -- \\
        python -m harness.main --model_fn=canned_dnn_regressor ...
    python -m harness.server ... (worker, ps)  # then the standalone client:
    python -m harness.main --model_fn=canned_dnn_regressor \\
        --remote_cluster="worker=...;ps=..." --strategy=ps ...

(The collective cluster with an evaluator: test_canned_cluster.py.)
"""

import sys

from absl.testing import absltest
import pytest

from harness._tf import tf
from tests import _support

_MAX_STEPS = 40
_TIMEOUT_SECS = 180
_MODEL = ["--model_fn=canned_dnn_regressor", "--input_fn=constant",
          f"--max_steps={_MAX_STEPS}", "--save_checkpoints_steps=20",
          "--batch_size=8", "--eval_steps=2",
          '--params={"num_examples": 64, "hidden_units": "8,4"}']
# The canned model's names, the Keras optimizer's slots included.
_NAMES = ("dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_1/kernel",
          "dnn/logits/bias", "training/Adagrad/dnn/logits/kernel/accumulator",
          "training/Adagrad/learning_rate")


def _latest(test, model_dir, tail):
  latest = tf.train.latest_checkpoint(model_dir)
  test.assertIsNotNone(latest, tail)
  names = dict(tf.train.list_variables(latest))
  for name in _NAMES:
    test.assertIn(name, names, tail)
  return int(tf.train.load_variable(latest, "global_step"))


@pytest.mark.slow
class CannedParameterServerTest(absltest.TestCase):

  def test_chief_worker_ps_through_launch(self):
    model_dir = self.create_tempdir().full_path
    command = [
        sys.executable, "-m", "harness.launch", "--chief", "--workers=1",
        "--ps=1", f"--timeout_secs={_TIMEOUT_SECS}", "--",
        sys.executable, "-m", "harness.main", f"--model_dir={model_dir}",
        *_MODEL]
    result = _support.run(command, timeout_secs=_TIMEOUT_SECS + 60)
    output, tail = result.output, result.description
    self.assertEqual(result.returncode, 0, tail)
    # Asynchronous trainers: each may have one step in flight at the end.
    self.assertBetween(_latest(self, model_dir, tail), _MAX_STEPS,
                       _MAX_STEPS + 2)
    for task in ("chief/0", "worker/0"):
      self.assertIn(f"train | {task} | starting at step", output, tail)

  def test_standalone_client_with_a_parameter_server(self):
    cluster = _support.loopback_cluster(worker=1, ps=1)
    servers = _support.start_servers(self.addCleanup, cluster)
    spec = _support.cluster_spec(cluster)
    model_dir = self.create_tempdir().full_path
    client = _support.ChildProcess(
        ["-m", "harness.main", f"--remote_cluster={spec}", "--strategy=ps",
         f"--model_dir={model_dir}", *_MODEL], "client")
    self.addCleanup(client.kill_group)
    self.assertEqual(client.wait(_TIMEOUT_SECS), 0, client.describe())
    self.assertEqual(_latest(self, model_dir, client.describe()), _MAX_STEPS)
    self.assertIn(f"eval | client | step {_MAX_STEPS} | average_loss=",
                  client.output, client.describe())
    for server in servers:  # No model code ran there; they stay up.
      self.assertIsNone(server.proc.poll(), server.describe())


if __name__ == "__main__":
  absltest.main()
