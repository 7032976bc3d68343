"""The knobs with an environment fallback: the table's fields with `env`,
resolved once by the plan (harness/plan/knobs.py). No TensorFlow."""

from unittest import mock

from absl.testing import absltest

from harness import errors
from harness import fields
from harness import plan as plan_lib
from harness.cluster import env_knobs
from harness.plan import knobs


def _entry(name, env, default):
  return fields.Field(
      name=name, default=None, type=float | None, check=lambda value: None,
      doc="a test knob.", flag=fields.Flag(kind="secs", help="A test knob."),
      env=env_knobs.Knob(name=name, env=env, default=default))


class KnobsTest(absltest.TestCase):

  def test_the_knobs_are_the_table_s_fields_with_env(self):
    self.assertEqual(knobs.NAMES, tuple(
        f.name for f in fields.FIELDS if f.env is not None))
    self.assertContainsSubset(("peer_timeout_secs", "restart_wait_secs"),
                              knobs.NAMES)

  def test_value_then_variable_then_default(self):
    problems = []
    values, attempt = knobs.resolve(
        {"peer_timeout_secs": 5}, {"HARNESS_RESTART_WAIT_SECS": "7",
                                   "JOBSET_RESTART_ATTEMPT": "2"}, problems)
    self.assertEqual((values["peer_timeout_secs"],
                      values["restart_wait_secs"], attempt, problems),
                     (5.0, 7.0, 2, []))
    values, attempt = knobs.resolve({}, {}, problems)
    self.assertEqual(values, {f.name: f.env.default
                              for f in knobs.KNOB_FIELDS})
    self.assertEqual((values["peer_timeout_secs"],
                      values["restart_wait_secs"], attempt, problems),
                     (60.0, 600.0, None, []))

  def test_a_bad_variable_is_a_problem_of_run_config_its_default_taken(self):
    plan = plan_lib.plan_task(None, environ={
        "HARNESS_PEER_TIMEOUT_SECS": "soon", "JOBSET_RESTART_ATTEMPT": "-1"})
    self.assertEqual(plan.knobs["peer_timeout_secs"], 60.0)
    self.assertEqual([(p.stage, p.rule) for p in plan.problems],
                     [(plan_lib.Stage.RUN_CONFIG, "peer_timeout_secs"),
                      (plan_lib.Stage.RUN_CONFIG, plan_lib.RESTART_ATTEMPT)])
    with self.assertRaisesRegex(errors.ConfigError,
                                "HARNESS_PEER_TIMEOUT_SECS='soon'"):
      plan_lib.raise_problem(plan, plan_lib.Stage.RUN_CONFIG)

  def test_a_new_entry_is_resolved_with_no_other_edit(self):
    entry = _entry("ps_exit_grace_secs", "HARNESS_PS_EXIT_GRACE_SECS", 30.0)
    with mock.patch.object(knobs, "KNOB_FIELDS", knobs.KNOB_FIELDS + (
        entry,)):
      given = plan_lib.plan_task(
          None, environ={}, knob_values={"ps_exit_grace_secs": 4})
      from_variable = plan_lib.plan_task(
          None, environ={"HARNESS_PS_EXIT_GRACE_SECS": "9"})
      default = plan_lib.plan_task(None, environ={})
    self.assertEqual([p.knobs["ps_exit_grace_secs"]
                      for p in (given, from_variable, default)],
                     [4.0, 9.0, 30.0])

  def test_a_knob_named_unlike_its_field_is_refused(self):
    with self.assertRaisesRegex(ValueError, "name the Knob 'x_secs'"):
      fields.Field(name="x_secs", default=None, type=float | None,
                   check=lambda value: None, doc="x.",
                   flag=fields.Flag(kind="secs", help="X."),
                   env=env_knobs.PEER_TIMEOUT)


if __name__ == "__main__":
  absltest.main()
