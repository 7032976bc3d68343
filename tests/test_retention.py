"""Checkpoint lifecycle across restarts and crashes (issue 19.1, 19.2).

* keep_checkpoint_max counts the checkpoints earlier runs left; leftovers
  of interrupted saves and exports older than the run are removed, one INFO
  line each.
* The `checkpoint` state file decides what restores, evaluates and resumes;
  the on-disk scan is the fallback, with a warning naming why.
* Slow: 8 kill -9 / restart cycles of `python -m harness.main` with
  --keep_checkpoint_max=2 end with <= 2 checkpoints and no temporary folders.
"""

import os
import random
import re
import signal
import sys
import time

from absl.testing import absltest
import pytest

from harness import _tf_private
from harness._tf import tf
from harness.state import checkpoints
from harness.state import retention
import harness
from tests import _processes
from tests import _support
from tests import conftest
from tests.programs.cluster_job import model_fn as _model_fn

_TIMEOUT_SECS = 300


_input_fn = _support.constant_input_fn


_steps = _support.checkpoint_steps


def _make_old(path, age_secs=3600):
  then = time.time() - age_secs
  os.utime(path, (then, then))


def _leftovers(model_dir):
  found = []
  for root, dirs, files in os.walk(model_dir):
    found += [os.path.join(root, n) for n in dirs + files
              if retention.is_checkpoint_leftover(n) or
              n.startswith(retention.EXPORT_TEMP_PREFIX)]
  return found


class RetentionTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path

  def estimator(self, keep=2):
    return harness.Estimator(_model_fn, config=harness.RunConfig(
        model_dir=self.model_dir, save_checkpoints_steps=2,
        keep_checkpoint_max=keep))

  def test_keep_checkpoint_max_holds_across_restarts(self):
    for max_steps in (10, 20, 30):  # Three runs, as in the issue.
      self.estimator().train(_input_fn, max_steps=max_steps)
      self.assertEqual(_steps(self.model_dir), [max_steps - 2, max_steps])
    state = checkpoints.read_state(self.model_dir)
    self.assertEqual([os.path.basename(p) for p in state[1]],
                     ["model.ckpt-28", "model.ckpt-30"])

  def test_older_unlisted_checkpoints_are_not_counted(self):
    # As keep_checkpoint_every_n_hours leaves them: on disk, unlisted.
    self.estimator(keep=10).train(_input_fn, max_steps=4)
    state_path = os.path.join(self.model_dir, "checkpoint")
    with open(state_path) as f:
      text = f.read()
    with open(state_path, "w") as f:
      f.write("\n".join(l for l in text.splitlines()
                        if "model.ckpt-0" not in l))
    self.assertEqual(
        [os.path.basename(p) for p in
         checkpoints.checkpoints_to_recover(self.model_dir)],
        ["model.ckpt-2", "model.ckpt-4"])
    self.estimator().train(_input_fn, max_steps=10)
    self.assertEqual(_steps(self.model_dir), [0, 8, 10])

  def test_state_file_missing_recovers_from_disk(self):
    self.estimator(keep=10).train(_input_fn, max_steps=6)
    os.remove(os.path.join(self.model_dir, "checkpoint"))
    with self.assertLogs(logger="absl", level="WARNING") as logs:
      self.estimator().train(_input_fn, max_steps=8)
    self.assertIn(f"checkpoint | {self.model_dir}: the `checkpoint` state "
                  "file is missing; using model.ckpt-6 (the newest usable "
                  "checkpoint on disk)",
                  "\n".join(logs.output))
    self.assertEqual(_steps(self.model_dir), [6, 8])  # 0, 2, 4: over keep.

  def test_leftovers_older_than_the_run_are_removed(self):
    self.estimator().train(_input_fn, max_steps=2)
    old = [os.path.join(self.model_dir, "model.ckpt-3_temp"),
           os.path.join(self.model_dir, "checkpoint.tmp" + "ab" * 16),
           os.path.join(self.model_dir, ".tmp-training_stopped-0a1b2c")]
    os.makedirs(old[0])
    with open(os.path.join(old[0], "part-00000-of-00001.index"), "w") as f:
      f.write("half")
    for path in old[1:]:
      with open(path, "w") as f:
        f.write("half")
    for path in old:
      _make_old(path)
    fresh = os.path.join(self.model_dir, "model.ckpt-9_temp")
    os.makedirs(fresh)
    os.utime(fresh, (time.time() + 3600,) * 2)  # "Written during this run".
    kept = os.path.join(self.model_dir, "eval_temperature")  # Not a leftover.
    os.makedirs(kept)
    _make_old(kept)
    # Another task's marker write may be in flight: kept for a minute.
    young_marker = os.path.join(self.model_dir, ".tmp-task_done-worker-1-ff")
    with open(young_marker, "w") as f:
      f.write("{}")
    _make_old(young_marker, age_secs=20)
    with self.assertLogs(logger="absl", level="INFO") as logs:
      self.estimator().train(_input_fn, max_steps=4)
    lines = [l for l in logs.output if "cleanup | removed" in l]
    self.assertLen(lines, 3, logs.output)
    for path in old:
      self.assertFalse(os.path.exists(path), path)
      self.assertTrue(any(path + ":" in l for l in lines), (path, lines))
    self.assertIn("left by an interrupted checkpoint save", lines[0])
    self.assertTrue(os.path.isdir(fresh))
    self.assertTrue(os.path.isdir(kept))
    self.assertTrue(os.path.isfile(young_marker))

  def test_parts_of_a_half_deleted_checkpoint_are_removed(self):
    # TF deletes .meta, .index, then the data: a kill after the index
    # leaves data (and maybe .meta) that no Saver lists or deletes.
    self.estimator(keep=10).train(_input_fn, max_steps=4)
    half = os.path.join(self.model_dir, "model.ckpt-2")
    os.remove(half + ".index")
    parts = [half + ".data-00000-of-00001", half + ".meta"]
    # Not the Estimator's checkpoint name: a user's files, kept.
    unrelated = [os.path.join(self.model_dir, n) for n in
                 ("notes.meta", "embeddings-3.data-00000-of-00001")]
    for path in unrelated:
      with open(path, "w") as f:
        f.write("user file")
    for path in parts + unrelated:
      _make_old(path)
    with self.assertLogs(logger="absl", level="INFO") as logs:
      self.estimator(keep=10).train(_input_fn, max_steps=6)
    for path in parts:
      self.assertFalse(os.path.exists(path), path)
      self.assertIn(f"cleanup | removed {path}: left by an interrupted "
                    "checkpoint deletion", "\n".join(logs.output))
    for path in unrelated:
      self.assertTrue(os.path.isfile(path), path)
    self.assertEqual(_steps(self.model_dir), [0, 4, 6])

  def test_export_leftovers_are_removed_before_the_first_export(self):
    base = os.path.join(self.model_dir, "export", "latest")
    stale = os.path.join(base, ".temp-1700000000-12345")
    os.makedirs(os.path.join(stale, "variables"))
    _make_old(stale)
    with self.assertLogs(logger="absl", level="INFO") as logs:
      removed = retention.remove_export_leftovers(base,
                                                  started_at=time.time())
    self.assertEqual(removed, [stale])
    self.assertIn(f"cleanup | removed {stale}: left by an interrupted export",
                  "\n".join(logs.output))
    self.assertEqual(os.listdir(base), [])


def _saves_with_failing_state_write(saver_class, model_dir, **kwargs):
  """Saves steps 1, 2, 3 with `saver_class(max_to_keep=2)`; the third save's
  state-file write fails (what a kill -9 at that moment leaves). Returns
  the steps on disk."""
  with tf.Graph().as_default():
    variable = tf.compat.v1.Variable(1.0)
    saver = saver_class(max_to_keep=2, sharded=True, save_relative_paths=True,
                        **kwargs)
    prefix = os.path.join(model_dir, "model.ckpt")
    with tf.compat.v1.Session() as session:
      session.run(variable.initializer)
      for step in (1, 2):
        saver.save(session, prefix, global_step=step)
      state = os.path.join(model_dir, "checkpoint")
      os.remove(state)
      os.mkdir(state)  # The rename onto it fails.
      with pytest.raises(tf.errors.FailedPreconditionError):
        saver.save(session, prefix, global_step=3)
  return _steps(model_dir)


class RetentionSaverTest(absltest.TestCase):

  def test_tensorflow_saver_leaves_an_unlisted_checkpoint(self):
    # The window RetentionSaver closes: TF unlists step 1, then dies before
    # deleting it.
    self.assertEqual(_saves_with_failing_state_write(
        tf.compat.v1.train.Saver, self.create_tempdir().full_path), [1, 2, 3])

  def test_deletes_before_the_state_file_is_written(self):
    model_dir = self.create_tempdir().full_path
    self.assertEqual(_saves_with_failing_state_write(
        _tf_private.RetentionSaver, model_dir), [2, 3])
    os.rmdir(os.path.join(model_dir, "checkpoint"))
    self.assertEqual(
        [os.path.basename(p) for p in
         checkpoints.checkpoints_to_recover(model_dir)],
        ["model.ckpt-2", "model.ckpt-3"])

  def test_keep_checkpoint_every_n_hours_preserves_as_tensorflow_does(self):
    # 0 hours: every checkpoint over max_to_keep is preserved, by both.
    for saver_class in (tf.compat.v1.train.Saver, _tf_private.RetentionSaver):
      with self.subTest(saver_class.__name__):
        self.assertEqual(_saves_with_failing_state_write(
            saver_class, self.create_tempdir().full_path,
            keep_checkpoint_every_n_hours=0.0), [1, 2, 3])

  def test_estimator_trains_with_it(self):
    savers = []

    class SaverProbe(tf.compat.v1.train.SessionRunHook):

      def begin(self):
        savers.extend(tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.SAVERS))

    estimator = harness.Estimator(_model_fn, config=harness.RunConfig(
        model_dir=self.create_tempdir().full_path, keep_checkpoint_max=1))
    estimator.train(_input_fn, max_steps=2, hooks=[SaverProbe()])
    self.assertLen(savers, 1)
    self.assertIsInstance(savers[0], _tf_private.RetentionSaver)
    self.assertEqual(savers[0].saver_def.max_to_keep, 1)


class StateFileAuthorityTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    harness.Estimator(_model_fn, config=harness.RunConfig(
        model_dir=self.model_dir, save_checkpoints_steps=5,
        keep_checkpoint_max=5)).train(_input_fn, max_steps=10)
    self.state = os.path.join(self.model_dir, "checkpoint")

  def point_state_at(self, name):
    with open(self.state) as f:
      text = f.read()
    with open(self.state, "w") as f:
      f.write(re.sub(r'^model_checkpoint_path: ".*"',
                     f'model_checkpoint_path: "{name}"', text, flags=re.M))

  def test_state_file_names_an_older_checkpoint(self):
    self.point_state_at("model.ckpt-5")
    self.assertEqual(checkpoints.latest_usable_checkpoint(self.model_dir),
                     os.path.join(self.model_dir, "model.ckpt-5"))
    self.assertEqual(tf.train.latest_checkpoint(self.model_dir),
                     os.path.join(self.model_dir, "model.ckpt-5"))

  def test_state_file_names_a_missing_checkpoint(self):
    self.point_state_at("model.ckpt-7")
    with self.assertLogs(logger="absl", level="WARNING") as logs:
      chosen = checkpoints.latest_usable_checkpoint(self.model_dir)
    self.assertEqual(chosen, os.path.join(self.model_dir, "model.ckpt-10"))
    self.assertIn(f"the state file names {self.model_dir}/model.ckpt-7, "
                  "which is unusable", "\n".join(logs.output))

  def test_unreadable_state_file(self):
    with open(self.state, "w") as f:
      f.write("model_checkpoint_path: \"unterminated")
    with self.assertLogs(logger="absl", level="WARNING") as logs:
      chosen = checkpoints.latest_usable_checkpoint(self.model_dir)
    self.assertEqual(chosen, os.path.join(self.model_dir, "model.ckpt-10"))
    self.assertIn("the `checkpoint` state file is unreadable",
                  "\n".join(logs.output))


def _main_command(model_dir, *args):
  return [sys.executable, "-m", "harness.main", "--model_fn=linear",
          "--input_fn=constant", f"--model_dir={model_dir}"] + list(args)


def _run(command, timeout=_TIMEOUT_SECS):
  return _support.run(command, timeout_secs=timeout)


@pytest.mark.slow  # Runs of the binary.
class BinaryLifecycleTest(absltest.TestCase):

  def test_rollback_through_the_state_file(self):
    model_dir = self.create_tempdir().full_path
    process = _run(_main_command(model_dir, "--mode=train", "--max_steps=10",
                                 "--save_checkpoints_steps=5"))
    self.assertEqual(process.returncode, 0, process.description)
    state = os.path.join(model_dir, "checkpoint")
    with open(state) as f:
      text = f.read()
    with open(state, "w") as f:
      f.write(re.sub(r'^model_checkpoint_path: ".*"',
                     'model_checkpoint_path: "model.ckpt-5"', text,
                     flags=re.M))
    process = _run(_main_command(model_dir, "--mode=evaluate"))
    self.assertEqual(process.returncode, 0, process.description)
    self.assertIn("eval results | local | global_step 5", process.stdout)
    process = _run(_main_command(model_dir, "--mode=train", "--max_steps=12",
                                 "--save_checkpoints_steps=5"))
    self.assertEqual(process.returncode, 0, process.description)
    self.assertIn("train | local | starting at step 5", process.stderr)

  def test_kill_9_restart_cycles_keep_two_checkpoints(self):
    model_dir = os.path.join(self.create_tempdir().full_path, "m")
    command = _main_command(
        model_dir, "--mode=train_and_evaluate", "--exporters=latest",
        "--keep_checkpoint_max=2", "--save_checkpoints_steps=10",
        "--eval_steps=2", "--max_steps=100000000")
    rng = random.Random(19)
    log_path = os.path.join(os.path.dirname(model_dir), "cycles.log")
    for cycle in range(8):
      before = (_steps(model_dir) or [-1])[-1]
      if cycle % 3 == 2:  # What a kill in a save / an export leaves.
        planted = [os.path.join(model_dir, f"model.ckpt-{before + 1}_temp"),
                   os.path.join(model_dir, "export", "latest",
                                f".temp-{1700000000 + cycle}-1")]
        for path in planted:
          os.makedirs(path, exist_ok=True)
          _make_old(path)
      with open(log_path, "a") as log:
        process = _processes.popen(
            command, env=conftest.child_env(), cwd=conftest.REPO_ROOT,
            stdout=log, stderr=log, start_new_session=True)
      try:
        _support.wait_for(
            lambda: process.poll() is not None or [
                s for s in _steps(model_dir) if s > before], _TIMEOUT_SECS,
            f"cycle {cycle} to write a checkpoint after step {before} (see "
            f"{log_path})")
        self.assertIsNone(process.poll(), f"cycle {cycle} exited early; "
                          f"see {log_path}")
        # The kill lands at a random moment after that checkpoint (seeded):
        # in a save, an export or between them. The randomness is the test.
        time.sleep(rng.uniform(0.0, 0.3))
      finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    last = _steps(model_dir)[-1]
    process = _run(command[:-1] + [f"--max_steps={last + 20}"])
    self.assertEqual(process.returncode, 0, process.description)
    self.assertLessEqual(len(_steps(model_dir)), 2, os.listdir(model_dir))
    self.assertEqual(_leftovers(model_dir), [])
    self.assertIn("cleanup | removed", process.stderr + open(log_path).read())


if __name__ == "__main__":
  absltest.main()
