"""harness.fields: each harness RunConfig field declared once, and read.

The table (`harness/fields/table.py`) is the one declaration; these tests
show RunConfig's signature, properties, `replace()` and checks, the
binary's JobConfig, `run_config_kwargs` and flags all agree with it.
"""

import inspect
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized

from harness import errors
from harness import fields
from harness.cli import flag_definitions
from harness.cli import job_config
from harness.cli import plan as plan_lib
from harness.run_config import RunConfig
from tests import conftest

# A value each field's check refuses, and one it accepts that is not the
# binary's default (for the JobConfig -> RunConfig path).
_BAD = {
    "steps_per_loop": 0, "remote_connect_timeout_secs": 0,
    "eval_poll_secs": 0, "eval_idle_timeout_secs": -1,
    "peer_timeout_secs": 0, "restart_wait_secs": -5,
    "force_takeover": "yes", "bind_address": "10.0.0.1",
    "remote_claim_timeout_secs": 0, "max_runs_without_progress": 0,
    "stop_timeout_secs": 0, "input_timeout_secs": 0, "input_report_secs": -1, "metrics_port": 70000,
    "metrics_bind": "", "input_pipeline": "fast", "ps_placement": "even",
    "xla": 1,
}
_GOOD = {
    "steps_per_loop": 3, "remote_connect_timeout_secs": 7,
    "eval_poll_secs": 2.5, "eval_idle_timeout_secs": 30,
    "peer_timeout_secs": 5.0, "restart_wait_secs": 9.0,
    "force_takeover": True, "bind_address": "*",
    "remote_claim_timeout_secs": 4, "max_runs_without_progress": 7,
    "stop_timeout_secs": 3, "input_timeout_secs": 11, "input_report_secs": 2,
    "metrics_port": 9464, "metrics_bind": "0.0.0.0",
    "input_pipeline": fields.AS_WRITTEN, "ps_placement": fields.BY_SIZE,
    "xla": True,
}


class TableTest(absltest.TestCase):

  def test_the_test_values_cover_the_table(self):
    self.assertCountEqual(_BAD, fields.NAMES)
    self.assertCountEqual(_GOOD, fields.NAMES)

  def test_run_config_signature_is_the_tables(self):
    params = inspect.signature(RunConfig).parameters.values()
    keyword_only = [p for p in params if p.kind == p.KEYWORD_ONLY]
    own = [p for p in keyword_only
           if p.name not in ("environ", "plan")]
    self.assertEqual([p.name for p in own], list(fields.NAMES))
    for param in own:
      self.assertEqual(param.default, fields.default(param.name), param.name)

  def test_run_config_properties_and_docs_come_from_the_table(self):
    config = RunConfig(environ={})
    for field in fields.FIELDS:
      expected = field.env.default if field.env else field.default
      self.assertEqual(getattr(config, field.name), expected, field.name)
      self.assertIn(f"      {field.name}: ", RunConfig.__init__.__doc__)

  def test_each_check_refuses_through_run_config_and_replace(self):
    config = RunConfig(environ={})
    for field in fields.FIELDS:
      bad = _BAD[field.name]
      with self.subTest(field=field.name):
        with self.assertRaises(errors.HarnessError) as own:  # bind_address:
          field.check(bad)  # NotSupportedError, as RunConfig raised it.
        self.assertIn(field.name, str(own.exception))
        with self.assertRaises(type(own.exception)) as built:
          RunConfig(environ={}, **{field.name: bad})
        self.assertEqual(str(built.exception), str(own.exception))
        with self.assertRaises(type(own.exception)) as replaced:
          config.replace(**{field.name: bad})
        self.assertEqual(str(replaced.exception), str(own.exception))

  def test_replace_takes_every_field(self):
    config = RunConfig(environ={}).replace(**_GOOD)
    for name, value in _GOOD.items():
      self.assertEqual(getattr(config, name), value, name)
    with self.assertRaisesRegex(errors.ConfigError, "Replacing not_a_field"):
      config.replace(not_a_field=1)


class BinaryTest(absltest.TestCase):

  def test_job_config_fields_and_defaults_come_from_the_table(self):
    for field in fields.FIELDS:
      self.assertIn(field.name, job_config.FLAG_NAMES)
      self.assertEqual(getattr(job_config.DEFAULTS, field.name),
                       field.flag_default, field.name)
    self.assertEqual(job_config.DEFAULTS.steps_per_loop,
                     fields.STEPS_PER_LOOP_AUTO)  # The binary's own default.

  def test_flags_come_from_the_table(self):
    for field in fields.FIELDS:
      flag = flag_definitions.FLAG_VALUES[field.name]
      self.assertEqual(flag.default, field.flag_default, field.name)
      self.assertIn(field.flag.help, flag.help, field.name)
    self.assertIn("$HARNESS_PEER_TIMEOUT_SECS",
                  flag_definitions.FLAG_VALUES["peer_timeout_secs"].help)

  def test_run_config_kwargs_take_the_job_and_the_plans_knobs(self):
    job = job_config.JobConfig(**dict(_GOOD, peer_timeout_secs=None))
    plan = plan_lib.plan_job(job, environ={
        "HARNESS_PEER_TIMEOUT_SECS": "42"})
    kwargs = job_config.run_config_kwargs(job, plan)
    self.assertEqual(kwargs["peer_timeout_secs"], 42.0)  # The variable.
    self.assertEqual(kwargs["remote_connect_timeout_secs"], 7.0)
    self.assertIsInstance(kwargs["remote_connect_timeout_secs"], float)
    for name in set(_GOOD) - {"peer_timeout_secs"}:
      self.assertEqual(kwargs[name], _GOOD[name], name)
    config = RunConfig(environ={}, **kwargs)
    self.assertEqual(config.peer_timeout_secs, 42.0)
    self.assertEqual(config.input_pipeline, fields.AS_WRITTEN)


class TensorFlowFreeTest(parameterized.TestCase):

  @parameterized.parameters("harness.fields", "harness.cli.flag_definitions")
  def test_import_loads_no_tensorflow(self, module):
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; print(sorted(m for m "
         "in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', "
         "'tf_keras')))"],
        capture_output=True, text=True, timeout=120,
        env=conftest.child_env(), cwd=conftest.REPO_ROOT, check=False)
    self.assertEqual((proc.returncode, proc.stdout), (0, "[]\n"),
                     proc.stderr[-1500:])


if __name__ == "__main__":
  absltest.main()
