"""Tests of `python -m harness.main` and `harness.cli.job.run_job`."""

import io
import json
import os
import sys
import tempfile
import textwrap
from unittest import mock

from absl.testing import absltest
import pytest

from harness.cli import flags
from harness.cli import job as job_lib
from harness.cli import results_text
from harness.state import storage
from tests import _support
from tests import conftest

_TIMEOUT_SECS = 240
_LINEAR = ["--model_fn=linear", "--input_fn=constant"]
# Resolving these imports no TensorFlow: runs that stop before training
# (bad flags, --dry_run) take well under a second.
_NO_TF = ["--model_fn=tests.programs.no_tf_fns:model_fn",
          "--input_fn=tests.programs.no_tf_fns:make_input_fn"]


def _run_main(args, env_extra=None, timeout=_TIMEOUT_SECS):
  """Runs the binary; returns the CompletedProcess (bounded by a timeout)."""
  return _support.run([sys.executable, "-m", "harness.main"] + list(args),
                      timeout_secs=timeout,
                      env=conftest.child_env(extra=env_extra))


class MainBinaryTest(absltest.TestCase):

  def test_help_lists_flags_and_exits_0(self):
    process = _run_main(["--help"])
    self.assertEqual(process.returncode, 0, process.description)
    self.assertIn("--model_fn", process.stdout)
    self.assertIn("--[no]cpu_stand_in", process.stdout)

  def test_bad_flags_exit_2_with_one_message(self):
    process = _run_main(_NO_TF + ["--max_steps=-1", "--strategy=warp"])
    self.assertEqual(process.returncode, 2, process.description)
    self.assertIn("harness.main: 2 problem(s) with the flags", process.stderr)
    self.assertIn("flag --max_steps=-1:", process.stderr)
    self.assertIn("flag --strategy=warp:", process.stderr)
    self.assertNotIn("Traceback", process.stderr)
    self.assertEqual(process.stdout, "")

  @pytest.mark.slow  # Two runs of the binary.
  def test_user_error_exits_1_traceback_only_in_debug(self):
    module_dir = self.create_tempdir()
    module_dir.create_file("returns_none_model.py", textwrap.dedent("""\
        def model_fn(features, labels, mode, params):
          return None
        """))
    args = ["--model_fn=returns_none_model:model_fn", "--input_fn=constant",
            "--max_steps=2", f"--model_dir={self.create_tempdir().full_path}"]
    env = {"PYTHONPATH": module_dir.full_path}
    process = _run_main(args + ["--verbosity=quiet"], env)
    self.assertEqual(process.returncode, 1, process.description)
    self.assertIn("harness.main: ModelFnError: model_fn should return an "
                  "EstimatorSpec", process.stderr)
    self.assertNotIn("Traceback", process.stderr)
    process = _run_main(args + ["--verbosity=debug"], env)
    self.assertEqual(process.returncode, 1, process.description)
    self.assertIn("Traceback", process.stderr)

  def test_dry_run_prints_config_and_role(self):
    model_dir = os.path.join(self.create_tempdir().full_path, "never_made")
    tf_config = json.dumps({
        "cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]},
        "task": {"type": "worker", "index": 1}})
    process = _run_main(
        _NO_TF + ["--dry_run", "--strategy=MultiWorkerMirrored",
                   "--batch_size=8", f"--model_dir={model_dir}"],
        {"TF_CONFIG": tf_config})
    self.assertEqual(process.returncode, 0, process.description)
    self.assertIn("harness.main | worker/1 | train_and_evaluate",
                  process.stdout)
    self.assertIn("worker/1 of cluster {worker: 2} (TF_CONFIG)",
                  process.stdout)
    self.assertIn("collective, 2 replica(s) in sync", process.stdout)
    self.assertIn("global 8, per replica 4", process.stdout)
    self.assertIn("dry run | worker/1 |", process.stdout)
    self.assertFalse(os.path.exists(model_dir))

  @pytest.mark.slow
  def test_short_real_run(self):
    model_dir = self.create_tempdir().full_path
    process = _run_main(_LINEAR + [
        "--max_steps=20", "--eval_steps=2", f"--model_dir={model_dir}",
        "--exporters=latest", "--throttle_secs=0"])
    self.assertEqual(process.returncode, 0, process.description)
    self.assertTrue(os.path.exists(
        os.path.join(model_dir, "model.ckpt-20.index")), process.description)
    self.assertNotEmpty(os.listdir(os.path.join(model_dir, "eval")))
    exports = os.listdir(os.path.join(model_dir, "export", "latest"))
    self.assertLen(exports, 1)
    self.assertTrue(os.path.exists(os.path.join(
        model_dir, "export", "latest", exports[0], "saved_model.pb")))
    out = process.stdout
    self.assertEqual(out.count("harness.main | local |"), 1, out)
    self.assertIn("eval results | local | global_step 20", out)
    self.assertRegex(out, r"\n  loss +\d")
    self.assertIn(f"latest checkpoint:  {model_dir}/model.ckpt-20", out)
    self.assertIn(f"export:             {model_dir}/export/latest/", out)
    self.assertIn(f"tensorboard --logdir {model_dir}", out)
    self.assertIn("train | local | step 20/20", process.stderr)


class RunJobTest(absltest.TestCase):

  def _job(self, *args):
    return flags.parse(["harness.main"] + _LINEAR + list(args),
                       environ={}).job

  def test_dry_run_returns_without_running(self):
    out = io.StringIO()
    result = job_lib.run_job(self._job("--dry_run", "--max_steps=7"),
                             environ={}, out=out)
    self.assertTrue(result.dry_run)
    self.assertEqual(result.task, "local")
    self.assertIn("max_steps", out.getvalue())
    self.assertIn("local (no TF_CONFIG cluster); nothing was run.",
                  out.getvalue())

  def test_train_and_evaluate_then_predict_and_export(self):
    model_dir = self.create_tempdir().full_path
    common = [f"--model_dir={model_dir}", "--params=num_examples=5",
              "--verbosity=quiet"]
    out = io.StringIO()
    result = job_lib.run_job(
        self._job("--max_steps=20", "--eval_steps=2", "--exporters=latest",
                  "--throttle_secs=0", "--save_checkpoints_steps=10",
                  *common), environ={}, out=out)
    self.assertEqual(result.latest_checkpoint,
                     os.path.join(model_dir, "model.ckpt-20"))
    self.assertEqual(result.metrics["global_step"], 20)
    self.assertIn("loss", result.metrics)
    self.assertLen(result.export_paths, 1)
    self.assertTrue(os.path.exists(
        os.path.join(result.export_paths[0], "saved_model.pb")))
    self.assertNotIn("harness.main |", out.getvalue())  # quiet: no banner.
    self.assertIn("eval results | local | global_step 20", out.getvalue())

    result = job_lib.run_job(self._job("--mode=predict", *common),
                             environ={}, out=io.StringIO())
    with open(result.predictions_path, encoding="utf-8") as f:
      rows = [json.loads(line) for line in f]
    self.assertLen(rows, 5)  # One pass over num_examples=5.
    self.assertLen(rows[0]["predictions"], 1)

    result = job_lib.run_job(self._job("--mode=export", *common),
                             environ={}, out=io.StringIO())
    self.assertStartsWith(result.export_paths[0],
                          os.path.join(model_dir, "export", "saved_model"))
    self.assertTrue(os.path.exists(
        os.path.join(result.export_paths[0], "saved_model.pb")))

  def test_metrics_table_is_aligned(self):
    table = results_text.format_metrics(
        {"global_step": 5, "loss": 0.25, "accuracy_top_5": 1.0}, "chief/0")
    self.assertEqual(table.splitlines(), [
        "eval results | chief/0 | global_step 5",
        "  metric          value",
        "  accuracy_top_5  1",
        "  loss            0.25"])


class TemporaryModelDirTest(absltest.TestCase):
  """No --model_dir: the run's /tmp/harness_model_* goes at its end."""

  def setUp(self):
    super().setUp()
    self.temp_root = self.create_tempdir().full_path
    patcher = mock.patch.object(tempfile, "tempdir", self.temp_root)
    patcher.start()
    self.addCleanup(patcher.stop)

  def _run(self, *args):
    out = io.StringIO()
    job = flags.parse(["harness.main"] + _LINEAR + [
        "--max_steps=5", "--eval_steps=1", "--params=num_examples=5",
        *args], environ={}).job
    with self.assertLogs("absl", level="INFO") as logs:
      result = job_lib.run_job(job, environ={}, out=out)
    lines = [r.getMessage() for r in logs.records
             if r.getMessage().startswith("model_dir | ")]
    return result, out.getvalue(), lines

  def test_removed_after_a_successful_run(self):
    result, out, lines = self._run()
    self.assertTrue(storage.is_temporary_model_dir(result.model_dir))
    self.assertStartsWith(result.model_dir, self.temp_root)
    self.assertFalse(os.path.exists(result.model_dir))
    self.assertTrue(result.model_dir_removed)
    self.assertIn(f"model_dir | removed the temporary {result.model_dir} "
                  "(--keep_model_dir keeps it)", lines)
    self.assertIn(f"{result.model_dir} (temporary: removed;", out)
    # TensorFlow's autograph writes the modules it generates to the temp
    # folder too, in whichever test of the process converts first.
    self.assertEqual([n for n in os.listdir(self.temp_root)
                      if not n.startswith("__autograph_generated_file")], [])

  def test_kept_with_keep_model_dir(self):
    result, out, lines = self._run("--keep_model_dir")
    self.assertFalse(result.model_dir_removed)
    self.assertTrue(os.path.exists(result.latest_checkpoint + ".index"))
    self.assertIn(f"model_dir | kept the temporary {result.model_dir} "
                  "(--keep_model_dir)", lines)
    self.assertIn(f"tensorboard --logdir {result.model_dir}", out)

  def test_predictions_are_kept(self):
    result, out, lines = self._run("--mode=predict")
    self.assertFalse(result.model_dir_removed)
    self.assertTrue(os.path.exists(result.predictions_path))
    self.assertIn(f"model_dir | kept the temporary {result.model_dir} "
                  "(it holds the predictions)", lines)
    self.assertIn(f"predictions:        {result.predictions_path}", out)

  def test_given_model_dir_is_never_removed(self):
    model_dir = os.path.join(self.temp_root, "harness_model_mine")
    result, _, lines = self._run(f"--model_dir={model_dir}")
    self.assertFalse(result.model_dir_removed)
    self.assertTrue(os.path.exists(result.latest_checkpoint + ".index"))
    self.assertFalse([l for l in lines if "temporary" in l])

  def test_after_a_failure_only_an_empty_one_goes(self):
    full = storage.temporary_model_dir()
    with open(os.path.join(full, "model.ckpt-3.index"), "w") as f:
      f.write("x")
    empty = storage.temporary_model_dir()
    with self.assertLogs("absl", level="INFO") as logs:
      self.assertFalse(storage.finish_temporary_model_dir(
          full, succeeded=False, keep=None))
      self.assertTrue(storage.finish_temporary_model_dir(
          empty, succeeded=False, keep="--keep_model_dir"))
    self.assertTrue(os.path.exists(full))
    self.assertFalse(os.path.exists(empty))
    self.assertEqual(
        [r.getMessage() for r in logs.records],
        [f"model_dir | kept the temporary {full} (the run did not finish: "
         "its files are there; remove it when done)",
         f"model_dir | removed the empty temporary {empty}"])
    self.assertFalse(storage.is_temporary_model_dir(
        os.path.join(self.create_tempdir().full_path, "harness_model_x")))


if __name__ == "__main__":
  absltest.main()
