"""AdaNet's Estimator on harness (issue 41).

AdaNet 0.9.0 subclasses tf.estimator's Estimator and reads its heads'
`eval_metric_ops` as `(value, update_op)` pairs; with `import
harness.compat` first an `adanet.Estimator` over a generator's two candidate
subnetworks trains two iterations, evaluates (the v2 head's Keras metrics)
and exports on TF 2.21 (tests/programs/adanet_ensemble.py). Skipped unless
AdaNet is installed (README: AdaNet; .ci/run's library leg installs it).
"""

import glob
import importlib.util
import os
import sys

from absl.testing import absltest
import pytest

from tests import _support
from tests import conftest

_PROGRAM = os.path.join(conftest.REPO_ROOT, "tests", "programs",
                        "adanet_ensemble.py")
_MISSING = [name for name in ("adanet",)
            if importlib.util.find_spec(name) is None]




@pytest.mark.slow
@absltest.skipIf(_MISSING, "not installed: adanet (README: AdaNet, its "
                 "install line)")
class AdaNetTest(absltest.TestCase):

  def test_adanet_estimator_trains_evaluates_and_exports(self):
    model_dir = self.create_tempdir().full_path
    result = _support.run([sys.executable, _PROGRAM, model_dir],
                          timeout_secs=1800)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertTrue(os.path.exists(
        os.path.join(model_dir, "model.ckpt-200.index")), result.description)
    metrics = _support.printed_literal(result.stdout, "eval")
    self.assertEqual(metrics["global_step"], 200)
    # BinaryClassHead's Keras metrics, read by AdaNet as pairs.
    for key in ("accuracy", "auc", "average_loss", "loss"):
      self.assertIn(key, metrics)
    self.assertGreater(metrics["accuracy"], 0.8, metrics)
    self.assertLen(glob.glob(os.path.join(model_dir, "export", "*",
                                          "saved_model.pb")), 1)
    positive = _support.printed_literal(result.stdout, "positive")
    self.assertGreater(positive[0], 0.5, positive)
    self.assertLess(positive[1], 0.5, positive)


if __name__ == "__main__":
  absltest.main()
