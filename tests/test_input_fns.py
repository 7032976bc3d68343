"""Tests of the example input_fns: structure, splits, sharding, errors."""

import gzip
import os
import pathlib
import struct
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from harness import errors
from harness._tf import tf
from harness.spec import ModeKeys
from input_fns import constant
from input_fns import mnist
from input_fns import mnist_idx
from input_fns import synthetic
from tests import conftest

_REAL_MNIST_DIR = conftest.MNIST_DIR  # Shipped in input_fns/data/mnist.


def _collect(input_fn, input_context=None, max_batches=None):
  """Runs input_fn eagerly; returns (list of feature dicts, list of labels)."""
  features, labels = [], []
  for i, (x, y) in enumerate(input_fn(input_context=input_context)):
    if max_batches is not None and i >= max_batches:
      break
    features.append({k: v.numpy() for k, v in x.items()})
    labels.append(y.numpy())
  return features, labels


def _context(num_pipelines, pipeline_id, num_replicas):
  return tf.distribute.InputContext(
      num_input_pipelines=num_pipelines, input_pipeline_id=pipeline_id,
      num_replicas_in_sync=num_replicas)


def _write_idx(directory, split, labels, gz=True):
  """Writes IDX files of `split`: image i has all pixels = 10 * i % 256."""
  labels = np.asarray(labels, np.uint8)
  images = np.stack([np.full((28, 28), (10 * i) % 256, np.uint8)
                     for i in range(len(labels))])
  suffix = ".gz" if gz else ""
  opener = gzip.open if gz else open
  with opener(os.path.join(directory, f"{split}-images-idx3-ubyte{suffix}"),
              "wb") as f:
    f.write(struct.pack(">IIII", 2051, len(labels), 28, 28) + images.tobytes())
  with opener(os.path.join(directory, f"{split}-labels-idx1-ubyte{suffix}"),
              "wb") as f:
    f.write(struct.pack(">II", 2049, len(labels)) + labels.tobytes())


class ContractTest(parameterized.TestCase):

  @parameterized.parameters(constant, mnist, mnist_idx, synthetic)
  def test_module_documents_its_command_and_defaults(self, module):
    self.assertIn("python -m harness.main", module.__doc__)
    self.assertIsInstance(module.DEFAULT_PARAMS, dict)
    self.assertGreater(module.DEFAULT_BATCH_SIZE, 0)

  @parameterized.parameters(constant, synthetic)
  def test_bad_mode_and_batch_size(self, module):
    with self.assertRaisesRegex(errors.InputFnError, "mode='training'"):
      module.make_input_fn("training")
    with self.assertRaisesRegex(errors.InputFnError, "batch_size=0"):
      module.make_input_fn(ModeKeys.TRAIN, batch_size=0)

  def test_batch_not_divisible_by_replicas(self):
    input_fn = constant.make_input_fn(ModeKeys.TRAIN, batch_size=9)
    with self.assertRaisesRegex(errors.InputFnError,
                                "batch_size=9.*2 replicas"):
      input_fn(input_context=_context(1, 0, 2))


class ConstantTest(absltest.TestCase):

  def test_eval_is_one_pass_of_ones(self):
    features, labels = _collect(constant.make_input_fn(ModeKeys.EVAL))
    self.assertLen(labels, 1000)
    self.assertEqual(features[0]["x"].shape, (10, 1))
    self.assertEqual(labels[0].shape, (10, 1))
    np.testing.assert_array_equal(np.concatenate(labels), np.ones((10000, 1)))
    np.testing.assert_array_equal(
        np.concatenate([f["x"] for f in features]), np.ones((10000, 1)))

  def test_train_repeats_past_one_pass(self):
    input_fn = constant.make_input_fn(
        ModeKeys.TRAIN, params={"num_examples": 20})
    _, labels = _collect(input_fn, max_batches=5)
    self.assertLen(labels, 5)

  def test_input_context_splits_batch_and_data(self):
    input_fn = constant.make_input_fn(ModeKeys.EVAL, batch_size=10)
    _, labels = _collect(input_fn, input_context=_context(2, 1, 2))
    self.assertEqual(labels[0].shape, (5, 1))
    self.assertEqual(sum(len(y) for y in labels), 5000)


class SyntheticTest(absltest.TestCase):

  def test_structure_and_range(self):
    input_fn = synthetic.make_input_fn(
        ModeKeys.EVAL, batch_size=50, params={"eval_examples": 200})
    features, labels = _collect(input_fn)
    images = np.concatenate([f["image"] for f in features])
    labels = np.concatenate(labels)
    self.assertEqual(images.shape, (200, 28, 28, 1))
    self.assertEqual(images.dtype, np.float32)
    self.assertEqual(labels.dtype, np.int64)
    self.assertBetween(float(images.min()), 0.0, 1.0)
    self.assertBetween(float(images.max()), 0.0, 1.0)
    self.assertLen(set(labels.tolist()), 10)

  def test_deterministic_and_train_eval_disjoint(self):
    def first_batch(mode):
      fn = synthetic.make_input_fn(mode, batch_size=8,
                                   params={"shuffle_buffer": 1})
      features, labels = _collect(fn, max_batches=1)
      return features[0]["image"], labels[0]
    eval_a, eval_labels_a = first_batch(ModeKeys.EVAL)
    eval_b, eval_labels_b = first_batch(ModeKeys.EVAL)
    np.testing.assert_array_equal(eval_a, eval_b)
    np.testing.assert_array_equal(eval_labels_a, eval_labels_b)
    train, _ = first_batch(ModeKeys.TRAIN)
    self.assertFalse(np.array_equal(train, eval_a))

  def test_same_class_images_are_closer_than_other_classes(self):
    # "Learnable": examples of one class share their prototype.
    fn = synthetic.make_input_fn(ModeKeys.EVAL, batch_size=500,
                                 params={"eval_examples": 500})
    features, labels = _collect(fn)
    images = features[0]["image"].reshape(500, -1)
    means = np.stack([images[labels[0] == c].mean(0) for c in range(10)])
    nearest = np.argmin(
        ((images[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    self.assertGreater(float((nearest == labels[0]).mean()), 0.95)

  def test_rejects_bad_sizes(self):
    with self.assertRaisesRegex(errors.InputFnError, "train_examples=0"):
      synthetic.make_input_fn(ModeKeys.TRAIN, params={"train_examples": 0})


class MnistIdxTest(parameterized.TestCase):

  @parameterized.parameters(True, False)
  def test_test_split_only_is_carved_without_overlap(self, gz):
    data_dir = self.create_tempdir().full_path
    labels = [i % 10 for i in range(30)]
    _write_idx(data_dir, "t10k", labels, gz=gz)
    params = {"train_examples": 20, "eval_examples": 8, "shuffle_buffer": 1}
    train_fn = mnist_idx.make_input_fn(
        ModeKeys.TRAIN, data_dir=data_dir, batch_size=4, params=params)
    features, train_labels = _collect(train_fn, max_batches=6)
    # Unshuffled (buffer 1) and repeated: examples 0..19, then 0.. again.
    np.testing.assert_array_equal(
        np.concatenate(train_labels), labels[:20] + labels[:4])
    self.assertEqual(features[0]["image"].shape, (4, 28, 28, 1))
    np.testing.assert_allclose(features[0]["image"][1], 10 / 255.0)

    eval_fn = mnist_idx.make_input_fn(
        ModeKeys.EVAL, data_dir=data_dir, batch_size=3, params=params)
    features, eval_labels = _collect(eval_fn)
    np.testing.assert_array_equal(np.concatenate(eval_labels), labels[22:])
    self.assertEqual(eval_labels[0].dtype, np.int64)
    np.testing.assert_allclose(features[0]["image"][0], 220 / 255.0)

  def test_train_split_used_when_present(self):
    data_dir = self.create_tempdir().full_path
    _write_idx(data_dir, "t10k", [1] * 5)
    _write_idx(data_dir, "train", [7] * 12, gz=False)
    train_fn = mnist_idx.make_input_fn(ModeKeys.TRAIN, data_dir=data_dir,
                                       batch_size=4)
    _, labels = _collect(train_fn, max_batches=4)
    self.assertEqual(set(np.concatenate(labels).tolist()), {7})
    eval_fn = mnist_idx.make_input_fn(ModeKeys.EVAL, data_dir=data_dir,
                                      batch_size=4)
    _, labels = _collect(eval_fn)
    np.testing.assert_array_equal(np.concatenate(labels), [1] * 5)

  def test_shards_under_input_context(self):
    data_dir = self.create_tempdir().full_path
    _write_idx(data_dir, "t10k", list(range(10)) * 2)
    eval_fn = mnist_idx.make_input_fn(
        ModeKeys.EVAL, data_dir=data_dir, batch_size=4,
        params={"train_examples": 10, "eval_examples": 10})
    _, labels = _collect(eval_fn, input_context=_context(2, 1, 2))
    self.assertEqual(labels[0].shape, (2,))
    np.testing.assert_array_equal(np.concatenate(labels), [1, 3, 5, 7, 9])

  def test_missing_dir_names_dir_files_and_fix(self):
    missing = os.path.join(self.create_tempdir().full_path, "nope")
    with self.assertRaises(errors.InputFnError) as cm:
      mnist_idx.make_input_fn(ModeKeys.TRAIN, data_dir=missing)
    message = str(cm.exception)
    self.assertIn(missing, message)
    # One line under 160 characters with harness.main's 28-character
    # "harness.main: InputFnError: " before it, the path aside.
    self.assertLessEqual(len(message) - len(missing), 160 - 28)
    # The file names are where the message points.
    errors_md = (conftest.REPO_ROOT / "docs" / "ERRORS.md").read_text()
    self.assertIn("docs/ERRORS.md#mnist-data", message)
    self.assertIn("## MNIST data", errors_md)
    self.assertIn("t10k-images-idx3-ubyte[.gz]", errors_md)
    # The fix says what to pass instead; it does not repeat the given path.
    fix = message.split("Fix: ", 1)[1]
    self.assertNotIn(missing, fix)
    self.assertNotIn("../shared/data/mnist", fix)
    self.assertIn("--input_fn=mnist or synthetic", fix)

  def test_default_data_dir_is_the_shipped_test_split(self):
    # Issue 39: no data_dir, no folder beside the checkout: the package's own.
    self.assertEqual(pathlib.Path(mnist_idx.DEFAULT_DATA_DIR).resolve(),
                     conftest.MNIST_DIR.resolve())
    eval_fn = mnist_idx.make_input_fn(ModeKeys.EVAL, batch_size=1000)
    _, labels = _collect(eval_fn)
    labels = np.concatenate(labels)
    self.assertLen(labels, 2000)
    self.assertEqual(set(labels.tolist()), set(range(10)))
    train_fn = mnist_idx.make_input_fn(ModeKeys.TRAIN, data_dir="",
                                       batch_size=100)
    _, train_labels = _collect(train_fn, max_batches=2)
    self.assertEqual([len(y) for y in train_labels], [100, 100])

  def test_missing_files_and_bad_files(self):
    data_dir = self.create_tempdir()
    with self.assertRaisesRegex(errors.InputFnError, "no t10k image/label"):
      mnist_idx.make_input_fn(ModeKeys.EVAL, data_dir=data_dir.full_path)
    data_dir.create_file("t10k-images-idx3-ubyte", "not idx at all!!")
    data_dir.create_file("t10k-labels-idx1-ubyte", "nope nope")
    with self.assertRaisesRegex(errors.InputFnError,
                                "is not an MNIST IDX file"):
      mnist_idx.make_input_fn(ModeKeys.EVAL, data_dir=data_dir.full_path)

  def test_split_sizes_must_fit(self):
    data_dir = self.create_tempdir().full_path
    _write_idx(data_dir, "t10k", [0] * 10)
    with self.assertRaisesRegex(errors.InputFnError,
                                "train_examples=8 and eval_examples=5"):
      mnist_idx.make_input_fn(
          ModeKeys.TRAIN, data_dir=data_dir,
          params={"train_examples": 8, "eval_examples": 5})

  def test_real_files(self):
    if not (_REAL_MNIST_DIR / "t10k-images-idx3-ubyte.gz").exists():
      self.skipTest(f"real MNIST IDX files not found at {_REAL_MNIST_DIR} "
                    "(the repository ships them: git checkout -- "
                    "input_fns/data/mnist)")
    eval_fn = mnist_idx.make_input_fn(
        ModeKeys.EVAL, data_dir=str(_REAL_MNIST_DIR), batch_size=500)
    features, labels = _collect(eval_fn)
    labels = np.concatenate(labels)
    self.assertLen(labels, 2000)
    self.assertEqual(set(labels.tolist()), set(range(10)))
    image = features[0]["image"]
    self.assertEqual(image.shape, (500, 28, 28, 1))
    self.assertEqual(float(image.min()), 0.0)
    self.assertEqual(float(image.max()), 1.0)


class MnistTfdsTest(absltest.TestCase):

  def test_mock_data(self):
    import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
    data_dir = self.create_tempdir().full_path
    # The reachability probe is the network boundary; mock_data stands in
    # for the download and the files.
    with tfds.testing.mock_data(num_examples=20), mock.patch.object(
        mnist, "_can_reach", return_value=True):
      eval_fn = mnist.make_input_fn(ModeKeys.EVAL, data_dir=data_dir,
                                    batch_size=8)
      features, labels = _collect(eval_fn)
      train_fn = mnist.make_input_fn(ModeKeys.TRAIN, data_dir=data_dir,
                                     batch_size=8)
      _, train_labels = _collect(train_fn, max_batches=4)
    self.assertEqual([len(y) for y in labels], [8, 8, 4])
    self.assertEqual(features[0]["image"].shape, (8, 28, 28, 1))
    self.assertEqual(features[0]["image"].dtype, np.float32)
    self.assertLessEqual(float(features[0]["image"].max()), 1.0)
    self.assertEqual(labels[0].dtype, np.int64)
    self.assertLen(train_labels, 4)  # Repeats past its 20 examples.

  def test_offline_fails_fast_naming_alternatives(self):
    data_dir = self.create_tempdir().full_path
    with mock.patch.object(mnist, "_can_reach", return_value=False):
      with self.assertRaises(errors.InputFnError) as cm:
        mnist.make_input_fn(ModeKeys.TRAIN, data_dir=data_dir)
    message = str(cm.exception)
    self.assertIn("storage.googleapis.com", message)
    # Offline hints name only what is there: mnist_idx's shipped split.
    self.assertIn("--input_fn=mnist_idx (the real 10k MNIST test split, "
                  "shipped with harness)", message)
    self.assertNotIn("--data_dir", message.split("Offline", 1)[1])
    self.assertTrue(os.path.isfile(os.path.join(
        mnist_idx.DEFAULT_DATA_DIR, "t10k-images-idx3-ubyte.gz")))
    self.assertIn("--input_fn=synthetic", message)

  def test_download_disabled(self):
    data_dir = self.create_tempdir().full_path
    with self.assertRaisesRegex(errors.InputFnError, "download=False"):
      mnist.make_input_fn(ModeKeys.EVAL, data_dir=data_dir,
                          params={"download": False})


if __name__ == "__main__":
  absltest.main()
