"""`harness.main --dry_run` shows the values a job runs with, not `-`.

Knobs left unset fall back to a variable or a default (peer and restart
waits: harness/cluster/env_knobs.py; the checkpoint interval: RunConfig's
600 s); the dry run prints what the job would use.
"""

import contextlib
import io
import re

from absl.testing import absltest

from harness import main
from harness.cli import job as job_lib


def _dry_run(*args, environ=None):
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    code = main.main(["harness.main", "--model_fn=linear",
                      "--input_fn=constant", "--model_dir=gs://b/m",
                      "--dry_run", *args], environ=dict(environ or {}))
  assert code == 0, out.getvalue()
  return {m.group(1): m.group(2) for m in re.finditer(
      r"^    (\w+) +(.*)$", out.getvalue(), re.MULTILINE)}


class DryRunDefaultsTest(absltest.TestCase):

  def test_unset_knobs_show_their_defaults(self):
    shown = _dry_run()
    self.assertEqual(shown["peer_timeout_secs"], "60.0")
    self.assertEqual(shown["restart_wait_secs"], "600.0")
    self.assertEqual(shown["save_checkpoints_secs"], "600")
    self.assertEqual(shown["save_checkpoints_steps"], "-")

  def test_variables_and_flags_win(self):
    shown = _dry_run("--save_checkpoints_steps=7", "--restart_wait_secs=30",
                     environ={"HARNESS_PEER_TIMEOUT_SECS": "5"})
    self.assertEqual(shown["peer_timeout_secs"], "5.0")
    self.assertEqual(shown["restart_wait_secs"], "30.0")
    self.assertEqual(shown["save_checkpoints_steps"], "7")
    self.assertEqual(shown["save_checkpoints_secs"], "-")

  def test_checkpoint_default_is_run_configs(self):
    from harness import run_config  # lazy: loads TensorFlow
    self.assertEqual(job_lib._DEFAULT_SAVE_CHECKPOINTS_SECS,
                     run_config.RunConfig().save_checkpoints_secs)


if __name__ == "__main__":
  absltest.main()
