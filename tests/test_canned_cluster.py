"""DNNRegressor's model_fn under a 2-worker collective cluster with an
evaluator, through the product's own entry points:

    python -m harness.launch --workers=2 --evaluator -- \\
        python -m harness.main --model_fn=canned_dnn_regressor ...
"""

import os
import re
import sys

from absl.testing import absltest
import pytest

from harness._tf import tf
from tests import _support
from tests import conftest

_MAX_STEPS = 40
_TIMEOUT_SECS = 180


@pytest.mark.slow
class CannedCollectiveClusterTest(absltest.TestCase):

  def test_dnn_regressor_two_workers_and_evaluator(self):
    model_dir = self.create_tempdir().full_path
    command = [
        sys.executable, "-m", "harness.launch", "--workers=2", "--evaluator",
        f"--timeout_secs={_TIMEOUT_SECS}", "--",
        sys.executable, "-m", "harness.main",
        "--model_fn=canned_dnn_regressor", "--input_fn=constant",
        "--strategy=collective", f"--model_dir={model_dir}",
        f"--max_steps={_MAX_STEPS}", "--save_checkpoints_steps=20",
        "--batch_size=8",
        "--throttle_secs=1", "--eval_steps=0",
        '--params={"num_examples": 64, "hidden_units": "8,4"}']
    result = _support.run(command, timeout_secs=_TIMEOUT_SECS + 60)
    output, tail = result.output, result.description
    self.assertEqual(result.returncode, 0, tail)
    latest = tf.train.latest_checkpoint(model_dir)
    self.assertIsNotNone(latest, tail)
    variables = dict(tf.train.list_variables(latest))
    self.assertEqual(int(tf.train.load_variable(latest, "global_step")),
                     _MAX_STEPS)
    # The canned model's names, Keras optimizer slots included.
    for name in ("dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_1/kernel",
                 "dnn/logits/kernel",
                 "training/Adagrad/dnn/logits/kernel/accumulator"):
      self.assertIn(name, variables, tail)
    self.assertEqual(variables["dnn/hiddenlayer_0/kernel"], [1, 8])
    # Both workers trained to the end in lock step.
    for task in ("worker/0", "worker/1"):
      self.assertIn(_MAX_STEPS, _support.steps_logged(output, task), tail)
    # The evaluator evaluated the last checkpoint with the head's metrics.
    self.assertIn(_MAX_STEPS, conftest.eval_steps(model_dir), tail)
    evals = re.findall(r"eval \| evaluator/0 \| step (\d+) \| (.*)", output)
    self.assertTrue(evals, tail)
    last_step, metrics = evals[-1]
    self.assertEqual(int(last_step), _MAX_STEPS, tail)
    for key in ("average_loss=", "label/mean=1 ", "prediction/mean="):
      self.assertIn(key, metrics + " ", tail)
    self.assertTrue(os.path.isdir(os.path.join(model_dir, "eval")), tail)


if __name__ == "__main__":
  absltest.main()
