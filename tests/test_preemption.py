"""harness.guard.preemption: SIGTERM -> a checkpoint at this step; lost peers.

Fast tests train real (tiny) Estimators in this process and signal it;
slow tests run whole clusters through harness.launch.
"""

import json
import os
import signal
import threading
import time
from unittest import mock

from absl import logging
from absl.testing import absltest
import pytest

import harness
from harness import errors
from harness import run_config as run_config_lib
from harness._tf import tf
from harness.cluster import env_knobs
from harness.distribute import evaluator as evaluator_lib
from harness.guard import preemption
from harness.guard import stop_signal
from harness.launch import ports
from harness.state import run_state
from tests import _support
from tests.programs import launch_watch as watch

_input_fn = _support.constant_input_fn


class _AtStep(tf.compat.v1.train.SessionRunHook):
  """Calls `action` once after this run's `step`-th step."""

  def __init__(self, step, action):
    self._step = step
    self._action = action
    self._done = 0

  def after_run(self, run_context, run_values):
    self._done += 1
    if self._done == self._step:
      self._action()


def _sigterm_self():
  os.kill(os.getpid(), signal.SIGTERM)


class LocalPreemptionTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    # Checkpoints only at the start and on exit: the one at the stop step
    # can only come from the final save.
    self.est = _support.linear_estimator(self.model_dir, 1000)

  def test_sigterm_saves_at_the_current_step_and_resume_continues(self):
    before = signal.getsignal(signal.SIGTERM)
    with self.assertRaises(errors.TrainingPreemptedError) as ctx:
      self.est.train(_input_fn, max_steps=100,
                     hooks=[_AtStep(7, _sigterm_self)])
    self.assertIn("stopped at step 7", str(ctx.exception))
    self.assertIsInstance(ctx.exception, errors.HarnessError)
    self.assertEqual(_support.checkpoint_step(self.model_dir), 7)
    self.assertIs(signal.getsignal(signal.SIGTERM), before)
    with self.assertLogs(level=logging.INFO) as logs:
      self.est.train(_input_fn, max_steps=12)
    self.assertIn("starting at step 7", "\n".join(logs.output))
    self.assertEqual(_support.checkpoint_step(self.model_dir), 12)

  def test_sigterm_swallowed_while_the_session_was_made_stops_at_step_1(self):
    # harness.main's handler raises Terminated outside a training loop;
    # raised inside TensorFlow's C++ (creating the session) it can be
    # swallowed there, and training then went on to max_steps (exit 0).
    self.addCleanup(setattr, stop_signal.STOP_SIGNAL, "terminated_in", None)
    stop_signal.STOP_SIGNAL.terminated_in = "creating the training session"
    with self.assertLogs(level=logging.WARNING) as logs:
      with self.assertRaises(errors.TrainingPreemptedError) as ctx:
        self.est.train(_input_fn, max_steps=100)
    self.assertIn("stopped at step 1,", str(ctx.exception))
    self.assertEqual(_support.checkpoint_step(self.model_dir), 1)
    self.assertIn("SIGTERM came while creating the training session",
                  "\n".join(logs.output))
    self.assertIsNone(stop_signal.STOP_SIGNAL.terminated_in)

  def test_notify_preemption_from_another_thread(self):
    notifier = lambda: threading.Thread(
        target=stop_signal.notify_preemption).start()
    with self.assertRaises(errors.TrainingPreemptedError):
      self.est.train(_input_fn, max_steps=100, hooks=[_AtStep(3, notifier)])
    self.assertBetween(_support.checkpoint_step(self.model_dir), 3, 5)

  def test_sigterm_after_training_goes_to_the_previous_handler(self):
    calls = []
    previous = signal.signal(signal.SIGTERM,
                             lambda signum, frame: calls.append(signum))
    try:
      self.est.train(_input_fn, max_steps=3)
      _sigterm_self()
      self.assertEqual(calls, [signal.SIGTERM])
    finally:
      signal.signal(signal.SIGTERM, previous)

  def test_hook_raising_at_session_creation_restores_the_handler(self):
    """A hook that raises in after_create_session (MonitoredSession then has
    no session to close) must not leave harness's SIGTERM handler behind."""

    class Raises(tf.compat.v1.train.SessionRunHook):

      def after_create_session(self, session, coord):
        raise RuntimeError("hook failed at session creation")

    calls = []
    previous = signal.signal(signal.SIGTERM,
                             lambda signum, frame: calls.append(signum))
    try:
      with self.assertRaisesRegex(RuntimeError, "at session creation"):
        self.est.train(_input_fn, max_steps=3, hooks=[Raises()])
      _sigterm_self()
      self.assertEqual(calls, [signal.SIGTERM])
      self.est.train(_input_fn, max_steps=3)  # Not "preempted".
      self.assertEqual(self.est.get_variable_value("global_step"), 3)
    finally:
      signal.signal(signal.SIGTERM, previous)



def _peer_timeout(environ):
  """RunConfig's peer_timeout_secs under `environ` (read at construction)."""
  with mock.patch.dict(os.environ, environ, clear=True):
    return run_config_lib.RunConfig().peer_timeout_secs


class KnobsTest(absltest.TestCase):

  def test_peer_timeout_default_and_env(self):
    self.assertEqual(_peer_timeout({}), env_knobs.PEER_TIMEOUT.default)
    self.assertEqual(_peer_timeout({env_knobs.PEER_TIMEOUT.env: "7.5"}), 7.5)

  def test_bad_peer_timeout_names_the_variable(self):
    for bad in ("0", "-3", "soon"):
      with self.assertRaisesRegex(errors.ConfigError,
                                  "HARNESS_PEER_TIMEOUT_SECS"):
        _peer_timeout({env_knobs.PEER_TIMEOUT.env: bad})

  def test_fail_fast_rpcs_keeps_a_user_value(self):
    environ = {}
    preemption.fail_fast_rpcs(environ)
    self.assertEqual(environ["GRPC_FAIL_FAST"], "true")
    environ = {"GRPC_FAIL_FAST": "use_caller"}
    preemption.fail_fast_rpcs(environ)
    self.assertEqual(environ["GRPC_FAIL_FAST"], "use_caller")
    environ = {"GRPC_FAIL_FAST": ""}  # Empty makes TensorFlow abort.
    preemption.fail_fast_rpcs(environ)
    self.assertEqual(environ["GRPC_FAIL_FAST"], "true")

  def test_resumable_reasons(self):
    self.assertTrue(preemption.resumable_reason("preempted"))
    self.assertTrue(preemption.resumable_reason("failed: PeerLostError: x"))
    for final in ("finished", "early_stopping", "interrupted", None):
      self.assertFalse(preemption.resumable_reason(final))


class GuardTest(absltest.TestCase):
  """Lost-peer errors of a multi-task session, on real sockets and files."""

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    alive = _support.silent_listener(self)
    self.dead = f"127.0.0.1:{ports.pick_free_port()}"  # Nobody listens.
    self.cluster = {"worker": [alive, alive, self.dead]}

  def _guard(self, **kwargs):
    kwargs.setdefault("sleep", lambda secs: None)
    # The "alive" peers are plain TCP listeners, not TensorFlow servers.
    kwargs.setdefault("probe_peer", lambda address: None)
    return preemption.TrainingGuard(
        task_label="worker/0", is_chief=True, model_dir=self.model_dir,
        cluster=self.cluster, peer_timeout_secs=5, **kwargs)

  def test_unavailable_names_the_silent_peer(self):
    guard = self._guard(collective=True)
    error = tf.errors.UnavailableError(None, None, "Socket closed")
    with self.assertRaises(errors.PeerLostError) as ctx:
      guard.raise_for(error)
    message = str(ctx.exception)
    self.assertIn("lost peer worker/2", message)
    self.assertIn("(port silent)", message)
    self.assertIn("docs/ERRORS.md#lost-peer", message)
    self.assertLessEqual(len("harness.main: PeerLostError: " + message), 160)

  def test_peer_named_in_the_error_text(self):
    alive = self.cluster["worker"][0]
    self.cluster = {"ps": [self.dead], "worker": [alive, alive]}
    guard = self._guard()
    error = tf.errors.UnavailableError(
        None, None, "From /job:ps/replica:0/task:0: connection refused")
    with self.assertRaisesRegex(errors.PeerLostError, "lost peer ps/0 "):
      guard.raise_for(error)

  def test_unrelated_errors_pass(self):
    guard = self._guard(collective=True)
    guard.raise_for(tf.errors.InternalError(None, None, "out of memory"))

  def test_single_task_is_not_converted(self):
    guard = preemption.TrainingGuard(task_label="local", is_chief=True)
    guard.raise_for(tf.errors.UnavailableError(None, None, "x"))

  def test_peer_whose_loop_ended_ends_this_loop_too(self):
    guard = self._guard(collective=True)
    guard.opened()
    self.addCleanup(guard.closed)
    run_state.write_loop_ended(self.model_dir, "worker/1")
    with self.assertRaises(tf.errors.OutOfRangeError):
      guard.raise_for(tf.errors.DeadlineExceededError(None, None, "late"))

  def test_restarted_task_waits_for_its_peers_to_restart(self):
    self.cluster = {"worker": self.cluster["worker"][:2]}
    for label in ("worker/0", "worker/1"):  # The first generation.
      run_state.write_task_started(self.model_dir, label)
    for label in ("worker/0", "worker/1"):  # Its group formed.
      run_state.write_task_opened(self.model_dir, label)
    formed = max(record["opened_at"] for record in run_state.task_records(
        self.model_dir, ["worker/0", "worker/1"]).values())
    # A restart is a start record written after the group formed.
    _support.wait_for(lambda: time.time() > formed, 5,
                      "the clock to pass the group's opened_at")
    slept = []

    def sleep(secs):  # The peer restarts while this task waits.
      slept.append(secs)
      run_state.write_task_started(self.model_dir, "worker/1")

    with self.assertLogs(level=logging.INFO) as logs:
      self._guard(collective=True, sleep=sleep).before_session()
    self.assertLen(slept, 1)
    self.assertIn("waiting (up to 75 s) for worker/1 to start: a collective "
                  "group forms from tasks started after the last one formed "
                  "(", "\n".join(logs.output))
    self.assertNotIn("restart", "\n".join(logs.output))
    self.assertIn("every peer started since the last group formed: joining",
                  "\n".join(logs.output))


class EvaluatorWaitsForResumeTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    self.est = _support.linear_estimator(self.model_dir, 5)

  def _run(self, max_steps):
    return evaluator_lib.run_continuous(
        self.est, harness.TrainSpec(_input_fn, max_steps=max_steps),
        harness.EvalSpec(_input_fn, steps=1, start_delay_secs=0,
                         throttle_secs=0), sleep=lambda secs: None)

  def test_preempted_marker_does_not_end_evaluation(self):
    self.est.train(_input_fn, max_steps=5)
    run_state.write_training_stopped(self.model_dir, "preempted", 5)
    sleeps = []

    def sleep(secs):  # While the evaluator waits, the chief comes back.
      sleeps.append(secs)
      if len(sleeps) == 2:
        run_state.clear_training_stopped(self.model_dir)
        self.est.train(_input_fn, max_steps=10)

    metrics, _ = evaluator_lib.run_continuous(
        self.est, harness.TrainSpec(_input_fn, max_steps=10),
        harness.EvalSpec(_input_fn, steps=1, start_delay_secs=0,
                         throttle_secs=0), sleep=sleep)
    self.assertGreaterEqual(len(sleeps), 2)
    self.assertEqual(metrics["global_step"], 10)

  def test_chief_that_never_comes_back_is_reported(self):
    self.est.train(_input_fn, max_steps=5)
    with open(os.path.join(self.model_dir, run_state.MARKER_NAME), "w") as f:
      json.dump({"reason": "preempted", "global_step": 5,
                 "written_at": time.time() - 10_000}, f)
    with self.assertRaisesRegex(errors.PeerLostError,
                                "HARNESS_RESTART_WAIT_SECS"):
      self._run(max_steps=10)


# ------------------------------------------------------------ clusters --


@pytest.mark.slow
class ClusterPreemptionTest(absltest.TestCase):

  def test_sigterm_to_the_chief_resumes_at_the_stop_step(self):
    model_dir = self.create_tempdir().full_path
    out = watch.Lines()
    thread, result = watch.launch_job(
        model_dir, out, extra=["--max_steps=150", "--ckpt_steps=1000"],
        workers=2, evaluator=True, max_restarts=1)
    # A defined moment mid-run: once worker/0 logged step 30 or later
    # (progress lines every 10 steps), well before the last of 150.
    _support.wait_for(
        lambda: [m for _, m in out.find(r"\[worker/0\].*step (\d+)/150")
                 if int(m.group(1)) >= 30], 90,
        "worker/0 to log step 30", details=lambda: out.text()[-4000:])
    os.kill(watch.task_pid(model_dir, "worker/0"), signal.SIGTERM)
    stops = watch.wait_for(out, r"\[(worker/\d)\].*stopped at step (\d+)", 30)
    thread.join(150)
    self.assertFalse(thread.is_alive(), out.text()[-4000:])
    self.assertEqual(result["code"], 0, out.text()[-4000:])
    stop_steps = {m.group(1): int(m.group(2)) for _, m in out.find(
        r"\[(worker/\d)\].*stopped at step (\d+)")}
    self.assertLen(stop_steps, 2, out.text()[-4000:])
    self.assertLen(set(stop_steps.values()), 1, stop_steps)  # Same step.
    stop_step = stop_steps["worker/0"]
    resumed = [int(m.group(1)) for _, m in out.find(
        r"\[worker/0\].*starting at step (\d+)", after=stops[0][0])]
    self.assertEqual(resumed[0], stop_step, out.text()[-4000:])
    self.assertEqual(_support.checkpoint_step(model_dir), 150)

  def test_input_ending_on_one_worker_ends_all_together(self):
    model_dir = self.create_tempdir().full_path
    out = watch.Lines()
    thread, result = watch.launch_job(
        model_dir, out, extra=["--max_steps=500", "--input_steps=25"],
        env={env_knobs.PEER_TIMEOUT.env: "10"}, workers=2, evaluator=True)
    thread.join(150)
    self.assertFalse(thread.is_alive(), out.text()[-4000:])
    self.assertEqual(result["code"], 0, out.text()[-4000:])
    self.assertEqual(_support.checkpoint_step(model_dir), 25)
    self.assertTrue(out.find(r"\[worker/0\].*worker/1 left the step loop"))


if __name__ == "__main__":
  absltest.main()
