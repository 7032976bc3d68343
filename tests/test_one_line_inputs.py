"""Three inputs of issue 37 that ended in a traceback or passed preflight:
`--metrics_bind=not..a..host`, a model_dir deleted while the job runs, and
a model_dir under a dangling or looping symbolic link. Each is now one line
naming the value, the rule and the fix."""

import os
import shutil
import sys

from absl.testing import absltest
import pytest

from harness import errors
from harness import run_config as run_config_lib
from harness.cli import flags
from harness.cli import preflight
from harness.cluster import listen
from tests import _support


def _parse(*extra):
  return flags.parse(["harness.main", "--model_fn=linear",
                      "--input_fn=constant", *extra], environ={})


class MetricsBindTest(absltest.TestCase):

  def test_a_malformed_host_is_a_flag_error(self):
    # Before: UnicodeError ("label empty or too long") from the socket
    # module when the endpoint started, with its traceback.
    with self.assertRaises(errors.FlagError) as ctx:
      _parse("--metrics_port=9464", "--metrics_bind=not..a..host")
    self.assertIn("flag --metrics_bind=not..a..host: is neither an IP "
                  "address nor a host name", str(ctx.exception))
    self.assertIn("Fix: 127.0.0.1", str(ctx.exception))

  def test_run_config_refuses_it_too(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "metrics_bind='not..a..host' is neither"):
      run_config_lib.RunConfig(metrics_bind="not..a..host")

  def test_good_hosts_pass(self):
    for host in ("127.0.0.1", "0.0.0.0", "::", "[::1]", "localhost",
                 "node-1.example.com"):
      self.assertIsNone(listen.host_problem(host), host)
    for host in ("", "not..a..host", "-x", "a" * 64, "a b"):
      self.assertIsNotNone(listen.host_problem(host), host)


class SymlinkPreflightTest(absltest.TestCase):
  """Before, os.path.exists() said False for both links, preflight checked
  the folder above (writable) and passed."""

  def _preflight(self, model_dir):
    job, plan = _parse(f"--model_dir={model_dir}", "--mode=train")
    preflight.preflight(job, plan)

  def test_a_looping_link_on_the_path_is_refused(self):
    root = self.create_tempdir().full_path
    loop = os.path.join(root, "loop")
    os.symlink(loop, loop)
    with self.assertRaises(errors.ConfigError) as ctx:
      self._preflight(os.path.join(loop, "model"))
    self.assertIn(f"{loop} is a symbolic link that loops (Too many levels "
                  "of symbolic links). Fix:", str(ctx.exception))

  def test_a_dangling_link_as_model_dir_is_refused(self):
    root = self.create_tempdir().full_path
    link = os.path.join(root, "model")
    os.symlink(os.path.join(root, "gone"), link)
    with self.assertRaises(errors.ConfigError) as ctx:
      self._preflight(link)
    self.assertIn(f"{link} is a symbolic link that points to "
                  f"{root}/gone, which does not exist. Fix: point the link "
                  "at an existing folder", str(ctx.exception))
    os.mkdir(os.path.join(root, "gone"))  # Now a link to a folder: fine.
    self._preflight(os.path.join(link, "model"))


def _deleted(path):
  """One try at deleting `path` whole; whether it succeeded."""
  try:
    shutil.rmtree(path)
  except OSError:
    return False
  return True


@pytest.mark.slow
class ModelDirDeletedTest(absltest.TestCase):
  """With summaries on: TensorFlow's summary writer makes the deleted
  folder again for its next event, and the save after it went into that new
  folder, training on to the end (exit 0 in 1 of 7 runs with the default
  100 steps between summaries). The chief's lease check before each save
  (and its refresh) ends it instead (tests/test_model_dir_deleted.py checks
  it in this process)."""

  def test_one_line_naming_model_dir(self):
    root = self.create_tempdir().full_path
    model_dir = os.path.join(root, "m")
    child = _support.ChildProcess(
        ["-m", "harness.main", "--model_fn=linear", "--input_fn=constant",
         "--mode=train", "--max_steps=100000", "--save_checkpoints_steps=200",
         # A summary every 10 steps makes the deleted folder again before
         # the next save nearly always (the old code: exit 0 in 2 of 3).
         "--save_summary_steps=10",
         f"--model_dir={model_dir}"], "trainer")
    self.addCleanup(child.kill_group)
    # The first line is at step 10 (a loop of K=10 steps between summaries).
    self.assertTrue(child.wait_for_text("train | local | step ", 240),
                    child.describe())
    # The trainer may write into it while rmtree runs ("Directory not
    # empty" on a fast machine): try again, a bounded number of times.
    _support.wait_for(lambda: _deleted(model_dir), 30, f"{model_dir} deleted")
    self.assertEqual(child.wait(240), errors.EXIT_FAILED, child.describe())
    # Before: a 172-line traceback ending in "ValueError: Parent directory
    # of .../model.ckpt doesn't exist, can't save."
    self.assertNotIn("Traceback", child.output, child.describe())
    lines = [line for line in child.lines if line.startswith("harness.main:")]
    self.assertLen(lines, 1, child.describe())
    # The line and its folded continuations (a long model_dir folds early).
    self.assertIn(f"--model_dir={model_dir} was deleted while the job ran",
                  _support.last_error(child.output), child.describe())

  def test_the_chief_of_a_ps_cluster_too(self):
    # Its saves go through the ps task's server; the chief checks its lease
    # file before each one. The worker and the ps then stop (SIGTERM).
    model_dir = os.path.join(self.create_tempdir().full_path, "m")
    launch = _support.ChildProcess(
        ["-m", "harness.launch", "--chief", "--workers=1", "--ps=1",
         "--timeout_secs=240", "--", sys.executable, "-m", "harness.main",
         f"--model_dir={model_dir}", "--mode=train", "--model_fn=linear",
         "--input_fn=constant", "--max_steps=1000000",
         "--save_checkpoints_steps=200", "--save_summary_steps=10"],
        "launch")
    self.addCleanup(launch.kill_group)
    self.assertTrue(launch.wait_for_text("train | chief/0 | step ", 240),
                    launch.describe())
    _support.wait_for(lambda: _deleted(model_dir), 30, f"{model_dir} deleted")
    self.assertEqual(launch.wait(240), errors.EXIT_FAILED, launch.describe())
    chief = [line[len("[chief/0] "):] for line in launch.lines
             if line.startswith("[chief/0] ")]
    self.assertLen([line for line in chief
                    if line.startswith("harness.main:")], 1, launch.describe())
    self.assertNotIn("Traceback", launch.output, launch.describe())
    # The line and its folded continuations.
    self.assertIn(f"ModelDirDeletedError: --model_dir={model_dir} was "
                  "deleted while the job ran",
                  _support.last_error("\n".join(chief)), launch.describe())


if __name__ == "__main__":
  absltest.main()
