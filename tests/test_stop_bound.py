"""Every run stoppable: a trainer blocked inside its first step (a hung
input generator) still ends on SIGTERM within --stop_timeout_secs, at once on
a second signal, and after --input_timeout_secs when set; each with one line.

Unit tests drive `first_batch.FirstBatchHook` with a fake clock; the slow
tests run the real `python -m harness.main`.
"""

import signal
import threading
import time

from absl.testing import absltest
import pytest

from harness import errors
from harness import estimator as estimator_lib
from harness import spec as spec_lib
from harness._tf import tf
from harness.guard import first_batch
from tests import _support

_FAILING = "tests.programs.failing_fns"
_START_SECS = 240  # TF start-up plus the first 10 s report, loaded machine.
_EXIT_SLACK_SECS = 20  # A loaded machine's delay to deliver and exit.
# The bounds are checked as a ratio of the configured timeout: a stop must
# come after at least _EARLY and before _LATE times it, so a timer even twice
# as long as configured fails (the configured values leave a loaded machine
# at least 10 s to deliver the signal and exit).
_STOP_TIMEOUT_SECS = 10
_INPUT_TIMEOUT_SECS = 20
_EARLY, _LATE = 0.9, 2.0


class FirstBatchHookTest(absltest.TestCase):

  def test_reports_then_times_out(self):
    lines = []
    hook = first_batch.FirstBatchHook(task_label="local", timeout_secs=0.3,
                                      report_secs=0.1,
                                      on_timeout=lines.append)
    with self.assertLogs(level="INFO") as logs:
      hook.before_run(None)
      hook._thread.join(timeout=30)  # pylint: disable=protected-access
    self.assertIn("waiting for the first batch ...", "\n".join(logs.output))
    self.assertLen(lines, 1)
    self.assertIn("no first batch after", lines[0])
    self.assertIn("s (input_timeout_secs=0.3): the first session.run",
                  lines[0])

  def test_first_run_returning_ends_the_bound_and_end_the_watch(self):
    lines = []
    hook = first_batch.FirstBatchHook(timeout_secs=0.5, report_secs=0.1,
                                      on_timeout=lines.append)
    hook.before_run(None)
    hook.after_run(None, None)
    time.sleep(0.8)  # Past the first batch's bound: it no longer applies.
    hook.end(None)
    hook._thread.join(timeout=30)  # pylint: disable=protected-access
    self.assertEqual(lines, [])
    self.assertFalse(hook._thread.is_alive())  # pylint: disable=protected-access

  def test_a_later_step_that_hangs_is_reported(self):
    # Issue 37: a step hung after the first batch printed nothing for 90 s.
    hook = first_batch.FirstBatchHook(timeout_secs=0.3, report_secs=0.1,
                                      on_timeout=self.fail)
    with self.assertLogs(level="INFO") as logs:
      hook.before_run(None)
      hook.after_run(None, None)
      hook.before_run(None)  # The second session.run never returns.
      _support.wait_for(
          lambda: "waiting for a training step ..." in "\n".join(logs.output),
          30, "the waiting line")
      hook.stop()
    text = "\n".join(logs.output)
    self.assertIn("(session.run 2 has not returned: a stalled input or a "
                  "slow step?)", text)
    self.assertNotIn("waiting for the first batch", text)

  def test_a_first_run_that_raises_ends_the_watch(self):
    # The first batch fails: neither after_run nor end comes, so the loop
    # itself must stop the watch (else "waiting for the first batch" lines
    # went on after train() had raised).
    def input_fn():
      def fail(x):
        return tf.numpy_function(_raise, [x], tf.float32)
      features = tf.data.Dataset.from_tensors(1.0).map(fail).repeat()
      return features.map(lambda x: ({"x": tf.reshape(x, [1, 1])},
                                     tf.constant([[0.0]])))

    estimator = estimator_lib.Estimator(
        _linear_model_fn, model_dir=self.create_tempdir().full_path)
    with self.assertRaises(tf.errors.InvalidArgumentError):
      estimator.train(input_fn, max_steps=3)
    deadline = time.monotonic() + 30
    while _watchers() and time.monotonic() < deadline:
      time.sleep(0.05)
    self.assertEqual(_watchers(), [])


def _raise(x):
  raise ValueError(f"no batch from {x}")


def _linear_model_fn(features, labels, mode):
  logits = tf.compat.v1.layers.dense(features["x"], 1)
  loss = tf.reduce_mean(tf.square(logits - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_or_create_global_step())
  return spec_lib.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _watchers():
  return [t for t in threading.enumerate()
          if t.name == "harness-first-batch" and t.is_alive()]


def _hung_trainer(test, *extra):
  model_dir = test.create_tempdir().full_path
  child = _support.ChildProcess(
      ["-m", "harness.main", "--model_fn=linear",
       f"--input_fn={_FAILING}:make_hung_input_fn", "--mode=train",
       "--max_steps=20", f"--model_dir={model_dir}", *extra],
      "hung trainer")
  test.addCleanup(child.kill_group)
  return child


def _error_lines(child, text):
  return [line for line in child.lines if text in line]


@pytest.mark.slow
class HungInputTest(absltest.TestCase):

  def test_sigterm_exits_within_the_stop_bound_with_one_line(self):
    bound = _STOP_TIMEOUT_SECS
    child = _hung_trainer(self, f"--stop_timeout_secs={bound}")
    self.assertTrue(child.wait_for_text("waiting for the first batch ...",
                                        _START_SECS), child.describe())
    code, secs = child.stop(signal.SIGTERM, _LATE * bound)
    self.assertEqual(code, errors.EXIT_PREEMPTED, child.describe())
    self.assertLess(secs, _LATE * bound, child.describe())
    self.assertGreaterEqual(secs, _EARLY * bound, child.describe())
    lines = _error_lines(child, f"no step ended within {bound} s")
    self.assertLen(lines, 1, child.describe())
    self.assertIn(f"SIGTERM: no step ended within {bound} s "
                  "(--stop_timeout_secs); blocked in the first training step",
                  lines[0])
    self.assertNotIn("Traceback", child.output, child.describe())

  def test_second_signal_exits_at_once_with_one_line(self):
    child = _hung_trainer(self, "--stop_timeout_secs=600")
    self.assertTrue(child.wait_for_text("waiting for the first batch ...",
                                        _START_SECS), child.describe())
    child.proc.send_signal(signal.SIGINT)
    self.assertTrue(child.wait_for_text("SIGINT: stopping after the current "
                                        "step", _EXIT_SLACK_SECS),
                    child.describe())
    code, secs = child.stop(signal.SIGINT, _EXIT_SLACK_SECS)
    self.assertEqual(code, errors.EXIT_INTERRUPTED, child.describe())
    self.assertLess(secs, _EXIT_SLACK_SECS, child.describe())
    lines = _error_lines(child, "SIGINT again: exiting now")
    self.assertLen(lines, 1, child.describe())
    self.assertIn("blocked in the first training step", lines[0])

  def test_input_timeout_fails_with_one_line(self):
    bound = _INPUT_TIMEOUT_SECS
    child = _hung_trainer(self, f"--input_timeout_secs={bound}")
    # The first wait line comes first_batch.REPORT_SECS after the first
    # session.run began; the timeout fires `bound` s after that start.
    self.assertTrue(child.wait_for_text("waiting for the first batch ...",
                                        _START_SECS), child.describe())
    seen = time.monotonic()
    code = child.wait(_LATE * bound)
    # At most the true seconds since the first session.run (seen late).
    secs = time.monotonic() - seen + first_batch.REPORT_SECS
    self.assertEqual(code, 1, child.describe())
    self.assertLess(secs, _LATE * bound, child.describe())
    lines = _error_lines(child, "no first batch after")
    self.assertLen(lines, 1, child.describe())
    self.assertIn(f"(input_timeout_secs={bound}): the first session.run",
                  lines[0])
    self.assertIn("Fix:", lines[0])
    reported = int(lines[0].split("no first batch after ")[1].split(" s")[0])
    self.assertBetween(reported, bound, _LATE * bound)


if __name__ == "__main__":
  absltest.main()
