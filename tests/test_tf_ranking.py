"""TF Ranking's `tfr.estimator` on harness (issue 25.7, tensorflow/ranking#362).

TF Ranking 0.5.5 imports `tensorflow.estimator`, gone since TF 2.16; with
`import harness.compat` first its DNN ranking estimator and its groupwise
path (`tfr.model.make_groupwise_ranking_fn` + `tfr.head`) train, evaluate,
export and serve on TF 2.21. Skipped unless it is installed (README: `pip
install --no-deps tensorflow-ranking==0.5.5 tensorflow-serving-api`); CI's
TF Ranking leg installs it and sets HARNESS_REQUIRE_TF_RANKING=1, which
turns the skip into a failure.
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
                        "tfr_ranking.py")
_MISSING = [name for name in ("tensorflow_ranking", "tensorflow_serving")
            if importlib.util.find_spec(name) is None]
_REQUIRED = os.environ.get("HARNESS_REQUIRE_TF_RANKING") == "1"




@pytest.mark.slow
@absltest.skipIf(_MISSING and not _REQUIRED,
                 f"not installed: {', '.join(_MISSING)} (pip install --no-deps "
                 "tensorflow-ranking==0.5.5 tensorflow-serving-api)")
class TfRankingTest(absltest.TestCase):

  def test_dnn_ranking_estimator_trains_evaluates_and_exports(self):
    self.assertEqual(_MISSING, [], "HARNESS_REQUIRE_TF_RANKING=1")
    model_dir = self.create_tempdir().full_path
    result = _support.run([sys.executable, _PROGRAM, model_dir],
                          timeout_secs=600)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertTrue(os.path.exists(
        os.path.join(model_dir, "model.ckpt-200.index")), result.description)
    metrics = _support.printed_literal(result.stdout, "eval")
    self.assertEqual(metrics["global_step"], 200)
    for key in ("metric/ndcg", "metric/mrr", "loss"):
      self.assertIn(key, metrics)
    self.assertLen(glob.glob(os.path.join(model_dir, "export", "*",
                                          "saved_model.pb")), 1)
    # The served model ranks the document with the largest x first.
    scores = _support.printed_literal(result.stdout, "scores")
    self.assertLen(scores, 3)
    self.assertEqual(scores.index(max(scores)), 1, scores)
    # The groupwise path, the same way.
    groupwise_dir = os.path.join(model_dir, "groupwise")
    metrics = _support.printed_literal(result.stdout, "groupwise_eval")
    self.assertEqual(metrics["global_step"], 200)
    self.assertIn("metric/ndcg", metrics)
    self.assertLen(glob.glob(os.path.join(groupwise_dir, "export", "*",
                                          "saved_model.pb")), 1)
    scores = _support.printed_literal(result.stdout, "groupwise_scores")
    self.assertLen(scores, 3)
    self.assertEqual(scores.index(max(scores)), 1, scores)


if __name__ == "__main__":
  absltest.main()
