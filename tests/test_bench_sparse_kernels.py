"""Tests of bench.perf.sparse_kernels: the medians, the section and the
README sentence it writes, and (slow) that its child measures in this
TensorFlow (the benchmark itself is timed, not tested)."""

import json
import os
import subprocess
import sys

from absl.testing import absltest
import pytest

from bench.perf import sparse_kernels
from tests import conftest


def _result(tf_version, scale, wide):
  return {"tensorflow": tf_version, "python": "3.11.7",
          **{k: 0.02 * (1 if k == "adagrad_w1" else scale)
             for k in sparse_kernels.KERNELS}, "wide": wide}


def _section(runs=None):
  runs = runs or {
      "/a/python": [_result("2.19.1", 1.0, 100_000),
                    _result("2.19.1", 1.0, 98_000)],
      "/b/python": [_result("2.21.0", 3.5, 44_000),
                    _result("2.21.0", 3.5, 44_000)],
      "/c/python": [{"error": "exit 1: boom"}],
  }
  return sparse_kernels.render(
      rows=sparse_kernels.summarise(runs), command="c", rounds=2,
      elapsed_secs=10, uptime_before="-", uptime_after="-")


class SectionTest(absltest.TestCase):

  def test_medians_and_ratios_to_the_fastest(self):
    text = _section()
    begin, end = sparse_kernels.markers()
    self.assertTrue(text.startswith(begin) and text.endswith(end))
    self.assertIn("| 2.19.1 (3.11.7) | 0.020 (1.0x) | 0.020 (1.0x) | 0.020 "
                  "(1.0x) | 0.020 (1.0x) | 0.020 (1.0x) | 99000 (1.00x) |",
                  text)
    self.assertIn("| 2.21.0 (3.11.7) | 0.070 (3.5x) | 0.070 (3.5x) | 0.070 "
                  "(3.5x) | 0.070 (3.5x) | 0.020 (1.0x) | 44000 (0.44x) |",
                  text)
    self.assertIn("- /c/python: exit 1: boom", text)

  def test_sentence_names_the_slow_versions(self):
    sentence = sparse_kernels.readme_sentence("x\n" + _section() + "\ny")
    self.assertIn("On TensorFlow 2.21.0 the kernels", sentence)
    self.assertIn("ran 3.5x as long as on 2.19.1, and the wide model "
                  "trained at 0.44x", sentence)
    # 1 / 0.44, the published ratio.
    self.assertIn("up to 2.3x as fast on TensorFlow 2.19 or older", sentence)

  def test_no_sentence_without_a_slow_and_a_fast_version(self):
    self.assertIsNone(sparse_kernels.readme_sentence("nothing"))
    same = _section({"/a/python": [_result("2.19.1", 1.0, 100_000)],
                     "/b/python": [_result("2.18.1", 1.1, 99_000)]})
    self.assertIsNone(sparse_kernels.readme_sentence(same))

  def test_readme_span_is_the_results_sentence(self):
    span, results = conftest.readme_span_and_results("sparse-kernels")
    self.assertIsNotNone(span)
    self.assertEqual(span, sparse_kernels.readme_sentence(results))

  def test_a_missing_python_is_named(self):
    with self.assertRaisesRegex(FileNotFoundError, "/no/such/python"):
      sparse_kernels._run_child("/no/such/python", 10)  # pylint: disable=protected-access


@pytest.mark.slow  # A TensorFlow process timing kernels and a model.
class ChildTest(absltest.TestCase):

  def test_the_child_measures_this_tensorflow(self):
    out = subprocess.run(
        [sys.executable, "-m", "bench.perf.sparse_kernels", "--child"],
        cwd=conftest.REPO_ROOT, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, TF_USE_LEGACY_KERAS="1"), check=True)
    line = [l for l in out.stdout.splitlines()
            if l.startswith("SPARSE_KERNELS ")]
    self.assertLen(line, 1, out.stderr[-2000:])
    result = json.loads(line[0].split(" ", 1)[1])
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self.assertEqual(result["tensorflow"], tf.__version__)
    for key in sparse_kernels.KERNELS:
      self.assertGreater(result[key], 0)
    self.assertGreater(result["wide"], 0)


if __name__ == "__main__":
  absltest.main()
