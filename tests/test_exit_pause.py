"""The job's end: no silent pause after the final export (issue 39).

After the final export, `python -m harness.main` used to stay silent for
seconds to a minute, in two waits:
- the training session's close, which waits for its input pipeline's
  element in flight (a shuffle buffer refilling) and, in a cluster, for
  its work with the peers: now said before and after when it takes over
  `peers.NOTICE_SECS`, and bounded by --peer_timeout_secs in a cluster
  (tests/programs/slow_close_fns.py holds an element in flight);
- interpreter shutdown's full garbage collections over TensorFlow's modules
  and the job's graphs: the binary freezes that heap out of them
  (`harness.main._main_then_exit`); an atexit handler that runs last
  (tests/programs/exit_heap.py) reads how much shutdown is left to walk.
"""

import os
import sys
import time

from absl.testing import absltest
import pytest

from tests import _support
from tests import conftest

_PROGRAM = os.path.join(os.path.dirname(__file__), "programs", "exit_heap.py")
_TIMEOUT_SECS = 240
_SLOW_CLOSE = ["--model_fn=tests.programs.slow_close_fns:model_fn",
               "--input_fn=tests.programs.slow_close_fns:make_input_fn",
               "--mode=train", "--max_steps=3"]
# A cluster task's close, held for _HELD_SECS, ends at --peer_timeout_secs.
_PEER_TIMEOUT_SECS = 10
_HELD_SECS = 100
# A task exits within this many bounds of its last step (it was _HELD_SECS).
_EXIT_BOUNDS = 2
# Shutdown walks at most this share of the objects the process tracks; the
# rest (TensorFlow, the graphs) is frozen. Without the freeze it walks all.
_MAX_WALKED_SHARE = 0.1


class ExitPauseTest(absltest.TestCase):

  @pytest.mark.slow  # One run of the binary.
  def test_shutdown_is_left_no_heap_to_walk_after_the_export(self):
    model_dir = self.create_tempdir().full_path
    start = time.monotonic()
    process = _support.run(
        [sys.executable, _PROGRAM, "--model_fn=linear", "--input_fn=constant",
         "--max_steps=5", "--eval_steps=1", "--exporters=final",
         f"--model_dir={model_dir}"], timeout_secs=_TIMEOUT_SECS)
    description = (f"{process.description}\nrun took "
                   f"{time.monotonic() - start:.1f} s")
    self.assertEqual(process.returncode, 0, description)
    self.assertIn("export: ", process.stdout, description)
    report = _support.printed_literal(process.stdout, "exit_heap")
    tracked = report["walked"] + report["frozen"]
    self.assertLess(report["walked"], _MAX_WALKED_SHARE * tracked,
                    f"shutdown is left {report} to walk\n{description}")


  @pytest.mark.slow  # One run of the binary.
  def test_a_slow_session_close_is_said_before_and_after(self):
    model_dir = self.create_tempdir().full_path
    process = _support.run(
        [sys.executable, "-m", "harness.main", *_SLOW_CLOSE,
         f"--model_dir={model_dir}"], timeout_secs=_TIMEOUT_SECS)
    self.assertEqual(process.returncode, 0, process.description)
    lines = process.output.splitlines()
    order = [_index(lines, text) for text in (
        "train | local | step 3/3",
        "train | local | closing the session: waits for its input pipeline "
        "(no bound)",
        "train | local | session closed after ",
        "lease | local | released")]
    self.assertEqual(order, sorted(order), process.description)
    self.assertNotIn(-1, order, process.description)

  @pytest.mark.slow  # A cluster of two workers.
  def test_a_cluster_task_ends_at_its_bound_while_the_close_waits(self):
    model_dir = self.create_tempdir().full_path
    # The tasks' own temporary folder: a cluster task leaves with os._exit,
    # which runs no atexit handler, so the binary removes AutoGraph's source
    # files itself (the collective strategy converts the model_fn's call).
    temp = self.create_tempdir().full_path
    command = [
        sys.executable, "-m", "harness.launch", "--workers=2", "--",
        sys.executable, "-m", "harness.main", *_SLOW_CLOSE,
        "--strategy=collective", f"--model_dir={model_dir}",
        f"--peer_timeout_secs={_PEER_TIMEOUT_SECS}",
        f"--params={{\"hold_secs\": {_HELD_SECS}}}"]
    code, lines, _ = _support.run_timed(
        command, timeout_secs=_TIMEOUT_SECS,
        env=dict(conftest.child_env(), TMPDIR=temp))
    description = f"command: {command}\nexit: {code}\n" + "\n".join(
        f"{t:8.1f} {line}" for t, line in lines[-60:])
    self.assertEqual(code, 0, description)
    self.assertEqual(sorted(os.listdir(temp)), [], description)
    for task in ("worker/0", "worker/1"):
      said = [_time_of(lines, text) for text in (
          f"train | {task} | step 3/3",
          f"train | {task} | closing the session: waits for its input "
          f"pipeline and peers (at most {_PEER_TIMEOUT_SECS} s, "
          "--peer_timeout_secs)",
          f"train | {task} | the session did not close in "
          f"{_PEER_TIMEOUT_SECS} s",
          f"launch | {task} exited with 0")]
      self.assertNotIn(None, said, f"{task}: {said}\n{description}")
      self.assertEqual(said, sorted(said), f"{task}\n{description}")
      last_step, exited = said[0], said[-1]
      self.assertLess(exited - last_step, _EXIT_BOUNDS * _PEER_TIMEOUT_SECS,
                      f"{task} exited {exited - last_step:.1f} s after its "
                      f"last step\n{description}")


def _index(lines, text):
  """The index of the first line containing `text`, or -1."""
  return next((i for i, line in enumerate(lines) if text in line), -1)


def _time_of(timed_lines, text):
  """The arrival time of the first line containing `text`; None if none."""
  return next((t for t, line in timed_lines if text in line), None)


if __name__ == "__main__":
  absltest.main()
