"""TensorFlow Privacy's DP estimators on harness (issue 41).

TensorFlow Privacy 0.9.0 imports tf.estimator 2.15's module paths, among
them the v1 heads module its DP heads subclass; with `import harness.compat`
first its v1 `DNNClassifier` trains with a DP optimizer, evaluates and
exports on TF 2.21 (tests/programs/tfp_dp_dnn.py). Skipped unless it is
installed (README: TensorFlow Privacy; .ci/run's library leg installs it).
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
                        "tfp_dp_dnn.py")
_MISSING = [name for name in ("tensorflow_privacy", "dp_accounting",
                              "tensorflow_probability", "sklearn")
            if importlib.util.find_spec(name) is None]




@pytest.mark.slow
@absltest.skipIf(_MISSING, f"not installed: {', '.join(_MISSING)} (README: "
                 "TensorFlow Privacy, its install line)")
class TfPrivacyTest(absltest.TestCase):

  def test_dp_dnn_classifier_trains_evaluates_and_exports(self):
    model_dir = self.create_tempdir().full_path
    result = _support.run([sys.executable, _PROGRAM, model_dir],
                          timeout_secs=900)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertTrue(os.path.exists(
        os.path.join(model_dir, "model.ckpt-300.index")), result.description)
    metrics = _support.printed_literal(result.stdout, "eval")
    self.assertEqual(metrics["global_step"], 300)
    # The v1 binary head's metrics, as 2.15's.
    for key in ("accuracy", "auc", "average_loss", "label/mean", "loss"):
      self.assertIn(key, metrics)
    self.assertGreater(metrics["accuracy"], 0.8, metrics)
    self.assertEqual(_support.printed_literal(result.stdout, "gauge"), "DNN")
    self.assertLen(glob.glob(os.path.join(model_dir, "export", "*",
                                          "saved_model.pb")), 1)
    positive = _support.printed_literal(result.stdout, "positive")
    self.assertGreater(positive[0], 0.5, positive)
    self.assertLess(positive[1], 0.5, positive)


if __name__ == "__main__":
  absltest.main()
