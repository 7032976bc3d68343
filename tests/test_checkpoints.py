"""harness.state.checkpoints: a corrupt newest checkpoint falls back to the previous.

Checkpoints are written by a real Saver (or by real training); corruption is
what a killed save or a failing disk leaves: a truncated data file, a
truncated or garbled index, a missing shard, an unreadable state file.
"""

import os
import uuid

from absl import logging
from absl.testing import absltest
from absl.testing import parameterized

from harness import errors
from harness import warm_start as warm_start_lib
from harness._tf import tf
from harness.distribute import checkpoint_evaluator
from harness.state import checkpoint_reader
from harness.state import checkpoints
import harness
from tests import _support


def _write_checkpoints(model_dir, steps, size=64):
  """Saves one checkpoint per step in `steps`; returns their prefixes."""
  prefixes = []
  with tf.Graph().as_default():
    step = tf.compat.v1.train.create_global_step()
    weights = tf.compat.v1.get_variable(
        "w", initializer=tf.ones([size, size]))
    assign = weights.assign(weights * 2.0)
    saver = tf.compat.v1.train.Saver(max_to_keep=10)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      for value in steps:
        sess.run([step.assign(value), assign])
        prefixes.append(saver.save(
            sess, os.path.join(model_dir, "model.ckpt"), global_step=value))
  return prefixes


def _truncate(path, keep_fraction=0.5):
  size = os.path.getsize(path)
  with open(path, "r+b") as f:
    f.truncate(int(size * keep_fraction))


def _flip_bytes(path, offset=100):
  with open(path, "r+b") as f:
    f.seek(offset)
    data = f.read(16)
    f.seek(offset)
    f.write(bytes(b ^ 0xFF for b in data))


def _corrupt(prefix, how):
  if how == "truncated_data":
    _truncate(prefix + ".data-00000-of-00001")
  elif how == "flipped_data":
    _flip_bytes(prefix + ".data-00000-of-00001")
  elif how == "truncated_index":
    _truncate(prefix + ".index", 0.3)
  elif how == "missing_data":
    os.remove(prefix + ".data-00000-of-00001")
  elif how == "missing_index":  # A save killed before its index was written.
    os.remove(prefix + ".index")
  else:
    raise ValueError(how)


_HOWS = ("truncated_data", "flipped_data", "truncated_index", "missing_data",
         "missing_index")


class ResolvePrefixTest(parameterized.TestCase):
  """The one "checkpoint path or directory -> prefix" rule (warm start,
  export, Estimator's export from a warm start share it)."""

  @parameterized.parameters("local", "ram")
  def test_prefix_directory_and_nothing(self, filesystem):
    if filesystem == "ram":
      model_dir = f"ram://resolve-{uuid.uuid4().hex[:8]}/m"
    else:
      model_dir = self.create_tempdir().full_path
    prefixes = _write_checkpoints(model_dir, [3, 7], size=2)
    # ram:// calls a prefix a directory too: the prefix still wins.
    self.assertEqual(checkpoints.resolve_prefix(prefixes[0]),
                     (prefixes[0], False))
    self.assertEqual(checkpoints.resolve_prefix(model_dir),
                     (prefixes[1], True))
    self.assertEqual(checkpoints.resolve_prefix(model_dir + "/nothing-9"),
                     (None, False))

  def test_directory_without_checkpoint(self):
    empty = self.create_tempdir().full_path
    self.assertEqual(checkpoints.resolve_prefix(empty), (None, True))

  def test_warm_start_and_export_name_what_is_missing(self):
    empty = self.create_tempdir().full_path
    with self.assertRaisesRegex(errors.CheckpointError,
                                "the directory holds no checkpoint"):
      warm_start_lib.warm_start(
          harness.WarmStartSettings(ckpt_to_initialize_from=empty))
    with self.assertRaisesRegex(errors.CheckpointError,
                                "no such checkpoint"):
      warm_start_lib.warm_start(harness.WarmStartSettings(
          ckpt_to_initialize_from=os.path.join(empty, "model.ckpt-1")))


class LatestUsableCheckpointTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    checkpoint_reader._VERDICTS.clear()  # pylint: disable=protected-access
    self.model_dir = self.create_tempdir().full_path

  def test_intact_newest_is_returned(self):
    prefixes = _write_checkpoints(self.model_dir, [10, 20])
    self.assertEqual(checkpoints.latest_usable_checkpoint(self.model_dir),
                     prefixes[-1])

  def test_empty_or_missing_dir_gives_none(self):
    self.assertIsNone(checkpoints.latest_usable_checkpoint(self.model_dir))
    self.assertIsNone(checkpoints.latest_usable_checkpoint(
        os.path.join(self.model_dir, "nope")))

  def test_latest_usable_step_reads_the_usable_one(self):
    self.assertIsNone(checkpoints.latest_usable_step(self.model_dir))
    prefixes = _write_checkpoints(self.model_dir, [10, 20])
    self.assertEqual(checkpoints.latest_usable_step(self.model_dir), 20)
    _corrupt(prefixes[-1], "truncated_data")
    with self.assertLogs(level=logging.WARNING):
      self.assertEqual(checkpoints.latest_usable_step(self.model_dir), 10)

  @parameterized.parameters(*_HOWS)
  def test_corrupt_newest_falls_back_with_warning(self, how):
    prefixes = _write_checkpoints(self.model_dir, [10, 20, 30])
    _corrupt(prefixes[-1], how)
    with self.assertLogs(level=logging.WARNING) as logs:
      path = checkpoints.latest_usable_checkpoint(self.model_dir)
    self.assertEqual(path, prefixes[-2])
    warning = "\n".join(logs.output)
    self.assertIn("skipping unusable checkpoint", warning)
    self.assertIn(prefixes[-1], warning)

  @parameterized.parameters(*_HOWS)
  def test_check_checkpoint_names_the_bad_file(self, how):
    prefix = _write_checkpoints(self.model_dir, [10])[0]
    _corrupt(prefix, how)
    with self.assertRaises(errors.CheckpointError) as ctx:
      checkpoint_reader.check_checkpoint(prefix)
    self.assertIn(os.path.basename(prefix), str(ctx.exception))

  def test_structural_check_only_above_the_size_limit(self):
    prefix = _write_checkpoints(self.model_dir, [10])[0]
    _flip_bytes(prefix + ".data-00000-of-00001")
    # Sizes still add up: only a full read finds flipped bytes.
    checkpoint_reader.check_checkpoint(prefix, full_check_max_bytes=0)
    with self.assertRaises(errors.CheckpointError):
      checkpoint_reader.check_checkpoint(prefix)

  def test_warns_once_per_bad_file_version(self):
    prefixes = _write_checkpoints(self.model_dir, [10, 20])
    _corrupt(prefixes[-1], "truncated_data")
    with self.assertLogs(level=logging.WARNING) as logs:
      for _ in range(3):
        checkpoints.latest_usable_checkpoint(self.model_dir)
    self.assertLen(
        [line for line in logs.output if "skipping unusable" in line], 1)

  def test_unreadable_state_file_uses_files_on_disk(self):
    prefixes = _write_checkpoints(self.model_dir, [10, 20])
    with open(os.path.join(self.model_dir, "checkpoint"), "w") as f:
      f.write("model_checkpoint_path: \"unterminated")
    self.assertEqual(checkpoints.latest_usable_checkpoint(self.model_dir),
                     prefixes[-1])

  def test_all_corrupt_gives_none(self):
    for prefix in _write_checkpoints(self.model_dir, [10, 20]):
      _corrupt(prefix, "truncated_data")
    self.assertIsNone(checkpoints.latest_usable_checkpoint(self.model_dir))

  def test_candidates_newest_first(self):
    prefixes = _write_checkpoints(self.model_dir, [5, 10, 100])
    self.assertEqual(checkpoints.candidate_checkpoints(self.model_dir),
                     prefixes[::-1])


_input_fn = _support.constant_input_fn


class RestoreFallbackTest(absltest.TestCase):
  """Training and the evaluator restore the previous checkpoint."""

  def setUp(self):
    super().setUp()
    checkpoint_reader._VERDICTS.clear()  # pylint: disable=protected-access
    self.model_dir = self.create_tempdir().full_path
    self.est = _support.linear_estimator(self.model_dir, 5,
                                         keep_checkpoint_max=10)
    self.est.train(_input_fn, steps=10)  # Checkpoints at 0, 5, 10.
    newest = tf.train.latest_checkpoint(self.model_dir)
    self.assertTrue(newest.endswith("-10"), newest)
    _corrupt(newest, "truncated_data")
    self.bad = newest

  def test_training_resumes_from_the_previous_checkpoint(self):
    with self.assertLogs(level=logging.WARNING) as logs:
      self.est.train(_input_fn, steps=3)
    self.assertIn(self.bad, "\n".join(logs.output))
    # Restored step 5 (not 10, not 0), then 3 more steps.
    latest = checkpoints.latest_usable_checkpoint(self.model_dir)
    self.assertEqual(int(tf.train.load_variable(latest, "global_step")), 8)

  def test_evaluator_evaluates_the_previous_checkpoint(self):
    evaluator = checkpoint_evaluator.CheckpointEvaluator(
        self.est, harness.EvalSpec(_input_fn, steps=2), 100)
    with self.assertLogs(level=logging.WARNING) as logs:
      metrics, _ = evaluator.evaluate_and_export()
    self.assertIn(self.bad, "\n".join(logs.output))
    self.assertEqual(metrics["global_step"], 5)


def _dense_model_fn(features, labels, mode, params):
  """A linear model of params["width"] outputs (a variable named "w")."""
  weights = tf.compat.v1.get_variable("w", [1, params["width"]])
  predictions = tf.reduce_sum(tf.matmul(features["x"], weights), axis=1)
  if mode == harness.ModeKeys.PREDICT:
    return harness.EstimatorSpec(mode, predictions={"y": predictions})
  loss = tf.reduce_mean(tf.square(predictions - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return harness.EstimatorSpec(mode, loss=loss, train_op=train_op,
                               predictions={"y": predictions})


class ShapeMismatchTest(absltest.TestCase):
  """A checkpoint whose variables have the model's names but other shapes."""

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    harness.Estimator(_dense_model_fn, self.model_dir,
                      params={"width": 2}).train(_input_fn, steps=2)
    self.files = {name: os.path.getsize(os.path.join(self.model_dir, name))
                  for name in os.listdir(self.model_dir)}
    # TensorFlow alone would restore w [1, 2] into w [1, 3] and carry on.
    self.est = harness.Estimator(_dense_model_fn, self.model_dir,
                                 params={"width": 3})

  def assert_refused(self, call):
    with self.assertRaises(errors.CheckpointError) as raised:
      call()
    message = str(raised.exception)
    self.assertIn("does not fit this model", message)
    self.assertIn("w: [1, 3] in the model, [1, 2] in the checkpoint", message)
    self.assertIn("Fix: train this model in a new model_dir", message)
    self.assertEqual(
        {name: os.path.getsize(os.path.join(self.model_dir, name))
         for name in os.listdir(self.model_dir)}, self.files)

  def test_train_refuses(self):
    self.assert_refused(lambda: self.est.train(_input_fn, steps=1))

  def test_evaluate_refuses(self):
    self.assert_refused(lambda: self.est.evaluate(_input_fn, steps=1))

  def test_predict_refuses(self):
    self.assert_refused(lambda: next(self.est.predict(
        lambda: tf.data.Dataset.from_tensors({"x": [[1.0]]}))))

  def test_export_refuses(self):
    def receiver_fn():
      x = tf.compat.v1.placeholder(tf.float32, [None, 1])
      return harness.export.ServingInputReceiver({"x": x}, {"x": x})
    export_dir = self.create_tempdir().full_path
    self.assert_refused(lambda: self.est.export_saved_model(
        export_dir, receiver_fn))
    self.assertEmpty(os.listdir(export_dir))


if __name__ == "__main__":
  absltest.main()
