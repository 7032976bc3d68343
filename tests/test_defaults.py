"""Each flag's default lives in one place: --help, README and the run agree.

For every flag of `python -m harness.main`: the flag's default, the value
`--help` prints, the `JobConfig` field, and what a run built from a command
line without that flag actually uses (the RunConfig, TrainSpec and EvalSpec
that `harness.cli.job` makes) must be the same value.
"""

import re

from absl.testing import absltest

from harness.cli import flags
from harness.cli import job_config
from harness.cli import plan as plan_lib
from harness import fields
import harness
from tests import conftest

# Flags whose run value is not a RunConfig/spec field (checked elsewhere).
_NOT_IN_CONFIG = {
    "model_fn", "input_fn", "params", "data_dir", "mode", "model_dir",
    "strategy", "num_gpus_per_worker", "cpu_stand_in", "remote_cluster",
    "batch_size", "exporters", "verbosity", "dry_run", "tensorboard",
    "tensorboard_keep", "predictions_file", "max_predictions",
    "keep_model_dir"}
# Flags whose None default means "the RunConfig/env default applies".
_NONE_MEANS = {
    "save_checkpoints_steps": None,  # RunConfig: secs-based saving.
    "save_checkpoints_secs": 600,
    "tf_random_seed": None,
    "eval_idle_timeout_secs": None,
    "bind_address": None,  # The host of the task's cluster address.
    "input_timeout_secs": None,  # Waits for the first batch.
    # A knob: its variable, else its default (the plan resolved it).
    **{f.name: f.env.default for f in fields.FIELDS if f.env is not None},
}


def _run_values(job):
  """{flag name: value the run uses} from the objects harness.cli.job builds."""
  plan = plan_lib.plan_job(job, environ={})
  config = harness.RunConfig(environ={},
                             **job_config.run_config_kwargs(job, plan))
  train_kwargs, eval_kwargs = job_config.spec_kwargs(job)
  train_spec = harness.TrainSpec(lambda: None, **train_kwargs)
  eval_spec = harness.EvalSpec(lambda: None, **eval_kwargs)
  values = {
      name: getattr(config, name) for name in (
          "tf_random_seed", "save_summary_steps", "keep_checkpoint_max",
          "log_step_count_steps", "save_checkpoints_steps",
          "save_checkpoints_secs", "session_creation_timeout_secs") +
      fields.NAMES}  # harness's own fields: the table's.
  values.update(max_steps=train_spec.max_steps, eval_steps=eval_spec.steps,
                throttle_secs=eval_spec.throttle_secs,
                start_delay_secs=eval_spec.start_delay_secs)
  return values


def _help_defaults():
  """{flag: the default text --help prints} (None when it prints none)."""
  text = flags.help_text()
  found = {}
  for block in re.split(r"\n  --", text)[1:]:
    name = re.match(r"(?:\[no\])?(\w+)", block).group(1)
    match = re.search(r"\(default: '([^']*)'\)", block)
    found[name] = match.group(1) if match else None
  return found


class DefaultsAgreeTest(absltest.TestCase):

  def test_flag_defaults_are_job_config_defaults(self):
    defaults = job_config.JobConfig()
    for name in job_config.FLAG_NAMES:
      with self.subTest(flag=name):
        flag_default = flags._FLAGS[name].default  # pylint: disable=protected-access
        field = getattr(defaults, name)
        if name == "exporters":
          flag_default = tuple(flag_default)
        self.assertEqual(flag_default, field)

  def test_help_prints_each_default(self):
    shown = _help_defaults()
    self.assertEqual(set(shown), set(job_config.FLAG_NAMES))
    for name in job_config.FLAG_NAMES:
      with self.subTest(flag=name):
        flag = flags._FLAGS[name]  # pylint: disable=protected-access
        if flag.default is None:
          self.assertIsNone(shown[name])
        else:
          self.assertEqual(shown[name], flag.default_as_str.strip("'"))

  def test_a_run_without_flags_uses_the_flag_defaults(self):
    job = flags.parse(["harness.main", "--model_fn=linear",
                       "--input_fn=constant"], environ={},
                      gpu_count=lambda: 0).job
    used = _run_values(job)
    for name in sorted(set(job_config.FLAG_NAMES) - _NOT_IN_CONFIG):
      with self.subTest(flag=name):
        flag_default = flags._FLAGS[name].default  # pylint: disable=protected-access
        expected = _NONE_MEANS[name] if flag_default is None else flag_default
        self.assertIn(name, used)
        self.assertEqual(used[name], expected)

  def test_none_defaults_are_what_help_says(self):
    text = " ".join(flags.help_text().split())
    secs = re.search(r"\(default (\d+) when neither is given\)", text)
    self.assertIsNotNone(secs, text)
    self.assertEqual(int(secs.group(1)),
                     harness.RunConfig(environ={}).save_checkpoints_secs)
    for knob in (f.env for f in fields.FIELDS if f.env is not None):
      self.assertIn(f"(default: ${knob.env}, else {knob.default:g})", text)

  def test_job_config_built_directly_runs_the_same_defaults(self):
    direct = _run_values(job_config.JobConfig())
    parsed = _run_values(flags.parse(["harness.main"], environ={},
                                     gpu_count=lambda: 0).job)
    self.assertEqual(direct, parsed)

  def test_throttle_secs_is_estimator_2_15s_default(self):
    # EvalSpec(throttle_secs=600) is tf.estimator's default; the flag and
    # the run take it from JobConfig, which says the same.
    self.assertEqual(harness.EvalSpec(lambda: None).throttle_secs,
                     flags._FLAGS["throttle_secs"].default)  # pylint: disable=protected-access

  def test_readme_defaults_table_matches_the_flags(self):
    readme = (conftest.REPO_ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `--(\w+)` \| ([^|]+) \|", readme, re.M)
    self.assertGreaterEqual(len(rows), 4, "README lost its defaults table")
    for name, text in rows:
      with self.subTest(flag=name):
        flag = flags._FLAGS[name]  # pylint: disable=protected-access
        expected = _NONE_MEANS.get(name) if flag.default is None else (
            flag.default)
        number = re.match(r"\s*([\d.]+)", text)
        if expected is None:
          self.assertIsNone(number, text)
        else:
          self.assertIsNotNone(number, text)
          self.assertEqual(float(number.group(1)), float(expected), text)


if __name__ == "__main__":
  absltest.main()
