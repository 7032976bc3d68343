"""What harness.main's banner and closing summary say a task is.

A ps task serves variables: no model_fn, input or batch rows, no
"latest checkpoint"; a --remote_cluster client is "client", not "local".
"""

import json

from absl.testing import absltest

from harness.cli import flags
from harness.cli import job as job_lib
from harness.cli import job_config
from harness.cli import results_text

_CLUSTER = {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"],
            "ps": ["127.0.0.1:2224"]}


def _parsed(*args, environ=None):
  return flags.parse(["harness.main", "--model_fn=linear",
                      "--input_fn=constant", *args],
                     environ=environ or {}, gpu_count=lambda: 0)


class HeaderTest(absltest.TestCase):

  def test_ps_banner_has_no_model_or_batch(self):
    environ = {"TF_CONFIG": json.dumps(
        {"cluster": _CLUSTER, "task": {"type": "ps", "index": 0}})}
    job, plan = _parsed("--strategy=parameter_server", "--model_dir=/m",
                        environ=environ)
    text = job_lib.describe(job, plan)
    self.assertEqual(text.splitlines(), [
        "harness.main | ps/0 | serves variables",
        "  task:       ps/0 of cluster {chief: 1, worker: 1, ps: 1} "
        "(TF_CONFIG)",
        "  model_dir:  /m"])

  def test_remote_client_banner_says_client(self):
    job, plan = _parsed(
        "--strategy=collective", "--model_dir=/m",
        "--remote_cluster=worker=127.0.0.1:2222,127.0.0.1:2223")
    first = job_lib.describe(job, plan).splitlines()[0]
    self.assertEqual(first, f"harness.main | client | {job.mode}")

  def test_ps_summary_has_no_checkpoint(self):
    job = _parsed("--model_dir=/m").job
    result = job_config.JobResult(mode=job.mode, task="ps/0",
                                  model_dir="/m",
                                  latest_checkpoint="/m/model.ckpt-5")
    self.assertEqual(results_text.summary(result, job).splitlines(), [
        "done | ps/0 | served variables until training ended",
        "  model_dir:          /m"])

  def test_trainer_summary_keeps_its_checkpoint(self):
    job = _parsed("--model_dir=/m").job
    result = job_config.JobResult(mode=job.mode, task="chief/0",
                                  model_dir="/m",
                                  latest_checkpoint="/m/model.ckpt-5")
    self.assertIn("latest checkpoint:  /m/model.ckpt-5",
                  results_text.summary(result, job))


if __name__ == "__main__":
  absltest.main()
