"""StrategyKind: one classification of the run's strategy, on RunConfig."""

import json
import sys
from unittest import mock

from absl.testing import absltest

from harness import errors
from harness import estimator as estimator_lib
from harness import run_config
from harness._tf import tf
from harness.cluster import tf_config_checks
from harness.cluster.strategy_kind import StrategyKind
from harness.core import strategy_classifier
from harness.distribute import strategies
from tests.programs import cluster_job


def _refuse(strategy):
  raise AssertionError(f"strategy classified again: {strategy!r}")


def _classifier_refused():
  """Patches every binding of the classifier in loaded harness modules."""
  stack = mock.patch.multiple(strategy_classifier, strategy_kind=_refuse)
  patches = [stack]
  for name, module in list(sys.modules.items()):
    if (name.startswith("harness.") and module is not strategy_classifier
        and getattr(module, "strategy_kind", None) is
        strategy_classifier.strategy_kind):
      patches.append(mock.patch.object(module, "strategy_kind", _refuse))
  return patches


class StrategyKindTest(absltest.TestCase):

  def test_a_str_enum_equal_to_the_flag_strings(self):
    self.assertEqual(StrategyKind.COLLECTIVE, "collective")
    self.assertIs(StrategyKind("parameter_server"),
                  StrategyKind.PARAMETER_SERVER)
    self.assertEqual(f"{StrategyKind.MIRRORED}", "mirrored")
    # What enum.StrEnum (3.11+) printed, on 3.10 too: the bare value.
    self.assertEqual(str(StrategyKind.TPU), "tpu")
    self.assertEqual("%s" % StrategyKind.TPU, "tpu")
    self.assertEqual(format(StrategyKind.TPU, ">5"), "  tpu")
    self.assertIsInstance(StrategyKind.TPU, str)
    self.assertEqual(json.dumps(StrategyKind.ONE_DEVICE), '"one_device"')
    self.assertIn("collective", {StrategyKind.COLLECTIVE: 1})

  def test_run_config_property(self):
    self.assertIsNone(run_config.RunConfig().strategy_kind)
    config = run_config.RunConfig(
        train_distribute=tf.distribute.MirroredStrategy(["/cpu:0"]))
    self.assertIs(config.strategy_kind, StrategyKind.MIRRORED)
    with self.assertRaises(AttributeError):
      config.strategy_kind = StrategyKind.COLLECTIVE
    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    self.assertIs(config.replace(train_distribute=one).strategy_kind,
                  StrategyKind.ONE_DEVICE)
    self.assertIsNone(config.replace(train_distribute=None).strategy_kind)

  def test_replace_keeps_the_kind_without_classifying(self):
    config = run_config.RunConfig(
        train_distribute=tf.distribute.MirroredStrategy(["/cpu:0"]))
    patches = _classifier_refused()
    for patch in patches:
      patch.start()
    self.addCleanup(mock.patch.stopall)
    replaced = config.replace(keep_checkpoint_max=3)
    self.assertIs(replaced.strategy_kind, StrategyKind.MIRRORED)

  def test_computed_once_for_a_training_run(self):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    est = estimator_lib.Estimator(
        cluster_job.model_fn, model_dir=self.create_tempdir().full_path,
        config=run_config.RunConfig(train_distribute=strategy,
                                    save_checkpoints_steps=2))
    patches = _classifier_refused()
    self.assertGreater(len(patches), 3)  # run_config, strategies, ...
    for patch in patches:
      patch.start()
    self.addCleanup(mock.patch.stopall)
    est.train(cluster_job.input_fn, max_steps=3)
    self.assertEqual(est.get_variable_value("global_step"), 3)


class StrategyJobsRuleTest(absltest.TestCase):

  def test_remote_cluster_without_ps_under_parameter_server(self):
    config = run_config.RunConfig(
        experimental_distribute=run_config.DistributeConfig(
            train_distribute=strategies.make_strategy("parameter_server"),
            remote_cluster={"worker": ["127.0.0.1:2222"]}))
    self.assertIs(config.strategy_kind, StrategyKind.PARAMETER_SERVER)
    with self.assertRaisesRegex(
        errors.ClusterConfigError,
        r'^experimental_distribute.remote_cluster cluster \[\'worker\'\] has '
        r'no "ps" job but the strategy is ParameterServerStrategy'):
      run_config.check_supported_config(config)

  def test_no_cluster_at_all_has_the_same_rule(self):
    with self.assertRaisesRegex(
        errors.ClusterConfigError,
        r'^flag --strategy=parameter_server: names no cluster .* needs a '
        r'cluster with a "ps" job\. Fix: add "ps"'):
      tf_config_checks.check_strategy_jobs(
          StrategyKind.PARAMETER_SERVER, {},
          source="flag --strategy=parameter_server:")
    tf_config_checks.check_strategy_jobs(StrategyKind.COLLECTIVE, {},
                                        source="x")  # No ps job: fine.


if __name__ == "__main__":
  absltest.main()
