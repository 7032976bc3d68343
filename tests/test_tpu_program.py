"""Acceptance: a BERT run_classifier-style TPUEstimator program, unmodified.

tests/legacy_programs/legacy_tpu_classifier.py (TPUEstimatorSpec with
scaffold_fn + init_from_checkpoint, eval_metrics=(metric_fn, [tensors]),
params["batch_size"] in input_fn, tpu.RunConfig(tpu_config=TPUConfig(
iterations_per_loop=50)), use_tpu=False, absl flags) runs under
`python -m harness.run`: it trains, evaluates, predicts and exports; a
second run warm-starts from the first's checkpoint through scaffold_fn.
"""

import glob
import json
import os
import sys

import numpy as np
import pytest
from absl.testing import absltest

from tests import _support

_PROGRAM = "tests/legacy_programs/legacy_tpu_classifier.py"
_TIMEOUT_SECS = 300


def _run(*args):
  return _support.run([sys.executable, "-m", "harness.run", _PROGRAM, *args],
                      timeout_secs=_TIMEOUT_SECS)


def _trainable(reader):
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
          if n.startswith(("bert/", "output/")) and "/Adam" not in n}


@pytest.mark.slow
class LegacyTPUProgramTest(absltest.TestCase):

  def test_trains_evaluates_predicts_exports_and_warm_starts(self):
    from harness._tf import tf  # pylint: disable=g-import-not-at-top
    tmp = self.create_tempdir().full_path
    first_dir = os.path.join(tmp, "first")
    first_json = os.path.join(tmp, "first.json")
    result = _run(f"--output_dir={first_dir}", "--do_train", "--do_eval",
                  "--do_predict", "--do_export", f"--result_json={first_json}")
    self.assertEqual(result.returncode, 0, result.description)
    log = result.stderr
    self.assertIn("iterations_per_loop=50 -> steps_per_loop=50", log)
    self.assertNotIn("steps_per_loop=50 -> 1", log)  # No fallback.
    with open(first_json) as f:
      first = json.load(f)
    self.assertEqual(first["eval"]["global_step"], 200)
    self.assertGreater(first["eval"]["eval_accuracy"], 0.9)
    self.assertIn("eval_loss", first["eval"])
    # 20 examples predicted in batches of predict_batch_size=8 (8, 8, 4).
    probabilities = np.asarray(first["predictions"])
    self.assertEqual(probabilities.shape, (20, 2))
    accuracy = np.mean(probabilities.argmax(1) == first["predict_labels"])
    self.assertGreater(accuracy, 0.8)
    # Checkpoints at save_checkpoints_steps=100: the loop of 50 ends there.
    steps = sorted(int(p.rsplit("-", 1)[1][:-len(".index")])
                   for p in glob.glob(os.path.join(first_dir, "*.index")))
    self.assertEqual(steps[-2:], [100, 200])
    # The export serves what predict returned.
    loaded = tf.saved_model.load(first["export_dir"])
    ids = np.random.RandomState(2).randint(0, 12, size=(20, 8)).astype(
        np.int32)
    served = loaded.signatures["serving_default"](input_ids=tf.constant(ids))
    np.testing.assert_allclose(served["probabilities"].numpy(),
                               probabilities, rtol=1e-4, atol=1e-6)

    # Warm start through scaffold_fn's init_from_checkpoint, learning rate
    # 0: the weights stay the first run's, and so does the evaluation.
    second_dir = os.path.join(tmp, "second")
    second_json = os.path.join(tmp, "second.json")
    checkpoint = tf.train.latest_checkpoint(first_dir)
    result = _run(f"--output_dir={second_dir}", "--do_train", "--do_eval",
                  f"--init_checkpoint={checkpoint}", "--learning_rate=0",
                  "--num_train_steps=50", f"--result_json={second_json}")
    self.assertEqual(result.returncode, 0, result.description)
    self.assertNotIn("steps_per_loop=50 -> 1", result.stderr)
    with open(second_json) as f:
      second = json.load(f)
    self.assertEqual(second["eval"]["global_step"], 50)
    self.assertAlmostEqual(second["eval"]["eval_accuracy"],
                           first["eval"]["eval_accuracy"])
    self.assertAlmostEqual(second["eval"]["eval_loss"],
                           first["eval"]["eval_loss"], places=5)
    want = _trainable(tf.train.load_checkpoint(checkpoint))
    got = _trainable(tf.train.load_checkpoint(
        tf.train.latest_checkpoint(second_dir)))
    self.assertEqual(sorted(got), sorted(want))
    self.assertLen(want, 11)  # Embeddings, q/k/v, pooler, output.
    for name, value in want.items():
      np.testing.assert_array_equal(got[name], value, err_msg=name)

  def test_use_tpu_true_fails_fast_naming_the_fix(self):
    tmp = self.create_tempdir().full_path
    result = _run(f"--output_dir={tmp}", "--do_train", "--use_tpu=true")
    self.assertNotEqual(result.returncode, 0)
    self.assertIn("NotSupportedError", result.stderr)
    self.assertIn("pass use_tpu=False", result.stderr)
    self.assertIn("TPUStrategy", result.stderr)
    self.assertEmpty(glob.glob(os.path.join(tmp, "*.index")))


if __name__ == "__main__":
  absltest.main()
