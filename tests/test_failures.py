"""Faults and mistakes while a job runs (issue 19, parts 4-7), end to end.

Each case really runs the failing thing through `python -m harness.main` (a
model_fn that never advances the global step, a NaN loss, an input_fn whose
tf.data parser raises, a full tmpfs, a read-only export folder, a peer that
is not a TensorFlow server, Ctrl-C, a legacy tf.estimator module) and checks
what the user sees: the exit status, ONE `harness.main: <Error>: ... Fix:`
line, no traceback, and the fix that applies (a wrong fix fails the test).
The model_fns and input_fns are in tests/programs/failing_fns.py;
docs/ERRORS.md and docs/RELIABILITY.md show the same lines.
"""

import errno
import inspect
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

from absl import logging
from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness import errors
from harness import fields
from harness.cli import job_config
from harness.guard import peer_wait
from harness.guard import stall
from harness.launch import ports
from tests import _processes
from tests import _support
from tests import conftest

_REPO = pathlib.Path(__file__).resolve().parent.parent
_TIMEOUT_SECS = 180
_FAILING = "tests.programs.failing_fns"
_LEGACY = "tests.legacy_programs.my_pkg.model"


def _run(args, *, env=None, timeout=_TIMEOUT_SECS, prefix=()):
  """`python -m harness.main args` from the repo root: (rc, output)."""
  command = list(prefix) + [sys.executable, "-m", "harness.main"] + list(args)
  process = _support.run(command, timeout_secs=timeout,
                         env=conftest.child_env(extra=env))
  return process.returncode, process.output


def _last_line(output):
  return _support.last_error(output)  # A long one is folded over lines.


class _BinaryTestCase(parameterized.TestCase):

  def assert_one_line(self, rc, output, code, *parts, absent=()):
    """Exit `code`, one harness.main line (the last) holding every part."""
    line = _last_line(output)
    details = f"exit {rc}, output tail:\n{output[-3000:]}"
    self.assertEqual(rc, code, details)
    self.assertEqual(output.count("harness.main:"), 1, details)
    self.assertTrue(line.startswith("harness.main: "), details)
    self.assertIn("Fix:", line, details)
    self.assertNotIn("Traceback (most recent call last)", output, details)
    for part in parts:
      self.assertIn(part, line, details)
    for part in absent:
      self.assertNotIn(part, line, details)
    return line


def _privileged_mount_works():
  if shutil.which("unshare") is None or os.geteuid() != 0:
    return False
  probe = subprocess.run(
      ["unshare", "-m", "--propagation", "private", "sh", "-c",
       "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True,
      timeout=30, check=False)
  return probe.returncode == 0


_MOUNT_SKIP = ("needs root and `unshare -m` to mount a private tmpfs (a real "
               "full or read-only file system): run the suite as root with "
               "util-linux installed")


# ------------------------------------------------------ 19.4 no progress


class ProgressWatchTest(absltest.TestCase):

  def test_stops_after_max_runs_without_a_step(self):
    watch = stall.ProgressWatch(max_runs=3, task_label="chief/0")
    watch.start(5)
    watch.observe(5)
    watch.observe(5)
    with self.assertRaises(errors.TrainingStalledError) as raised:
      watch.observe(5)
    self.assertIn("chief/0: the global step stayed at 5 for 3 session.run",
                  str(raised.exception))
    self.assertIn("global_step=tf.compat.v1.train.get_global_step()",
                  str(raised.exception))

  def test_progress_resets_the_count(self):
    watch = stall.ProgressWatch(max_runs=2)
    watch.start(0)
    for step in (0, 1, 1, 2, 2, 3):  # Never 2 runs in a row without a step.
      watch.observe(step)

  def test_none_never_stops_and_zero_is_refused(self):
    watch = stall.ProgressWatch(max_runs=None)
    watch.start(0)
    for _ in range(1000):
      watch.observe(0)
    with self.assertRaisesRegex(errors.ConfigError, "given: 0"):
      stall.ProgressWatch(max_runs=0)

  def test_one_default(self):
    from harness import run_config  # pylint: disable=g-import-not-at-top
    params = inspect.signature(run_config.RunConfig).parameters
    self.assertEqual(params["max_runs_without_progress"].default,
                     fields.default("max_runs_without_progress"))
    self.assertEqual(job_config.JobConfig().max_runs_without_progress,
                     fields.default("max_runs_without_progress"))
    # JobConfig mirrors tf.estimator's RunConfig default (7200 s).
    self.assertEqual(job_config.JobConfig().session_creation_timeout_secs,
                     params["session_creation_timeout_secs"].default)


class NoProgressTest(_BinaryTestCase):

  def _stall(self, *extra):
    return _run([
        f"--model_fn={_FAILING}:minimize_without_global_step",
        f"--input_fn={_FAILING}:make_wide_input_fn", "--mode=train",
        "--max_steps=5", "--log_step_count_steps=1",
        f"--model_dir={self.create_tempdir().full_path}"] + list(extra))

  def test_minimize_without_global_step_stops_with_the_fix(self):
    rc, output = self._stall("--steps_per_loop=1")
    self.assert_one_line(
        rc, output, 1, "harness.main: TrainingStalledError: local: the "
        "global step stayed at 0 for 100 session.run calls",
        "Fix: pass `global_step=tf.compat.v1.train.get_global_step()` to "
        "`optimizer.minimize(...)`")
    progress = re.findall(r"train \| local \| step (\d+)/5", output)
    self.assertLessEqual(len(progress), 1, output[-3000:])  # Never twice.

  def test_limit_is_a_flag(self):
    # One run: the limit is the flag's, counted in session.run calls also
    # when each runs 4 steps (--steps_per_loop=4), and with the same fix.
    rc, output = self._stall("--steps_per_loop=4",
                             "--max_runs_without_progress=7")
    self.assert_one_line(
        rc, output, 1, "harness.main: TrainingStalledError: local: the "
        "global step stayed at 0 for 7 session.run calls",
        "max_runs_without_progress=7",
        "Fix: pass `global_step=tf.compat.v1.train.get_global_step()` to "
        "`optimizer.minimize(...)`")
    progress = re.findall(r"train \| local \| step (\d+)/5", output)
    self.assertLessEqual(len(progress), 1, output[-3000:])  # Never twice.


# ------------------------------------------------ 19.5 one line per failure


class FailureLineTest(_BinaryTestCase):

  def _train(self, model_fn, input_fn, *extra):
    return _run([f"--model_fn={model_fn}", f"--input_fn={input_fn}",
                 "--mode=train", "--max_steps=20",
                 f"--model_dir={self.create_tempdir().full_path}"]
                + list(extra))

  def test_nan_learning_rate(self):
    rc, output = self._train("linear", "constant",
                             "--params=learning_rate=nan")
    self.assert_one_line(
        rc, output, 1, "harness.main: NanLossDuringTrainingError: the loss tensor "
        "'mean_squared_error/value:0' is NaN at global step ",
        "Fix: --params=learning_rate=nan is not a number",
        absent=("writable", "NaN or Inf values in the input"))

  def test_traceback_only_with_debug_verbosity(self):
    rc, output = self._train("linear", "constant",
                             "--params=learning_rate=nan", "--verbosity=debug")
    self.assertEqual(rc, 1, output[-3000:])
    self.assertIn("Traceback (most recent call last)", output)
    self.assertTrue(_last_line(output).startswith(
        "harness.main: NanLossDuringTrainingError: the loss tensor"), output[-3000:])

  def test_nan_labels(self):
    rc, output = self._train("linear", f"{_FAILING}:make_nan_labels_input_fn")
    self.assert_one_line(
        rc, output, 1, "harness.main: NanLossDuringTrainingError: the loss tensor "
        "'mean_squared_error/value:0' is NaN at global step 1",
        "Fix: look for NaN or Inf values in the input's features and labels",
        absent=("learning_rate=nan", "writable"))

  def test_input_fn_raising_inside_tf_data(self):
    rc, output = self._train(
        "linear", f"{_FAILING}:make_raising_py_function_input_fn")
    line = self.assert_one_line(
        rc, output, 1, "harness.main: ValueError: record 0 has 2 columns, "
        "expected 3 (raised in the input_fn's tf.data pipeline at "
        "tests/programs/failing_fns.py:", ", in _parse_record",
        absent=("writable", "Traceback", "ValueError: ValueError"))
    line_number = int(re.search(r"failing_fns\.py:(\d+)", line).group(1))
    source = (_REPO / "tests/programs/failing_fns.py").read_text().splitlines()
    self.assertIn("raise ValueError", source[line_number - 1])

  def test_max_steps_zero_is_a_flag_error(self):
    rc, output = _run(["--model_fn=tests.programs.no_tf_fns:model_fn",
                       "--input_fn=tests.programs.no_tf_fns:make_input_fn",
                       "--max_steps=0"], timeout=60)
    self.assertEqual(rc, 2, output)
    self.assertIn("flag --max_steps=0: must be >= 1. Fix: a global step to "
                  "stop at", output)
    self.assertNotIn("Traceback", output)


class DiskAndPermissionTest(_BinaryTestCase):
  """A real ENOSPC and a real read-only folder, in a private mount."""

  def _in_private_mount(self, script, *args):
    """Runs `sh -c script` in a private mount namespace: (rc, output)."""
    command = ["unshare", "-m", "--propagation", "private", "sh", "-c",
               script, "sh", sys.executable] + list(args)
    process = _support.run(command, timeout_secs=_TIMEOUT_SECS)
    return process.returncode, process.output

  def test_disk_full_names_free_space_and_usable_checkpoint(self):
    if not _privileged_mount_works():
      self.skipTest(_MOUNT_SKIP)
    mount = self.create_tempdir().full_path
    # 700 KiB holds graph.pbtxt (~165 KB), the events file (~180 KB) and
    # the step-0 checkpoint (~260 KB), not the next checkpoint.
    script = (
        f'mount -t tmpfs -o size=700k tmpfs {mount} && "$1" -m harness.main '
        f"--model_fn={_FAILING}:wide_linear "
        f"--input_fn={_FAILING}:make_wide_input_fn --params=width=50000 "
        "--mode=train --max_steps=20 --save_checkpoints_steps=2 "
        f"--keep_checkpoint_max=0 --model_dir={mount}/m; rc=$?; "
        f"echo ---files--- >&2; ls {mount}/m >&2; exit $rc")
    rc, output = self._in_private_mount(script)
    output, _, files = output.partition("---files---")
    self.assert_one_line(
        rc, output, 1, "harness.main: ResourceExhaustedError: No space left "
        f"on device while writing {mount}/m/model.ckpt-2",
        f"The newest usable checkpoint is {mount}/m/model.ckpt-0: the next "
        "run resumes from it.", f"Fix: free space in {mount} (",
        absent=("Hint", "allocated tensors", "writable"))
    self.assertIn("model.ckpt-0.index", files)  # Still there.

  def test_read_only_export_folder(self):
    if not _privileged_mount_works():
      self.skipTest(_MOUNT_SKIP)
    mount = self.create_tempdir().full_path
    export = f"{mount}/m/export"
    script = (
        f"mount -t tmpfs -o size=20m tmpfs {mount} && mkdir -p {export} && "
        f"mount --bind {export} {export} && "
        f"mount -o remount,bind,ro {export} && "
        '"$1" -m harness.main --model_fn=linear --input_fn=constant '
        "--mode=train_and_evaluate --max_steps=4 --eval_steps=1 "
        f"--exporters=latest --model_dir={mount}/m")
    rc, output = self._in_private_mount(script)
    # Probed before training (issue 23): the folder export/latest goes in.
    self.assert_one_line(
        rc, output, 1, f"harness.main: PermissionDeniedError: cannot write "
        f"{export}: Read-only file system.",
        f"Fix: make {export} writable for this user")
    self.assertNotIn("model.ckpt", output)

  def test_read_only_model_dir_is_refused_before_the_run(self):
    if not _privileged_mount_works():
      self.skipTest(_MOUNT_SKIP)
    mount = self.create_tempdir().full_path
    # The refusal is the same for any model: a model_fn module without
    # TensorFlow spares its import.
    script = (f"mount -t tmpfs -o size=1m,ro tmpfs {mount} && "
              '"$1" -m harness.main '
              "--model_fn=tests.programs.no_tf_fns:model_fn "
              "--input_fn=tests.programs.no_tf_fns:make_input_fn "
              f"--mode=train --max_steps=2 --model_dir={mount}/m")
    rc, output = self._in_private_mount(script)
    self.assert_one_line(
        rc, output, 1, f"harness.main: ConfigError: --model_dir={mount}/m "
        f"cannot be created or written: {mount} is not writable by this user "
        "(or is read-only). Fix: pass a --model_dir in a writable folder.")

  def test_enospc_oserror_without_root(self):
    # /dev/full answers every write with a real ENOSPC.
    from harness.cli import diagnose  # pylint: disable=g-import-not-at-top
    from harness._tf import tf  # pylint: disable=g-import-not-at-top,unused-import
    if not os.path.exists("/dev/full"):
      self.skipTest("no /dev/full on this system: run it on Linux")
    try:
      with open("/dev/full", "w", encoding="utf-8") as sink:
        sink.write("x")
    except OSError as e:
      error = e
    else:
      self.fail("/dev/full accepted a write")
    self.assertEqual(error.errno, errno.ENOSPC)
    model_dir = self.create_tempdir().full_path
    label, message = diagnose.explain(error, model_dir)
    self.assertEqual(label, "OSError")
    self.assertTrue(message.startswith(
        "No space left on device. No usable checkpoint was written"), message)
    self.assertIn("Fix: free space in /", message)  # model_dir's mount.
    self.assertNotIn("writable", message)


# ------------------------------------------ 19.6 waiting, SIGINT, max_steps


class PeerProbeTest(absltest.TestCase):

  def test_plain_listener_is_not_a_tensorflow_server(self):
    why = peer_wait.probe(_support.silent_listener(self), timeout_secs=0.5)
    self.assertIn("the port answers but is not a TensorFlow server", why)

  def test_closed_port(self):
    self.assertIn("refused: nothing listens there",
                  peer_wait.probe(f"127.0.0.1:{ports.pick_free_port()}"))

  def test_tensorflow_server_answers(self):
    from harness._tf import tf  # pylint: disable=g-import-not-at-top
    port = ports.pick_free_port()
    server = tf.distribute.Server(
        tf.train.ClusterSpec({"worker": [f"localhost:{port}"]}),
        job_name="worker", task_index=0, start=True)
    del server  # TF servers cannot be stopped; the process ends it.
    self.assertIsNone(peer_wait.probe(f"127.0.0.1:{port}"))

  def _give_up(self, addresses, timeout_secs, check):
    """wait_for_peers on a fake clock until it gives up: (log lines, error)."""
    now = [0.0]

    def sleep(secs):
      now[0] += secs

    with self.assertLogs(level=logging.INFO) as logs:
      with self.assertRaises(errors.PeersNotReadyError) as raised:
        peer_wait.wait_for_peers(
            addresses, task_label="worker/0", timeout_secs=timeout_secs,
            clock=lambda: now[0], sleep=sleep, check=check)
    return logs.output, raised.exception

  def test_logs_every_10_s_and_fails_naming_the_peers(self):
    output, error = self._give_up(
        {"worker/1": "h:1", "worker/2": "h:2"}, 35,
        lambda address: None if address == "h:1" else "down")
    waits = [line for line in output if "waiting for 1 peer(s)" in line]
    self.assertEqual([re.search(r"for (\d+) s \(of", w).group(1)
                      for w in waits], ["0", "10", "20", "30"])
    self.assertIn("worker/2 at h:2 (down)", waits[0])
    self.assertIn("worker/0: gave up after 35 s "
                  "(session_creation_timeout_secs) waiting for 1 peer(s): "
                  "worker/2 at h:2 (down)", str(error))

  def test_several_missing_peers_log_the_first_and_a_count(self):
    output, error = self._give_up({"ps/0": "h:1", "worker/2": "h:2"}, 5,
                                  lambda address: "down")
    self.assertIn("waiting for 2 peer(s) for 0 s (of 5 s): ps/0 at h:1 "
                  "(down) and 1 more", output[0])
    self.assertIn("ps/0 at h:1 (down); worker/2 at h:2 (down)",
                  str(error))  # The error names every one.


@pytest.mark.slow
class WaitForPeersBinaryTest(_BinaryTestCase):

  def test_collective_worker_whose_peer_is_not_tensorflow(self):
    import json  # pylint: disable=g-import-not-at-top
    other = _support.silent_listener(self)
    closed = f"127.0.0.1:{ports.pick_free_port()}"  # Nobody listens.
    tf_config = {"cluster": {"worker": [closed, other]},
                 "task": {"type": "worker", "index": 0}}
    rc, output = _run([
        "--model_fn=linear", "--input_fn=constant", "--mode=train",
        "--max_steps=4", "--strategy=collective",
        "--session_creation_timeout_secs=12",
        f"--model_dir={self.create_tempdir().full_path}"],
                      env={"TF_CONFIG": json.dumps(tf_config)})
    self.assert_one_line(
        rc, output, 1, "harness.main: PeersNotReadyError: worker/0: gave up "
        "after 12 s (session_creation_timeout_secs) waiting for 1 peer(s): "
        f"worker/1 at {other} (the port answers but is not a TensorFlow "
        "server")
    waits = re.findall(r"waiting for 1 peer\(s\) for (\d+) s", output)
    self.assertGreaterEqual(len(waits), 2, output[-3000:])


class InterruptTest(_BinaryTestCase):

  def test_sigint_saves_the_current_step_and_exits_130(self):
    model_dir = self.create_tempdir().full_path
    process = _processes.popen(
        [sys.executable, "-m", "harness.main", "--model_fn=linear",
         "--input_fn=constant", "--mode=train", "--max_steps=1000000",
         "--save_checkpoints_steps=1000000", "--log_step_count_steps=20",
         f"--model_dir={model_dir}"], cwd=_REPO, env=conftest.child_env(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    self.addCleanup(lambda: process.poll() is None and process.kill())
    lines = []
    deadline = time.monotonic() + _TIMEOUT_SECS
    for line in process.stdout:  # Bounded: the process ends or is killed.
      lines.append(line)
      # steps_per_loop=auto logs at its loop boundaries: any step >= 40.
      logged = re.search(r"\| step (\d+)/", line)
      if (logged and int(logged.group(1)) >= 40) or (
          time.monotonic() > deadline):
        break
    process.send_signal(signal.SIGINT)
    try:
      rest, _ = process.communicate(timeout=_TIMEOUT_SECS)
    except subprocess.TimeoutExpired:
      process.kill()
      rest, _ = process.communicate()
    output = "".join(lines) + rest
    line = self.assert_one_line(
        process.returncode, output, 130, "harness.main: "
        "TrainingPreemptedError: local: training was interrupted (SIGINT) "
        "and stopped at step ", ", saved in a checkpoint")
    step = int(re.search(r"stopped at step (\d+)", line).group(1))
    self.assertGreaterEqual(step, 40)
    self.assertTrue(os.path.exists(
        os.path.join(model_dir, f"model.ckpt-{step}.index")), output[-2000:])


# --------------------------------------------------- 19.7 legacy model_fn


class LegacyModelFnTest(_BinaryTestCase):

  def test_binary_runs_a_tf_estimator_module_unchanged(self):
    # One run for two facts: the module's tf.estimator names resolve, and
    # its plain input_fn(mode, params) is taken (issue 39: it was a 30-line
    # TypeError traceback, unexpected keyword argument 'data_dir'); was also
    # test_binary_takes_a_plain_tf_estimator_input_fn's own run.
    model_dir = self.create_tempdir().full_path
    rc, output = _run([
        f"--model_fn={_LEGACY}:model_fn", f"--input_fn={_LEGACY}:input_fn",
        "--mode=train_and_evaluate", "--max_steps=4", "--eval_steps=1",
        f"--model_dir={model_dir}"])
    self.assertEqual(rc, 0, output[-3000:])
    self.assertNotIn("has no attribute 'estimator'", output)
    self.assertIn(f"input | --input_fn={_LEGACY}:input_fn is a tf.estimator "
                  "input_fn(mode, params), not a factory", output)
    self.assertNotIn("Traceback", output)
    self.assertTrue(os.path.exists(os.path.join(model_dir,
                                                "model.ckpt-4.index")))

  @pytest.mark.slow
  def test_tasks_started_by_launch_run_it_too(self):
    model_dir = self.create_tempdir().full_path
    command = [sys.executable, "-m", "harness.launch", "--workers=1",
               "--timeout_secs=240", "--", sys.executable, "-m",
               "harness.main", f"--model_fn={_LEGACY}:model_fn",
               f"--input_fn={_LEGACY}:make_input_fn", "--mode=train",
               "--strategy=collective", "--max_steps=4",
               f"--model_dir={model_dir}"]
    process = _support.run(command, timeout_secs=300)
    output = process.output
    self.assertEqual(process.returncode, 0, output[-3000:])
    self.assertTrue(os.path.exists(os.path.join(model_dir,
                                                "model.ckpt-4.index")),
                    output[-3000:])


if __name__ == "__main__":
  absltest.main()
