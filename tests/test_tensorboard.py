"""TensorBoard in the box: summaries read back with TensorBoard's own reader,
the server harness starts (`--tensorboard`), and one-line output."""

import io
import os
import shlex
import socket
import sys
import urllib.request
from unittest import mock

from absl.testing import absltest
import pytest

from harness import errors
from harness.cli import flags
from harness.cli import job as job_lib
from harness.cli import tensorboard_server
from tests import _support
from tests import _tensorboard_reads as tb_reads
from tests import conftest

_TIMEOUT_SECS = 300
# Global batch 10; one step per run, so summaries land on exact steps (the
# binary's default steps_per_loop=auto writes them at its loop boundaries).
_LINEAR = ["--model_fn=linear", "--input_fn=constant", "--steps_per_loop=1"]
_NEEDS_TB = absltest.skipIf(
    not tb_reads.HAVE_TENSORBOARD,
    "tensorboard is not installed (setup.py installs it: pip install -e .)")
_scalars, _check_rates = tb_reads.scalars, tb_reads.check_rates
_get_json = tb_reads.get_json


def _run(command, timeout=_TIMEOUT_SECS):
  return _support.run(command, timeout_secs=timeout)


# ------------------------------------------------------------- fast tests


class FlagsTest(absltest.TestCase):

  def _parse(self, *args):
    return flags.parse(["harness.main"] + _LINEAR + list(args),
                       environ={}).job

  def test_bare_flag_is_default_port_and_round_trips(self):
    job = self._parse("--tensorboard")
    self.assertEqual(job.tensorboard, tensorboard_server.DEFAULT_PORT)
    self.assertFalse(job.tensorboard_keep)
    job = self._parse("--tensorboard=0", "--tensorboard_keep")
    self.assertEqual((job.tensorboard, job.tensorboard_keep), (0, True))
    self.assertEqual(flags.parse(flags.to_argv(job), environ={}).job, job)
    self.assertIsNone(self._parse().tensorboard)

  def test_bad_values_are_reported_with_the_fix(self):
    with self.assertRaisesRegex(errors.FlagError,
                                r"flag --tensorboard=70000: is not a TCP port"
                                r".*--tensorboard=0"):
      self._parse("--tensorboard=70000")
    with self.assertRaisesRegex(errors.FlagError,
                                "tensorboard_keep.*Fix: add --tensorboard"):
      self._parse("--tensorboard_keep")

  def test_help_prints_the_default_port(self):
    self.assertIn("--tensorboard[=PORT]", flags.help_text())
    self.assertIn(f"port {tensorboard_server.DEFAULT_PORT}", flags.help_text())


class CommandTextTest(absltest.TestCase):

  def test_command_names_this_environment_and_quotes_the_path(self):
    text = tensorboard_server.command_text("/tmp/a dir/m")
    self.assertTrue(text.endswith("--logdir '/tmp/a dir/m'"), text)
    program = shlex.split(text)[0]
    if tensorboard_server.is_installed():
      self.assertIn(program, ("tensorboard", sys.executable,
                              os.path.join(os.path.dirname(sys.executable),
                                           "tensorboard")))
    else:
      self.assertIn("pip install", text)

  def test_model_dir_of_a_task_command(self):
    find = tensorboard_server.model_dir_in_command
    self.assertEqual(find(["python", "-m", "harness.main", "--model_dir=/m"]),
                     "/m")
    self.assertEqual(find(["train.py", "--model_dir", "/n", "--x=1"]), "/n")
    self.assertIsNone(find(["train.py", "--max_steps=3"]))

  def test_bare_launch_flag_gets_the_default_port(self):
    self.assertEqual(
        tensorboard_server.expand_bare_flag(
            ["launch", "--tensorboard", "--workers=2", "--", "x",
             "--tensorboard"]),
        ["launch", f"--tensorboard={tensorboard_server.DEFAULT_PORT}",
         "--workers=2", "--", "x", "--tensorboard"])


class SignatureNoteTest(absltest.TestCase):

  def test_excluded_signature_is_one_info_line_full_text_at_debug(self):
    # pylint: disable=g-import-not-at-top
    from harness import export
    from harness._tf import tf
    from harness.export import outputs as outputs_lib
    # pylint: enable=g-import-not-at-top
    with tf.Graph().as_default():
      image = tf.compat.v1.placeholder(tf.float32, [None, 28, 28, 1])
      scores = tf.reduce_sum(image, axis=[1, 2])
      with self.assertLogs("absl", level="DEBUG") as logs:
        outputs_lib.build_all_signature_defs(
            {"image": image}, {
                "serving_default": export.PredictOutput({"s": scores}),
                "classification": export.ClassificationOutput(scores=scores)})
    info = [r.getMessage() for r in logs.records if r.levelname == "INFO"]
    debug = [r.getMessage() for r in logs.records if r.levelname == "DEBUG"]
    note = [m for m in info if "'classification'" in m]
    self.assertEqual(note, ["export | signature 'classification' EXCLUDED: "
                            "needs a tf.string input, got 'image' float32"])
    self.assertTrue(all("\n" not in m for m in info), info)
    self.assertTrue(any("tf.io.parse_example()" in m for m in debug), debug)


@_NEEDS_TB
class EventFilesTest(absltest.TestCase):
  """A short run's event files, read with TensorBoard's EventMultiplexer."""

  def test_train_and_evaluate_scalars_and_steps(self):
    model_dir = self.create_tempdir().full_path
    job = flags.parse(["harness.main"] + _LINEAR + [
        "--max_steps=40", "--save_checkpoints_steps=20",
        "--log_step_count_steps=10", "--save_summary_steps=10",
        "--eval_steps=2", "--throttle_secs=0", f"--model_dir={model_dir}",
        "--verbosity=quiet"], environ={}).job
    job_lib.run_job(job, environ={}, out=io.StringIO())
    # A named evaluation goes to eval_<name>/.
    # pylint: disable=g-import-not-at-top
    from harness import estimator as estimator_lib
    from harness.cli import registry
    # pylint: enable=g-import-not-at-top
    params = registry.merged_params(job)
    estimator = estimator_lib.Estimator(
        registry.resolve_model_fn("linear"), model_dir=model_dir,
        params=params)
    estimator.evaluate(registry.resolve_input_fn("constant")(
        "eval", batch_size=10, params=params), steps=2, name="holdout")

    scalars = _scalars(model_dir)
    self.assertEqual(set(scalars), {".", "eval", "eval_holdout"})
    train = scalars["."]
    self.assertEqual([s for s, _ in train["loss"]], [1, 11, 21, 31])
    self.assertEqual(sorted(dict(train["global_step/sec"])), [11, 21, 31])
    _check_rates(self, train, global_batch=10)
    self.assertEqual([s for s, _ in scalars["eval"]["loss"]], [20, 40])
    self.assertEqual([s for s, _ in scalars["eval_holdout"]["loss"]], [40])

  def _train(self, *args):
    model_dir = self.create_tempdir().full_path
    job = flags.parse(["harness.main"] + _LINEAR + [
        "--max_steps=30", "--log_step_count_steps=10", "--mode=train",
        f"--model_dir={model_dir}", "--verbosity=quiet"] + list(args),
                      environ={}).job
    job_lib.run_job(job, environ={}, out=io.StringIO())
    return _scalars(model_dir)

  def test_mirrored_examples_count_every_replica(self):
    scalars = self._train("--strategy=mirrored", "--num_gpus_per_worker=2",
                          "--cpu_stand_in", "--batch_size=8")
    self.assertEqual(set(scalars), {"."})  # One stream.
    _check_rates(self, scalars["."], global_batch=8)

  def test_steps_per_loop_carries_the_batch_out_of_the_loop(self):
    scalars = self._train("--steps_per_loop=5", "--batch_size=6")
    _check_rates(self, scalars["."], global_batch=6)


# ------------------------------------------------------------- slow tests


@pytest.mark.slow
class DefaultOutputTest(absltest.TestCase):
  """The README's main job, shortened, at --verbosity=debug. The job as the
  README writes it (every line fits, notes are one line) is checked on
  tests/test_docs_commands.py's run of it: tests/_docs_facts.py's
  default_run_lines."""

  def test_debug_keeps_full_text(self):
    if not (conftest.MNIST_DIR / "t10k-images-idx3-ubyte.gz").exists():
      self.skipTest(f"real MNIST IDX files not found at {conftest.MNIST_DIR} "
                    "(the repository ships them: git checkout -- "
                    "input_fns/data/mnist)")
    model_dir = self.create_tempdir().full_path
    debug = _run([
        sys.executable, "-m", "harness.main", "--model_fn=mnist_cnn",
        "--input_fn=mnist_idx", f"--data_dir={conftest.MNIST_DIR}",
        f"--model_dir={model_dir}", "--max_steps=30", "--batch_size=64",
        "--eval_steps=0", "--save_checkpoints_steps=30", "--exporters=final",
        "--verbosity=debug"])
    self.assertEqual(debug.returncode, 0, debug.description)
    self.assertIn("If your model function expects multiple inputs",
                  debug.stderr, debug.description)


@pytest.mark.slow
@_NEEDS_TB
class ServerTest(absltest.TestCase):
  """Real TensorBoard servers on free 127.0.0.1 ports, read over HTTP."""

  def test_server_is_stopped_when_the_block_ends(self):
    logdir = self.create_tempdir().full_path
    with tensorboard_server.serving(logdir, port=0, out=io.StringIO()) as server:
      url = server.wait_for_url()
      self.assertIsNotNone(url, server.failure_text())
      self.assertIsInstance(_get_json(url, "/data/runs"), list)
    self.assertIsNotNone(server.exited())
    with self.assertRaises(OSError):
      urllib.request.urlopen(url + "/data/runs", timeout=5)


def _taken_port(test):
  """A port this test listens on (so TensorBoard cannot bind it)."""
  listener = socket.socket()
  test.addCleanup(listener.close)
  listener.bind(("127.0.0.1", 0))
  listener.listen(1)
  return listener.getsockname()[1]


class NotServingIsReportedTest(absltest.TestCase):
  """A TensorBoard that does not serve is reported in exactly one line."""

  def _warnings(self, port, body):
    logdir = self.create_tempdir().full_path
    out = io.StringIO()
    with self.assertLogs("absl", level="WARNING") as logs:
      with tensorboard_server.serving(logdir, port=port, out=out) as server:
        body(server)
    self.addCleanup(server.stop)
    self.assertEqual(out.getvalue(), "")  # No URL line.
    return [r.getMessage() for r in logs.records]

  def test_port_in_use_is_reported_before_starting(self):
    port = _taken_port(self)
    messages = self._warnings(port, lambda server: None)
    self.assertLen(messages, 1, messages)
    self.assertIn(f"not started: 127.0.0.1:{port} is already in use",
                  messages[0])
    self.assertIn("--tensorboard=0", messages[0])
    self.assertLess(len(messages[0]), 160)

  @pytest.mark.slow
  def test_run_ending_before_it_serves_is_reported_once(self):
    # The port is taken after the check (a race): a short run ends while
    # TensorBoard is still starting or has just failed.
    port = _taken_port(self)
    with mock.patch.object(tensorboard_server, "_port_in_use",
                           return_value=False):
      messages = self._warnings(port, lambda server: None)
    self.assertLen(messages, 1, messages)
    self.assertIn(f"TensorBoard on 127.0.0.1:{port}", messages[0])
    self.assertLess(len(messages[0]), 160)

  @pytest.mark.slow
  def test_exit_during_the_run_is_reported_once(self):
    port = _taken_port(self)

    def wait_for_exit(server):
      _support.wait_for(lambda: server.exited() is not None,
                        tensorboard_server.START_TIMEOUT_SECS,
                        "TensorBoard to fail on the taken port")

    with mock.patch.object(tensorboard_server, "_port_in_use",
                           return_value=False):
      messages = self._warnings(port, wait_for_exit)
    self.assertLen(messages, 1, messages)
    self.assertIn(f"TensorBoard on 127.0.0.1:{port} exited with", messages[0])


if __name__ == "__main__":
  absltest.main()
