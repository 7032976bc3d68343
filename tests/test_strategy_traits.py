"""StrategyKind's traits: each kind's behaviour, read in one table."""

from absl.testing import absltest
from absl.testing import parameterized

from harness import errors
from harness.cluster import strategy_kind
from harness.cluster import tf_config_checks
from harness.cluster.strategy_kind import StrategyKind

_K = StrategyKind
# (kind, the traits that are True): everything not listed is False.
_EXPECTED = (
    (_K.DEFAULT, {"buildable", "no_op", "single_device", "in_graph"}),
    (_K.MIRRORED, {"buildable", "one_machine", "in_graph"}),
    (_K.COLLECTIVE, {"buildable", "multi_worker", "lockstep", "refuses_ps"}),
    (_K.PARAMETER_SERVER, {"buildable", "multi_worker", "needs_ps",
                           "asynchronous"}),
    (_K.CENTRAL_STORAGE, {"buildable", "one_machine", "in_graph"}),
    (_K.ONE_DEVICE, {"buildable", "one_machine", "single_device",
                     "in_graph"}),
    (_K.TPU, set()),
    (_K.OTHER, set()),
)
_TRAITS = ("buildable", "no_op", "multi_worker", "lockstep", "one_machine",
           "single_device", "needs_ps", "refuses_ps", "asynchronous",
           "in_graph")


class StrategyTraitsTest(parameterized.TestCase):

  def test_every_kind_has_a_row(self):
    self.assertCountEqual([kind for kind, _ in _EXPECTED], list(StrategyKind))

  @parameterized.parameters(*_EXPECTED)
  def test_traits(self, kind, true_traits):
    self.assertEqual({name for name in _TRAITS if getattr(kind, name)},
                     true_traits)

  def test_the_side_tuples_come_from_the_traits(self):
    self.assertEqual(strategy_kind.BUILDABLE_KINDS,
                     (_K.DEFAULT, _K.MIRRORED, _K.COLLECTIVE,
                      _K.PARAMETER_SERVER, _K.CENTRAL_STORAGE, _K.ONE_DEVICE))
    self.assertEqual(strategy_kind.MULTI_WORKER_KINDS,
                     (_K.COLLECTIVE, _K.PARAMETER_SERVER))

  def test_of_takes_a_kind_its_string_or_none(self):
    self.assertIs(StrategyKind.of("collective"), _K.COLLECTIVE)
    self.assertIs(StrategyKind.of(_K.MIRRORED), _K.MIRRORED)
    self.assertIsNone(StrategyKind.of(None))
    with self.assertRaises(ValueError):
      StrategyKind.of("allreduce")

  @parameterized.parameters("mirrored", "central_storage", "one_device")
  def test_one_machine_kinds_refuse_several_trainers(self, kind):
    two = {"chief": ["h0:1"], "worker": ["h1:1"]}
    with self.assertRaisesRegex(errors.NotSupportedError, kind):
      tf_config_checks.check_one_machine_strategy(kind, two)
    tf_config_checks.check_one_machine_strategy(kind, {"chief": ["h0:1"]})

  @parameterized.parameters("default", "collective", "parameter_server",
                            "tpu", "other", None)
  def test_other_kinds_pass_the_one_machine_rule(self, kind):
    tf_config_checks.check_one_machine_strategy(
        kind, {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]})


if __name__ == "__main__":
  absltest.main()
