"""`harness.launch --chief --workers=1 --ps=1 -- harness.main --mode=...` runs
and what a train / evaluate / export run of that cluster must show.

Shared by tests/test_ps_modes.py (no strategy) and tests/test_launch_ps_stop.py
(--strategy=parameter_server: its last restart is the train run).
"""

import glob
import os
import re
import subprocess
import sys
import time

from harness.state import run_state
from tests import conftest

MAX_STEPS = 30
# A run takes ~20 s on 2 idle cores; these only bound a hang.
TIMEOUT_SECS = 240
MODEL = ["--model_fn=mnist_mlp", "--input_fn=synthetic", "--eval_steps=2"]
PS_STRATEGY = ["--strategy=parameter_server"]


def launch(model_dir, mode, strategy_flags, *, evaluator=False,
           max_steps=MAX_STEPS):
  """Runs the launch command in `mode`: a dict of its exit code, output,
  failure detail, max_steps and start time."""
  command = [
      sys.executable, "-m", "harness.launch", "--chief", "--workers=1",
      "--ps=1", f"--timeout_secs={TIMEOUT_SECS}"] + (
          ["--evaluator"] if evaluator else []) + [
              "--", sys.executable, "-m", "harness.main",
              f"--model_dir={model_dir}", f"--mode={mode}",
              *strategy_flags, *MODEL, f"--max_steps={max_steps}"]
  started_at = time.time()
  result = subprocess.run(command, env=conftest.child_env(),
                          cwd=conftest.REPO_ROOT, capture_output=True,
                          text=True, timeout=TIMEOUT_SECS + 60, check=False)
  output = result.stdout + result.stderr
  return dict(code=result.returncode, output=output, max_steps=max_steps,
              started_at=started_at, model_dir=model_dir, detail=(
                  f"{' '.join(command)}\nexit {result.returncode}\n"
                  f"{output[-6000:]}"))


def checkpoint_step(test, model_dir, detail):
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  latest = tf.train.latest_checkpoint(model_dir)
  test.assertIsNotNone(latest, detail)
  return int(tf.train.load_variable(latest, "global_step"))


def assert_ended_with_0(test, output, detail, tasks):
  test.assertIn("launch | exit 0", output, detail)
  for task in tasks:
    test.assertIn(f"launch | {task} exited with 0", output, detail)


def assert_one_process_job(test, run, mode):
  """The chief did `mode`; the worker exited at once (launch may stop the ps
  first: `test_every_task_exits_by_itself` waits for each task instead)."""
  output, detail = run["output"], run["detail"]
  test.assertEqual(run["code"], 0, detail)
  assert_ended_with_0(test, output, detail, ("chief/0", "worker/0"))
  test.assertIn(f"{mode} | chief/0 | --mode={mode} is a one-process job: it "
                "runs here, in-process, as a local job", output, detail)
  test.assertIn(f"{mode} | worker/0 | --mode={mode} is a one-process job run "
                "by chief/0: this task has nothing to do and exits", output,
                detail)


def assert_trained(test, run):
  """The train run ended 0 at its max_steps, the ps serving until the
  trainers were done; returns the checkpoint's step."""
  output, detail, model_dir = run["output"], run["detail"], run["model_dir"]
  test.assertEqual(run["code"], 0, detail)
  assert_ended_with_0(test, output, detail, ("chief/0", "worker/0"))
  test.assertIn("ps | ps/0 | serving until chief/0, worker/0 finish",
                output, detail)
  # A ps serves variables: no model/batch banner rows, no checkpoint it
  # never wrote in its closing lines.
  test.assertIn("[ps/0] harness.main | ps/0 | serves variables", output,
                detail)
  for row in ("model_fn:", "batch:", "latest checkpoint:"):
    test.assertNotRegex(output, rf"\[ps/0\] +{row}", detail)
  # Asynchronous trainers: each may have one step in flight at the end.
  step = checkpoint_step(test, model_dir, detail)
  test.assertBetween(step, run["max_steps"], run["max_steps"] + 2)
  test.assertRegex(output, r"train \| chief/0 \| training finished at "
                   rf"step {step}\b", detail)
  # Both left their loop, in this run.
  test.assertEqual(run_state.tasks_done_since(
      model_dir, ("chief/0", "worker/0"), run["started_at"]),
                   {"chief/0", "worker/0"}, detail)
  return step


def assert_evaluated(test, run, step):
  """The same cluster shape evaluated the checkpoint at `step`: a
  one-process job, done by the chief alone (in process); the worker and the
  ps exit by themselves."""
  output, detail = run["output"], run["detail"]
  assert_one_process_job(test, run, "evaluate")
  test.assertIn(f"[chief/0] eval results | chief/0 | global_step {step}",
                output, detail)
  test.assertLen(re.findall(r"\beval \| \S+ \| step \d+", output), 1,
                 detail)
  test.assertNotIn("eval results | worker/0", output, detail)


def assert_evaluator_exited_in_train_mode(test, run):
  output, detail = run["output"], run["detail"]
  test.assertEqual(run["code"], 0, detail)
  assert_ended_with_0(test, output, detail,
                      ("chief/0", "worker/0", "evaluator/0"))
  test.assertIn("train | evaluator/0 | --mode=train evaluates nothing",
                output, detail)
  # The evaluator neither trained nor took the trainers' lease.
  test.assertNotIn("train | evaluator/0 | starting at step", output, detail)
  test.assertNotIn("lease | evaluator/0", output, detail)
  test.assertBetween(checkpoint_step(test, run["model_dir"], detail),
                     run["max_steps"], run["max_steps"] + 2)


def assert_exported(test, run):
  """The chief exported in process: one SavedModel."""
  assert_one_process_job(test, run, "export")
  exports = glob.glob(os.path.join(run["model_dir"], "export", "saved_model",
                                   "*", "saved_model.pb"))
  test.assertLen(exports, 1, run["detail"])
