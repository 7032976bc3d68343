"""A model_dir deleted while its trainer runs: the check before each save.

The chief's lease file (`trainer.lease`, written when training starts) is
what only the original folder has: before each checkpoint save the lease's
saving listener looks for it, and a refresh that finds it gone stops
rewriting it. A deleted model_dir, or one made again empty (TensorFlow's
summary writer makes it again for its next event), ends training with
`ModelDirDeletedError`, the one line `harness.main` prints. A restart into
an existing model_dir, a second train() and the model's own files in
model_dir do not. The slow end-to-end run: tests/test_one_line_inputs.py.
"""

import os
import shutil

from absl.testing import absltest

import harness
from harness import errors
from harness._tf import tf
from harness.state import lease
from harness.state import lease_file
from tests import _support

_DELETED = "was deleted while the job ran"


def _acquire(model_dir):
  # No background refresh: the tests call refresh() themselves.
  return lease.acquire(model_dir, refresh_secs=3600)


def _before_save(held):
  held.saving_listener.before_save(None, 0)


class SaveCheckTest(absltest.TestCase):
  """The lease's check alone, on the local disk and on ram://."""

  def setUp(self):
    super().setUp()
    self.model_dir = os.path.join(self.create_tempdir().full_path, "m")

  def _held(self, model_dir=None):
    held = _acquire(model_dir or self.model_dir)
    self.addCleanup(held.release)
    return held

  def test_a_deleted_model_dir_fails_the_next_save(self):
    held = self._held()
    _before_save(held)  # The folder it started with: saves go on.
    shutil.rmtree(self.model_dir)
    with self.assertRaises(errors.ModelDirDeletedError) as ctx:
      _before_save(held)
    self.assertEqual(
        str(ctx.exception), errors.ModelDirDeletedError.message(
            self.model_dir, "it no longer exists"))
    self.assertIn(f"--model_dir={self.model_dir} {_DELETED} (it no longer "
                  "exists); its checkpoints went with it. Fix:",
                  str(ctx.exception))

  def test_a_folder_made_again_fails_the_next_save(self):
    held = self._held()
    shutil.rmtree(self.model_dir)
    os.makedirs(self.model_dir)  # As the summary writer does, for an event.
    with open(os.path.join(self.model_dir, "events.out.tfevents.1"), "w"):
      pass
    with self.assertRaises(errors.ModelDirDeletedError) as ctx:
      _before_save(held)
    self.assertIn(f"{_DELETED} (the folder there now lacks the trainer.lease "
                  "this trainer wrote when it started: it was made again",
                  str(ctx.exception))
    with self.assertRaises(errors.ModelDirDeletedError):  # Each step's too.
      held.check()

  def test_a_refresh_does_not_write_the_lease_into_a_new_folder(self):
    held = self._held()
    shutil.rmtree(self.model_dir)
    os.makedirs(self.model_dir)
    held.refresh()
    self.assertIsNone(lease_file.read(self.model_dir))
    # The per-step lease hook stops training at once.
    with self.assertRaisesRegex(errors.ModelDirDeletedError, _DELETED):
      held.check()

  def test_a_restart_into_its_model_dir_passes(self):
    first = _acquire(self.model_dir)
    first.release()
    with open(os.path.join(self.model_dir, "checkpoint"), "w"):
      pass  # An earlier run's files, and its lease file gone with it.
    held = self._held()
    self.assertNotEqual(held.record.token, first.record.token)
    _before_save(held)
    held.refresh()
    _before_save(held)
    held.check()

  def test_a_released_lease_checks_nothing(self):
    # A saver hook that a second train() call reuses keeps the first call's
    # listener: it must not judge the folder of the next run.
    held = _acquire(self.model_dir)
    listener = held.saving_listener
    held.release()
    shutil.rmtree(self.model_dir)
    listener.before_save(None, 0)

  def test_ram_filesystem(self):
    model_dir = f"ram://{self.model_dir}"
    held = self._held(model_dir)
    _before_save(held)
    tf.io.gfile.rmtree(model_dir)
    with self.assertRaisesRegex(errors.ModelDirDeletedError,
                                f"--model_dir={model_dir} {_DELETED}"):
      _before_save(held)


class DiagnoseTest(absltest.TestCase):

  def test_the_savers_refusal_reads_as_deleted_after_the_folder_returned(self):
    # A cluster chief's end marks make the folder again before harness.main
    # explains the error (seen in a clean-clone suite run): the Saver's own
    # words say the folder was gone when it saved.
    from harness.cli import diagnose  # pylint: disable=g-import-not-at-top
    model_dir = self.create_tempdir().full_path  # Exists again.
    try:
      try:
        raise ValueError(f"Parent directory of {model_dir}/model.ckpt "
                         "doesn't exist, can't save.")
      except ValueError as e:
        raise RuntimeError("training failed") from e
    except RuntimeError as e:
      error = e
    label, message = diagnose.explain(error, model_dir)
    self.assertEqual(label, "RuntimeError")
    self.assertIn(f"--model_dir={model_dir} {_DELETED}", message)
    # Another error naming model_dir, the folder in place: not "deleted".
    other = ValueError(f"cannot parse {model_dir}/checkpoint")
    self.assertNotIn(_DELETED, str(diagnose.explain(other, model_dir)[1]))


class _DeleteAtStep(tf.compat.v1.train.SessionRunHook):
  """Deletes model_dir after `step` runs and makes it again, empty."""

  def __init__(self, model_dir, step):
    self._model_dir = model_dir
    self._step = step
    self._runs = 0

  def after_run(self, run_context, run_values):
    del run_context, run_values
    self._runs += 1
    if self._runs == self._step:
      shutil.rmtree(self._model_dir)
      os.makedirs(self._model_dir)


class _OwnFile(tf.compat.v1.train.SessionRunHook):
  """Writes a file of its own into model_dir, as some programs do."""

  def __init__(self, model_dir):
    self._path = os.path.join(model_dir, "my_notes.txt")

  def after_run(self, run_context, run_values):
    del run_context, run_values
    with tf.io.gfile.GFile(self._path, "w") as f:
      f.write("notes")


class EstimatorTrainTest(absltest.TestCase):
  """Through Estimator.train, in this process."""

  def setUp(self):
    super().setUp()
    self.model_dir = os.path.join(self.create_tempdir().full_path, "m")

  def test_a_folder_made_again_mid_training_is_an_error(self):
    estimator = _support.linear_estimator(self.model_dir, 10)
    with self.assertRaisesRegex(errors.ModelDirDeletedError,
                                f"--model_dir={self.model_dir} {_DELETED}"):
      estimator.train(_support.constant_input_fn, max_steps=40,
                      hooks=[_DeleteAtStep(self.model_dir, 5)])
    # The save at step 10 did not go into the new, empty folder.
    self.assertIsNone(tf.train.latest_checkpoint(self.model_dir))

  def test_the_model_fns_own_saver_hook_is_checked_too(self):
    model_dir = self.model_dir
    base = _support.scalar_weight_model_fn()

    def model_fn(features, labels, mode):
      spec = base(features, labels, mode)
      saver_hook = tf.compat.v1.train.CheckpointSaverHook(
          model_dir, save_steps=10)
      return spec._replace(training_chief_hooks=[saver_hook])

    estimator = harness.Estimator(model_fn, config=harness.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=10,
        save_checkpoints_secs=None))
    with self.assertRaisesRegex(errors.ModelDirDeletedError, _DELETED):
      estimator.train(_support.constant_input_fn, max_steps=40,
                      hooks=[_DeleteAtStep(model_dir, 5)])
    self.assertIsNone(tf.train.latest_checkpoint(model_dir))

  def test_train_and_evaluate_passes(self):
    estimator = _support.linear_estimator(self.model_dir, 10)
    for max_steps in (20, 30):  # Twice: a restart into its model_dir.
      harness.train_and_evaluate(
          estimator,
          harness.TrainSpec(_support.constant_input_fn, max_steps=max_steps),
          harness.EvalSpec(_support.constant_input_fn, steps=2,
                           throttle_secs=0))
    self.assertEqual(_support.checkpoint_step(self.model_dir), 30)

  def test_train_twice_and_a_restart_pass(self):
    estimator = _support.linear_estimator(self.model_dir, 10)
    estimator.train(_support.constant_input_fn, max_steps=20,
                    hooks=[_OwnFile(self.model_dir)])
    estimator.train(_support.constant_input_fn, steps=10)
    restarted = _support.linear_estimator(self.model_dir, 10)
    restarted.train(_support.constant_input_fn, max_steps=40)
    self.assertEqual(_support.checkpoint_step(self.model_dir), 40)


if __name__ == "__main__":
  absltest.main()
