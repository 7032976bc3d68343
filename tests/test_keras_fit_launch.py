"""A Keras `model.fit` program on two workers under harness.launch (issue 39).

README: `python -m harness.launch --workers=2 -- python my_keras_fit.py`.
The program (tests/programs/keras_fit.py) uses TensorFlow's own
MultiWorkerMirroredStrategy with the TF_CONFIG the launcher gives each task;
harness code plays no part in the training itself.
"""

import json
import os
import sys

from absl.testing import absltest
import numpy as np
import pytest

from tests import _support
from tests import conftest

_PROGRAM = conftest.REPO_ROOT / "tests" / "programs" / "keras_fit.py"


@pytest.mark.slow  # Two TensorFlow processes in sync.
class KerasFitLaunchTest(absltest.TestCase):

  def test_two_workers_fit_in_sync(self):
    out_dir = self.create_tempdir().full_path
    proc = _support.run(
        [sys.executable, "-m", "harness.launch", "--workers=2",
         "--timeout_secs=400", "--", sys.executable, str(_PROGRAM), out_dir],
        timeout_secs=480)
    self.assertEqual(proc.returncode, 0, proc.description)
    results = {}
    for index in (0, 1):
      path = os.path.join(out_dir, f"worker-{index}.json")
      self.assertTrue(os.path.exists(path), proc.description)
      with open(path) as f:
        results[index] = json.load(f)
    for result in results.values():
      self.assertEqual(result["replicas"], 2, result)  # One per worker.
      # harness.launch's environment carries TF_USE_LEGACY_KERAS=1 (set by
      # harness), so the program's tf.keras is tf_keras (Keras 2).
      self.assertEqual(result["tf_use_legacy_keras"], "1", result)
      self.assertEqual(result["keras"], "tf_keras", result)
      self.assertLess(result["losses"][-1], result["losses"][0] / 4, result)
    # Synchronous training: both workers end with the same weights.
    for mine, theirs in zip(results[0]["weights"], results[1]["weights"]):
      np.testing.assert_allclose(mine, theirs, rtol=1e-6)
    self.assertIn("[worker/1] worker/1: tf_keras 2 replicas", proc.output)


if __name__ == "__main__":
  absltest.main()
