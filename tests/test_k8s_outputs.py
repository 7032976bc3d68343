"""`harness.k8s.outputs`: each `--output` has its traits and its addresses."""

from absl.testing import absltest

from harness.k8s import config as config_lib
from harness.k8s import outputs


def _config(output, **kwargs):
  storage = {} if output == "servers" else {"model_dir": "gs://b/m"}
  return config_lib.K8sConfig(name="mnist", image="img", output=output,
                              chief=True, workers=1, ps=1, **storage,
                              **kwargs)


class OutputsTest(absltest.TestCase):

  def test_every_output_has_a_row_and_an_address(self):
    self.assertEqual(set(outputs.OUTPUTS), {"jobset", "trainjob", "jobs",
                                             "tfjob", "servers"})
    self.assertEqual(set(outputs.ADDRESSES), set(outputs.Output))
    self.assertEqual(
        [o.value for o in outputs.Output if o.jobset], ["jobset", "trainjob"])
    self.assertEqual(
        [o.value for o in outputs.Output if o.standalone], ["servers"])
    self.assertEqual([o.value for o in outputs.Output if not o.layout],
                     ["tfjob", "servers"])

  def test_the_config_reads_its_output_as_a_kind(self):
    kind = _config("jobs").kind
    self.assertIs(kind, outputs.Output.JOBS)
    self.assertEqual(f"{kind}", "jobs")

  def test_addresses_by_output(self):
    self.assertEqual(config_lib.cluster_addresses(_config("jobs")), {
        "chief": ["mnist-0.mnist:2222"], "worker": ["mnist-1.mnist:2222"],
        "ps": ["mnist-2.mnist:2222"]})
    self.assertEqual(
        config_lib.cluster_addresses(_config("tfjob"))["worker"],
        ["mnist-worker-0.default.svc:2222"])
    self.assertEqual(
        config_lib.cluster_addresses(_config("servers"))["ps"],
        ["mnist-ps-0.mnist:2222"])
    for output in ("jobset", "trainjob"):
      self.assertEqual(
          config_lib.cluster_addresses(_config(output))["worker"],
          ["mnist-worker-0-0.mnist:2222"], output)

  def test_an_unknown_output_is_refused_naming_the_choices(self):
    with self.assertRaisesRegex(Exception, "--output='pods'.*must be one of "
                                "jobset, trainjob, jobs, tfjob, servers"):
      _config("pods")


if __name__ == "__main__":
  absltest.main()
