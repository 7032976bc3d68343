"""Facts checked on tests/test_docs_commands.py's run of a docs command.

Other test files used to run the same command again to check more of it
(issue 39, item 5: one TensorFlow process start costs ~6 CPU-seconds). Each
fact below is checked on the docs test's one run instead; `FACTS` says which
command it belongs to (a regex searched in the command as written) and
`BEFORE` what runs first (the README's kill-and-run-again of its standalone
client). Each function gets the test case, the finished `_support.
ChildProcess` of the command (bash -c) and the test's temporary folder,
which stands in for the docs' /tmp, and the command's environment.
"""

import json
import os
import re
import shlex

import numpy as np

from tests import _support
from tests import _tensorboard_reads as tb_reads

_URL, _KEPT_PID = tb_reads.URL, tb_reads.KEPT_PID
_scalars, _check_rates = tb_reads.scalars, tb_reads.check_rates
_wait_for_series = tb_reads.wait_for_series
_BEFORE_SECS = 300
_SERVE_SECS = 120


def keras_fit_workers_in_sync(test, child, tmp, env):
  """README: two workers fit in sync under harness.launch (was
  tests/test_keras_fit_launch.py::KerasFitLaunchTest)."""
  del env
  out_dir = os.path.join(tmp, "keras_fit")
  results = {}
  for index in (0, 1):
    path = os.path.join(out_dir, f"worker-{index}.json")
    test.assertTrue(os.path.exists(path), child.describe())
    with open(path) as f:
      results[index] = json.load(f)
  for result in results.values():
    test.assertEqual(result["replicas"], 2, result)  # One per worker.
    # harness.launch's environment carries TF_USE_LEGACY_KERAS=1 (set by
    # harness), so the program's tf.keras is tf_keras (Keras 2).
    test.assertEqual(result["tf_use_legacy_keras"], "1", result)
    test.assertEqual(result["keras"], "tf_keras", result)
    test.assertLess(result["losses"][-1], result["losses"][0] / 4, result)
  # Synchronous training: both workers end with the same weights.
  for mine, theirs in zip(results[0]["weights"], results[1]["weights"]):
    np.testing.assert_allclose(mine, theirs, rtol=1e-6)
  test.assertIn("[worker/1] worker/1: tf_keras 2 replicas", child.output)


def launch_ends_soon_after_the_workers(test, child, tmp, env):
  """Issue 12.B: the evaluator prints its final table at step 200 and the
  launcher ends within 60 s of the workers' last line (the evaluator used
  to sleep throttle_secs=600 first). Was tests/test_readme_launch.py's
  one_cpu_each run; its stand-in run is the README's line above."""
  del tmp, env
  text, detail = child.output, child.describe()
  test.assertIn("[evaluator/0] eval results | evaluator/0 | global_step 200",
                text, detail)
  test.assertRegex(text, r"\[evaluator/0\] .*done: evaluated global_step "
                   r"200 >= max_steps 200", detail)
  worker_times = [t for t, line in zip(child.times, child.lines)
                  if re.match(r"\[worker/\d\] ", line)]
  test.assertTrue(worker_times, detail)
  test.assertIsNotNone(child.ended, detail)
  test.assertLessEqual(child.ended - max(worker_times), 60, detail)
  test.assertIn("launch | exit 0", text, detail)


def launch_serves_the_chiefs_single_stream(test, child, tmp, env):
  """The launcher's one TensorBoard serves the chief's one training stream
  (was tests/test_tensorboard.py::ServerTest::
  test_launch_serves_the_chiefs_single_stream). The kept server is still
  running: the docs test stops it when the case ends."""
  del env
  model_dir, detail = os.path.join(tmp, "tb_cluster"), child.describe()
  urls = _URL.findall(child.output)
  test.assertLen(urls, 1, detail)
  events = [f for f in os.listdir(model_dir) if f.startswith("events.")]
  test.assertLen(events, 1, f"one event stream (the chief's): {events}")
  scalars = _scalars(model_dir)
  # The workers write no stream of their own; the evaluator writes eval/.
  test.assertEqual(set(scalars), {".", "eval"})
  batch = re.search(r"global (\d+), per replica \d+", child.output)
  test.assertIsNotNone(batch, detail)
  # Collective: the global batch is every worker's batch, in sync.
  _check_rates(
      test, scalars["."], global_batch=int(batch.group(1)))
  loss = scalars["."]["loss"]
  test.assertGreaterEqual(len(loss), 2, loss)
  series = _wait_for_series(
      urls[0], ".", "loss", [step for step, _ in loss])
  # What the server answers is what the event files hold.
  test.assertEqual([(int(step), value) for _, step, value in series], loss)


def main_kept_server_serves_the_loss_series(test, child, tmp, env):
  """The server `harness.main --tensorboard --tensorboard_keep` keeps
  serves what the event files hold (was tests/test_tensorboard.py::
  MainRunServerTest::test_main_tensorboard_url_serves_the_loss_series)."""
  del env
  model_dir, detail = os.path.join(tmp, "tb_mlp"), child.describe()
  url = _URL.search(child.output)
  test.assertIsNotNone(url, detail)
  test.assertIsNotNone(_KEPT_PID.search(child.output), detail)
  loss = _scalars(model_dir)["."]["loss"]
  test.assertGreaterEqual(len(loss), 2, loss)
  series = _wait_for_series(
      url.group(1), ".", "loss", [step for step, _ in loss])
  test.assertEqual([(int(step), value) for _, step, value in series], loss)


def printed_command_serves_the_run(test, child, tmp, env):
  """The command the closing summary prints serves the run (was
  tests/test_tensorboard.py::MainRunServerTest::
  test_printed_command_serves_the_run)."""
  model_dir = os.path.join(tmp, "tb_mlp")
  printed = re.search(r"^  tensorboard: +(.+)$", child.output, re.M)
  test.assertIsNotNone(printed, child.describe())
  command = shlex.split(printed.group(1)) + ["--host", "127.0.0.1",
                                             "--port", "0"]
  # The docs' shell: this venv's bin first on PATH, as the run had it.
  server = _support.ChildProcess(command[1:], "printed tensorboard",
                                 env=env, program=command[:1])
  test.addCleanup(server.kill_group)
  served = re.compile(r"at (http://127\.0\.0\.1:\d+)/")
  url = server.wait_for_match(served, _SERVE_SECS)
  test.assertIsNotNone(url, f"{command}: {server.describe()}")
  loss = _scalars(model_dir)["."]["loss"]
  _wait_for_series(
      url.group(1), ".", "loss", [step for step, _ in loss])
  server.terminate_group()


def default_run_lines(test, child, tmp, env):
  """The README's first command: one-line notes, the closing summary (was
  the first run of tests/test_tensorboard.py::DefaultOutputTest)."""
  del tmp, env
  output, detail = child.output, child.describe()
  notes = [l for l in output.splitlines() if "EXCLUDED" in l]
  test.assertLen(notes, 1, detail)
  test.assertIn("signature 'classification' EXCLUDED: needs a tf.string "
                "input, got 'image' float32", notes[0])
  test.assertNotIn("Received:", output)
  test.assertIn("train | local | step 1500/1500", output)
  test.assertRegex(output, r"\n  tensorboard: +\S*tensorboard")


def remote_client_resumes(test, child, tmp, env):
  """README: the client killed and run again resumes; all its lines are
  short (was tests/test_line_length.py::test_remote_client_and_servers)."""
  del tmp, env
  test.assertIn("harness.main | client |", child.output, child.describe())


def kill_the_client_first(test, start, command):
  """README: "Stop the client at any time (Ctrl-C, or kill it) and run the
  same command again": the command runs until it logs a step, is killed,
  and the case then runs it again. Its lines are scanned too."""
  killed = start("killed client")
  step = killed.wait_for_match(re.compile(r"\| step \d+/\d+"), _BEFORE_SECS)
  test.assertIsNotNone(step, killed.describe())
  killed.kill_group()
  killed.wait(30)
  return killed


FACTS = (
    (r"keras_fit\.py", keras_fit_workers_in_sync),
    (r"harness\.main .*--tensorboard --tensorboard_keep",
     main_kept_server_serves_the_loss_series),
    (r"harness\.main .*--tensorboard --tensorboard_keep",
     printed_command_serves_the_run),
    (r"harness\.launch .*--tensorboard_keep",
     launch_ends_soon_after_the_workers),
    (r"harness\.launch .*--tensorboard_keep",
     launch_serves_the_chiefs_single_stream),
    (r"^python3 -m venv .*--model_fn=mnist_cnn", default_run_lines),
    (r"--remote_cluster=\$CLUSTER +--strategy=collective",
     remote_client_resumes),
)
BEFORE = (
    (r"--remote_cluster=\$CLUSTER +--strategy=collective",
     kill_the_client_first),
)
