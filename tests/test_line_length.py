"""No output line of the main documented commands is over 160 characters.

Each test runs one command as README.md, docs/ERRORS.md or k8s/README.md
show it (fewer steps, temporary folders, free ports) and scans every line
it printed, log lines and errors included (`_support.long_lines`). The
docs' commands as written are scanned by tests/test_docs_commands.py (the
README's launch line by tests/test_readme_launch.py); here: what they do
not run, an error, the render, a killed and resumed standalone client.
"""

import re
import shutil
import sys
import tempfile

from absl.testing import absltest
import pytest

from harness.launch import ports
from tests import _support

_MAIN = [sys.executable, "-m", "harness.main"]


class LineLengthTest(absltest.TestCase):

  def assert_short(self, output, description):
    long = _support.long_lines(output)
    self.assertEqual(long, [], f"{len(long)} line(s) over "
                     f"{_support.LINE_LIMIT} characters\n{description}")

  def test_one_line_error(self):  # docs/ERRORS.md: an unknown model_fn.
    result = _support.run(_MAIN + ["--model_fn=resnet9000",
                                   "--input_fn=constant"], timeout_secs=300)
    self.assertEqual(result.returncode, 2, result.description)
    self.assertIn("unknown model_fn", result.output)
    self.assert_short(result.output, result.description)

  def test_k8s_render(self):  # k8s/README.md's command.
    result = _support.run(
        [sys.executable, "-m", "harness.k8s", "--name=mnist", "--workers=4",
         "--evaluator", "--tensorboard",
         "--image=registry.example.com/harness:0.1", "--pvc=harness-model",
         "--", "--model_fn=mnist_mlp", "--input_fn=mnist",
         "--strategy=collective", "--max_steps=10000", "--batch_size=256",
         "--exporters=latest"], timeout_secs=300)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertIn("# Rendered by: python -m harness.k8s", result.output)
    self.assert_short(result.output, result.description)

  def _remote_args(self, cluster, model_dir, max_steps):
    return ["-m", "harness.main", "--model_fn=linear", "--input_fn=constant",
            f"--remote_cluster={_support.cluster_spec(cluster)}",
            "--strategy=collective", "--num_gpus_per_worker=2",
            "--cpu_stand_in", "--batch_size=20", f"--max_steps={max_steps}",
            "--save_checkpoints_steps=50", "--eval_steps=10",
            "--exporters=latest", f"--model_dir={model_dir}"]

  @pytest.mark.slow
  def test_remote_client_and_servers(self):  # README: standalone client.
    cluster = {"worker": [f"127.0.0.1:{ports.pick_free_port()}"
                          for _ in range(2)]}
    servers = _support.start_servers(self, cluster, num_cpu_devices=2)
    # A short folder, near the README's /tmp/NAME: absl's per-test folder
    # would push the resumed client's cleanup line (the killed client's
    # temporary checkpoint file, named in full) past the 160 scanned here.
    model_dir = tempfile.mkdtemp(prefix="hl")
    self.addCleanup(shutil.rmtree, model_dir, ignore_errors=True)
    # README: "Stop the client at any time (Ctrl-C, or kill it) and run the
    # same command again": the servers restart, the new client resumes and
    # runs to the end (a whole run's lines: the killed client's start, the
    # resumed one's steps, evaluation and export).
    killed = _support.ChildProcess(
        self._remote_args(cluster, model_dir, 100000), "killed client")
    self.addCleanup(killed.kill_group)
    step = killed.wait_for_match(re.compile(r"\| step (\d+)/100000"), 300)
    self.assertIsNotNone(step, killed.describe())
    killed.kill_group()
    resumed = _support.run(
        [sys.executable, *self._remote_args(
            cluster, model_dir, int(step.group(1)) + 100)], timeout_secs=600)
    self.assertEqual(resumed.returncode, 0, resumed.description)
    self.assertIn("harness.main | client |", resumed.output)
    self.assert_short(killed.output + "\n" + resumed.output,
                      resumed.description)
    for server in servers:
      server.terminate_group()
      self.assert_short(server.output, server.describe())

if __name__ == "__main__":
  absltest.main()
