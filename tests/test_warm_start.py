"""Tests of harness.warm_start against checkpoints written by plain TF."""

import os

from absl.testing import absltest
import numpy as np

from harness import errors
from harness import warm_start
from harness._tf import tf

_OLD_VOCAB = ["a", "b", "c"]
_NEW_VOCAB = ["c", "a", "d"]  # "d" is new: its row uses the backup init.
_KERNEL = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
_EMBEDDING = np.array([[1.0, 1.5], [2.0, 2.5], [3.0, 3.5]], np.float32)
_BIAS = np.array([7.0, 8.0, 9.0], np.float32)


def _constant_var(name, value):
  return tf.compat.v1.get_variable(
      name, initializer=tf.constant_initializer(value), shape=value.shape)


def _write_checkpoint(model_dir):
  """Trains zero steps with a MonitoredTrainingSession (saves step 0)."""
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    _constant_var("dense/kernel", _KERNEL)
    _constant_var("old_bias", _BIAS)
    _constant_var("embedding", _EMBEDDING)
    with tf.compat.v1.train.MonitoredTrainingSession(
        checkpoint_dir=model_dir, save_summaries_steps=None,
        log_step_count_steps=None):
      pass


def _minus_ones(shape, dtype=tf.float32, partition_info=None):
  # Called with a symbolic shape, which tf.constant_initializer rejects.
  del partition_info
  return tf.fill(shape, tf.constant(-1.0, dtype))


def _write_vocab(directory, name, tokens):
  path = os.path.join(directory, name)
  with open(path, "w") as f:
    f.write("\n".join(tokens) + "\n")
  return path


class WarmStartTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    _write_checkpoint(self.model_dir)

  def _new_model_values(self, settings, names=("dense/kernel", "new_bias",
                                               "embedding")):
    shapes = {"dense/kernel": [2, 2], "new_bias": [3], "embedding": [3, 2],
              "extra": [2]}
    with tf.Graph().as_default():
      variables = [tf.compat.v1.get_variable(
          name, shape=shapes[name], initializer=tf.zeros_initializer())
                   for name in names]
      warm_start.warm_start(settings)
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        return dict(zip(names, session.run(variables)))

  def test_renamed_variable_and_vocab_remap(self):
    vocab_dir = self.create_tempdir().full_path
    vocab_info = warm_start.VocabInfo(
        new_vocab=_write_vocab(vocab_dir, "new.txt", _NEW_VOCAB),
        new_vocab_size=3, num_oov_buckets=0,
        old_vocab=_write_vocab(vocab_dir, "old.txt", _OLD_VOCAB),
        backup_initializer=_minus_ones)
    settings = warm_start.WarmStartSettings(
        self.model_dir,
        var_name_to_vocab_info={"embedding": vocab_info},
        var_name_to_prev_var_name={"new_bias": "old_bias"})
    values = self._new_model_values(settings)
    np.testing.assert_allclose(values["dense/kernel"], _KERNEL)
    np.testing.assert_allclose(values["new_bias"], _BIAS)
    np.testing.assert_allclose(
        values["embedding"], [_EMBEDDING[2], _EMBEDDING[0], [-1.0, -1.0]])

  def test_regex_limits_the_variables(self):
    settings = warm_start.WarmStartSettings(
        os.path.join(self.model_dir, "model.ckpt-0"),
        vars_to_warm_start="dense/.*")
    values = self._new_model_values(settings, names=("dense/kernel",
                                                     "extra"))
    np.testing.assert_allclose(values["dense/kernel"], _KERNEL)
    np.testing.assert_allclose(values["extra"], [0.0, 0.0])

  def test_variable_missing_from_checkpoint(self):
    settings = warm_start.WarmStartSettings(self.model_dir)
    with self.assertRaisesRegex(errors.HarnessError, "new_bias"):
      self._new_model_values(settings)

  def test_missing_checkpoint(self):
    missing = os.path.join(self.model_dir, "nope", "model.ckpt-5")
    with self.assertRaisesRegex(errors.CheckpointError, "no such checkpoint"):
      self._new_model_values(warm_start.WarmStartSettings(missing))
    empty_dir = self.create_tempdir().full_path
    with self.assertRaisesRegex(errors.CheckpointError, "holds no checkpoint"):
      self._new_model_values(warm_start.WarmStartSettings(empty_dir))


class DefaultSettingsTest(absltest.TestCase):

  def test_paths(self):
    self.assertIsNone(warm_start.get_default_warm_start_settings(None))
    settings = warm_start.get_default_warm_start_settings("/models/a")
    self.assertEqual(settings, warm_start.WarmStartSettings(
        "/models/a", ".*", {}, {}))
    saved_model = self.create_tempdir()
    saved_model.create_file(os.path.join("variables", "variables.index"))
    settings = warm_start.get_default_warm_start_settings(
        os.fsencode(saved_model.full_path))
    self.assertEqual(settings.ckpt_to_initialize_from, os.path.join(
        saved_model.full_path, "variables", "variables"))

  def test_settings_pass_through(self):
    settings = warm_start.WarmStartSettings("/x", vars_to_warm_start=None)
    self.assertIs(warm_start.get_default_warm_start_settings(settings),
                  settings)

  def test_bad_values(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "instead got <class 'int'>"):
      warm_start.get_default_warm_start_settings(42)
    with self.assertRaisesRegex(errors.ConfigError, "MUST be set"):
      warm_start.WarmStartSettings("")

  def test_vocab_info_is_tensorflows(self):
    self.assertIs(warm_start.VocabInfo, tf.compat.v1.train.VocabInfo)


if __name__ == "__main__":
  absltest.main()
