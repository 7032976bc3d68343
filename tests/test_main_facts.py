"""One resolution of each fact in a `harness.main` run (issue 13 part 2).

A run through `harness.main.main` (the binary's entry, in process) parses
TF_CONFIG exactly once (`flags.parse`, at the edge) and decides its
model_dir exactly once, in one log line naming where it came from.
"""

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from unittest import mock

from absl.testing import absltest

from harness import cluster as cluster_lib
from harness import main as main_lib
from harness.cluster import tf_config
from harness.launch import ports
from harness.state import paths
from tests import _support
from tests import conftest

_TRAIN = ["harness.main", "--model_fn=linear", "--input_fn=constant",
          "--mode=train", "--max_steps=3", "--save_summary_steps=0",
          "--steps_per_loop=1", "--verbosity=info"]


class OneResolutionTest(absltest.TestCase):

  def _main(self, argv, environ):
    """Runs main; returns (exit status, TF_CONFIG parses, model_dir lines)."""
    parser = mock.Mock(wraps=tf_config.parse_tf_config)
    # TF_CONFIG's rules: harness.plan calls them through the cluster
    # door (RunConfig's run check raises what the plan found).
    self.validations = mock.Mock(wraps=cluster_lib.validate)
    out = io.StringIO()
    with mock.patch.object(tf_config, "parse_tf_config", parser), \
        mock.patch.object(cluster_lib, "validate", self.validations), \
        mock.patch.dict(os.environ), contextlib.redirect_stdout(out), \
        self.assertLogs(level="INFO") as logs:
      os.environ.pop("TF_CONFIG", None)  # Only `environ` may name one.
      status = main_lib.main(argv, environ=environ)
    lines = [l for l in logs.output if "model_dir |" in l]
    return status, parser.call_count, lines, out.getvalue()

  def test_local_run_without_model_dir(self):
    status, parses, lines, out = self._main(_TRAIN, environ={})
    self.assertEqual(status, 0, out)
    self.assertEqual(parses, 1)
    # One decision; the end of the successful run removes the folder.
    self.assertLen(lines, 2, lines)
    match = re.fullmatch(
        r"WARNING:absl:model_dir \| (\S+) \(temporary: nothing named one\)",
        lines[0])
    self.assertIsNotNone(match, lines)
    model_dir = match.group(1)
    self.addCleanup(shutil.rmtree, model_dir, ignore_errors=True)
    self.assertEqual(lines[1], f"INFO:absl:model_dir | removed the temporary "
                     f"{model_dir} (--keep_model_dir keeps it)")
    self.assertFalse(os.path.exists(model_dir))
    self.assertIn(f"model_dir:  {model_dir}", out)

  def test_local_run_with_model_dir_flag(self):
    model_dir = self.create_tempdir().full_path
    status, parses, lines, out = self._main(
        _TRAIN + [f"--model_dir={model_dir}"], environ={})
    self.assertEqual(status, 0, out)
    self.assertEqual(parses, 1)
    self.assertEqual(lines, [f"INFO:absl:model_dir | {model_dir} "
                             f"({paths.FROM_ARGUMENT})"])
    self.assertEqual(_support.checkpoint_step(model_dir), 3)

  def test_tf_config_run_of_one_chief(self):
    model_dir = self.create_tempdir().full_path
    config = {"cluster": {"chief": [f"127.0.0.1:{ports.pick_free_port()}"]},
              "task": {"type": "chief", "index": 0}, "model_dir": model_dir}
    status, parses, lines, out = self._main(
        _TRAIN, environ={"TF_CONFIG": json.dumps(config)})
    self.assertEqual(status, 0, out)
    self.assertEqual(parses, 1)
    self.assertEqual(lines, [f"INFO:absl:model_dir | {model_dir} "
                             f"({paths.FROM_TF_CONFIG})"])
    self.assertIn("harness.main | chief/0 | train", out)
    self.assertEqual(_support.checkpoint_step(model_dir), 3)
    # Checked once: the job's plan, which its RunConfig carries (the run
    # check in Estimator.train raises what the plan found).
    self.assertEqual(self.validations.call_count, 1)

  def test_train_and_evaluate_chief_checks_its_config_once(self):
    model_dir = self.create_tempdir().full_path
    config = {"cluster": {"chief": [f"127.0.0.1:{ports.pick_free_port()}"]},
              "task": {"type": "chief", "index": 0}}
    argv = [a for a in _TRAIN if a != "--mode=train"] + [
        "--mode=train_and_evaluate", "--eval_steps=1", "--throttle_secs=0",
        f"--model_dir={model_dir}"]
    status, _, _, out = self._main(
        argv, environ={"TF_CONFIG": json.dumps(config)})
    self.assertEqual(status, 0, out)
    # The plan, which train_and_evaluate's check and Estimator.train's
    # read.
    self.assertEqual(self.validations.call_count, 1)


class TensorFlowFreeEdgeTest(absltest.TestCase):
  """--help and --dry_run run through main without importing TensorFlow."""

  def test_help_and_dry_run_import_no_tensorflow(self):
    code = (
        "import contextlib, io, sys\n"
        "from harness import main\n"
        "args = ['--model_fn=tests.programs.no_tf_fns:model_fn',\n"
        "        '--input_fn=tests.programs.no_tf_fns:make_input_fn']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "  codes = [main.main(['harness.main', '--help'], environ={}),\n"
        "           main.main(['harness.main', '--dry_run'] + args,\n"
        "                     environ={})]\n"
        "print(codes, sorted(m for m in sys.modules\n"
        "                    if m.split('.')[0] == 'tensorflow'\n"
        "                    or m == 'harness.cli.mode_runners'))\n")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=conftest.REPO_ROOT,
        env=conftest.child_env(), capture_output=True, text=True,
        timeout=120, check=False)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertEqual(result.stdout.strip(), "[0, 0] []", result.stderr[-3000:])


if __name__ == "__main__":
  absltest.main()
