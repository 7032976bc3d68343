"""What TensorFlow 2.22 changes that harness passes through, pinned per leg.

docs/COMPAT.md ("TensorFlow versions") lists each difference between the
TensorFlows harness admits that harness does not hide, with the version that
brought it; each row's pin is a test here. Each test checks the behaviour of
the TensorFlow it runs on: the old one below 2.22, the new one from 2.22 on
(CI runs the fast suite on 2.16, 2.21 and the 2.22 pre-release). Hidden
differences (SummarySaverHook) are tested where harness hides them
(tests/test_hooks.py::SummarySaverHookTest).
"""

import re
import subprocess
import sys

from absl.testing import absltest

from harness._tf import tf
from tests import conftest

_COMPAT = conftest.REPO_ROOT / "docs" / "COMPAT.md"
_NEGATIVE_THREADS_SESSION = (
    "from harness._tf import tf\n"
    "with tf.Graph().as_default():\n"
    "  tf.compat.v1.Session(config=tf.compat.v1.ConfigProto(\n"
    "      intra_op_parallelism_threads=-1))\n"
    "print('made')\n")


def _since_2_22():
  return tuple(int(p) for p in tf.__version__.split(".")[:2]) >= (2, 22)


def _sparse(indices, dense_shape):
  return tf.SparseTensor(
      indices=tf.constant(indices, tf.int64),
      values=tf.ones([len(indices)], tf.int64), dense_shape=dense_shape)


class TensorFlowVersionsTest(absltest.TestCase):

  def test_shuffle_buffer_above_2_to_the_30(self):
    make = lambda: tf.data.Dataset.range(3).shuffle(2**30 + 1)
    tf.data.Dataset.range(3).shuffle(2**30)  # The limit itself: every TF.
    if _since_2_22():
      with self.assertRaisesRegex(ValueError, "buffer_size"):
        make()
    else:
      make()

  def test_negative_thread_counts(self):
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=-1)
    if _since_2_22():
      with tf.Graph().as_default():
        with self.assertRaisesRegex(ValueError,
                                    "intra_op_parallelism_threads"):
          tf.compat.v1.Session(config=config)
      return
    # Before 2.22 the process aborts (a C++ check), so in a child.
    result = subprocess.run(
        [sys.executable, "-c", _NEGATIVE_THREADS_SESSION],
        capture_output=True, text=True, timeout=300, check=False)
    self.assertNotEqual(result.returncode, 0, result.stdout)
    self.assertIn("Check failed: num_threads >= 1", result.stderr)
    self.assertNotIn("made", result.stdout)

  def test_sequence_columns_sort_their_sparse_input(self):
    # The sequence length of a sequence feature column (what the RNN
    # estimators read): 2.22 reorders the sparse input first; before, an
    # input whose indices are not in row order failed.
    from tensorflow.python.feature_column import utils  # pylint: disable=g-import-not-at-top
    unsorted = _sparse([[1, 0], [0, 0], [0, 1]], [2, 3])
    length = lambda sp: utils.sequence_length_from_sparse_tensor(sp).numpy()
    self.assertEqual(list(length(_sparse([[0, 0], [0, 1], [1, 0]], [2, 3]))),
                     [2, 1])
    if _since_2_22():
      self.assertEqual(list(length(unsorted)), [2, 1])
    else:
      with self.assertRaisesRegex(tf.errors.InvalidArgumentError,
                                  "not increasing"):
        length(unsorted)

  def test_fixed_len_sequence_feature_dimension_below_1(self):
    make = lambda: tf.io.FixedLenSequenceFeature([0], tf.float32)
    tf.io.FixedLenSequenceFeature([2], tf.float32)
    if _since_2_22():
      with self.assertRaisesRegex(ValueError, "must be positive"):
        make()
    else:
      make()


class CompatSectionTest(absltest.TestCase):

  def test_each_row_names_a_version_and_a_test_here(self):
    section = _COMPAT.read_text().split("## TensorFlow versions", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = [line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| what")]
    tests = {name for name in dir(TensorFlowVersionsTest)
             if name.startswith("test_")}
    pinned = set()
    for row in rows:
      cells = [c.strip() for c in row.strip("|").split("|")]
      self.assertRegex(cells[1], r"^2\.\d+", row)
      pin = re.fullmatch(r"`tests/test_tf_versions\.py::"
                         r"TensorFlowVersionsTest::(\w+)`", cells[-1])
      self.assertIsNotNone(pin, f"row without a pin here: {row[:80]}")
      pinned.add(pin.group(1))
    self.assertEqual(pinned, tests)


if __name__ == "__main__":
  absltest.main()
