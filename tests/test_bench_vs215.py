"""bench.tf215.vs215's quiet-machine rule (issue 26): loud rounds are marked and
left out of the figures; none quiet, no figures. No timing is asserted."""

from unittest import mock

from absl.testing import absltest

from bench.tf215 import vs215
from bench.tf215 import vs215_table

_K1, _EST = "harness K=1", "tf.estimator 2.15"


def _round(loud, k1_rate):
  return {"loud": loud, ("mlp b32", _K1): {"examples_per_sec": k1_rate},
          ("mlp b32", _EST): {"examples_per_sec": 10.0}}


class QuietRoundsTest(absltest.TestCase):

  def _render(self, runs):
    return vs215_table.render(runs, cases=vs215.CASES, runners=vs215.RUNNERS,
                              targets=vs215._TARGETS, rounds=len(runs),
                              elapsed_secs=60, loads=["x"] * len(runs),
                              command="c", profiles=[], max_load=1.5)

  def test_loud_round_is_left_out_of_ratios_and_named(self):
    runs = [_round(False, 12.0), _round(True, 3.0), _round(False, 14.0)]
    self.assertEqual(vs215_table._paired(runs, "mlp b32", _K1, _EST), [1.2, 1.4])
    self.assertEqual(vs215_table._fmt_ratios([1.2, 1.4]),
                     "1.30x (1.20-1.40; 1.20, 1.40)")
    text = self._render(runs)
    self.assertIn("**Rounds 2 started louder", text)
    self.assertIn("| mlp b32 | harness K=1 >= 1.0x tf.estimator 2.15 | "
                  "1.30x", text)

  def test_programs_cases_and_runners(self):
    names = [c.flag_name for c in vs215.CASES]
    self.assertIn("census_csv_b256", names)
    program = next(c for c in vs215.CASES if c.is_program)
    network = next(c for c in vs215.CASES if c.model == "cnn")
    runners = {r.label: r for r in vs215.RUNNERS}
    self.assertFalse(runners["tf 2.15 bare loop"].applies_to(program))
    self.assertTrue(runners["harness K=1 as_written"].applies_to(program))
    self.assertTrue(runners["harness K=auto xla"].applies_to(network))
    self.assertFalse(runners["harness K=auto xla"].applies_to(program))
    text = self._render([_round(False, 12.0)])
    self.assertIn("| census_csv b256 | n/a |", text)
    self.assertIn("| census_csv b256 | harness K=auto >= 1.5x "
                  "tf.estimator 2.15 |", text)

  def test_no_quiet_round_reports_no_figures(self):
    text = self._render([_round(True, 12.0)])
    self.assertIn("No round started quiet", text)
    self.assertNotIn("| mlp b32 |", text)

  def test_wait_for_quiet_is_bounded(self):
    with mock.patch.object(vs215.os, "getloadavg", return_value=(3.0, 0, 0)):
      self.assertEqual(vs215.wait_for_quiet(1.5, 0.0, poll_secs=0.0),
                       (False, 3.0))
    with mock.patch.object(vs215.os, "getloadavg", return_value=(0.4, 0, 0)):
      self.assertEqual(vs215.wait_for_quiet(1.5, 10.0), (True, 0.4))


if __name__ == "__main__":
  absltest.main()
