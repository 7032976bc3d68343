"""Tests of harness.cli.flags: parse, validators, spellings, params, to_argv."""

import dataclasses
import io
import json
import sys
import textwrap
from unittest import mock

from absl import flags as absl_flags
from absl.testing import absltest
from absl.testing import parameterized

from harness import errors
from harness import plan as task_plan
from harness.cli import flag_parsers
from harness.cli import flags
from harness.cli import job as job_lib
from harness.cli import job_config
from harness.cli import plan as plan_lib

_BASE = ["harness.main", "--model_fn=linear", "--input_fn=constant"]
_TF_CONFIG_2_WORKERS = json.dumps({
    "cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]},
    "task": {"type": "worker", "index": 1}})
_TF_CONFIG_PS = json.dumps({
    "cluster": {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"],
                "ps": ["127.0.0.1:2224"]},
    "task": {"type": "worker", "index": 0}})


def _parsed(*args, environ=None, gpus=0):
  return flags.parse(_BASE + list(args), environ=environ or {},
                     gpu_count=lambda: gpus)


def _parse(*args, environ=None, gpus=0):
  return _parsed(*args, environ=environ, gpus=gpus).job


def _problems(*args, environ=None, gpus=0):
  try:
    _parse(*args, environ=environ, gpus=gpus)
  except errors.FlagError as e:
    return str(e)
  raise AssertionError(f"parse({args}) raised no FlagError")


class ParseTest(parameterized.TestCase):

  def test_defaults_match_job_config(self):
    job = _parse()
    expected = job_config.JobConfig(model_fn="linear", input_fn="constant",
                                 batch_size=10)  # constant's default batch.
    self.assertEqual(job, expected)

  def test_values_are_typed(self):
    job = _parse("--max_steps", "20", "--eval_steps=0", "--model_dir=/tmp/m",
                 "--exporters=latest,final", "--save_checkpoints_steps=5",
                 "--cpu_stand_in", "--nodry_run", "--mode=evaluate",
                 "--tf_random_seed=7", "--verbosity=quiet")
    self.assertEqual(job.max_steps, 20)
    self.assertIsNone(job.eval_steps)  # 0: the whole eval input.
    self.assertEqual(job.model_dir, "/tmp/m")
    self.assertEqual(job.exporters, ("latest", "final"))
    self.assertEqual(job.save_checkpoints_steps, 5)
    self.assertIsNone(job.save_checkpoints_secs)
    self.assertTrue(job.cpu_stand_in)
    self.assertFalse(job.dry_run)
    self.assertEqual((job.mode, job.tf_random_seed, job.verbosity),
                     ("evaluate", 7, "quiet"))

  def test_every_bad_flag_is_reported_at_once(self):
    message = _problems(
        "--max_steps=-3", "--batch_size=abc", "--strategy=warp_drive",
        "--exporters=latest,worst", "--bogus_flag=1",
        "--keep_checkpoint_max=-1",
        "--save_checkpoints_steps=10", "--save_checkpoints_secs=60",
        "--mode=dance", "stray", "--throttle_secs")
    for expected in (
        "flag --max_steps=-3: must be >= 1",
        "flag --batch_size=abc:",
        "flag --strategy=warp_drive: unknown strategy",
        "flag --exporters=['latest', 'worst']: unknown exporter(s) ['worst']",
        "flag --bogus_flag: unknown flag",
        "flag --keep_checkpoint_max=-1: must be >= 0",
        "save_checkpoints_steps=10, save_checkpoints_secs=60: are mutually "
        "exclusive",
        "flag --mode=dance:",
        "flag --throttle_secs: needs a value",
        "unexpected arguments ['stray']"):
      self.assertIn(expected, message)
    self.assertIn("10 problem(s)", message)

  def test_empty_paths(self):
    message = _problems("--model_dir=", "--data_dir= ")
    self.assertIn("flag --model_dir=: is empty", message)
    self.assertIn("flag --data_dir= : is empty", message)

  def test_unknown_flag_suggests_the_near_one(self):
    self.assertIn("Did you mean --max_steps", _problems("--max_step=5"))

  def test_missing_value_is_reported(self):
    self.assertIn("flag --model_dir: needs a value", _problems("--model_dir"))

  def test_first_argument_without_dash_is_the_program(self):
    self.assertEqual(flags.parse(_BASE[1:], environ={}),
                     flags.parse(_BASE, environ={}))

  def test_does_not_touch_absl_global_flags(self):
    before = absl_flags.FLAGS["verbosity"].value
    self.assertEqual(_parse("--verbosity=debug").verbosity, "debug")
    self.assertEqual(absl_flags.FLAGS["verbosity"].value, before)

  def test_flag_names_are_the_job_config_fields(self):
    # Every field (the job's plan travels beside it, not in it).
    self.assertEqual(job_config.FLAG_NAMES,
                     tuple(f.name for f in dataclasses.fields(
                         job_config.JobConfig)))
    text = flags.help_text()
    for name in job_config.FLAG_NAMES:
      self.assertRegex(text, rf"--(\[no\])?{name}:")


class StrategyTest(parameterized.TestCase):

  @parameterized.parameters(
      ("mirrored", "mirrored"), ("mirrored_strategy", "mirrored"),
      ("MirroredStrategy", "mirrored"),
      ("multi_worker_mirrored", "collective"),
      ("multiworkermirrored", "collective"),
      ("MultiWorkerMirroredStrategy", "collective"),
      ("tf.distribute.MultiWorkerMirroredStrategy", "collective"),
      ("collective", "collective"), ("ps", "parameter_server"),
      ("parameter-server", "parameter_server"),
      ("ParameterServerStrategyV1", "parameter_server"),
      ("central_storage", "central_storage"),
      ("CentralStorageStrategy", "central_storage"),
      ("OneDevice", "one_device"), ("none", "default"),
      ("DEFAULT", "default"))
  def test_spellings(self, spelling, kind):
    self.assertEqual(flag_parsers.normalize_strategy(spelling), kind)

  def test_typo_gets_a_suggestion(self):
    self.assertIn("Did you mean 'mirrored'", _problems("--strategy=mirorred"))

  def test_spelling_through_parse(self):
    job = _parse("--strategy=MultiWorkerMirroredStrategy")
    self.assertEqual(job.strategy, "collective")

  def test_parameter_server_needs_a_cluster(self):
    self.assertIn('needs a cluster with a "ps" job',
                  _problems("--strategy=ps"))
    job = _parse("--strategy=ps", "--model_dir=/tmp/m",
                 environ={"TF_CONFIG": _TF_CONFIG_PS})
    self.assertEqual(job.strategy, "parameter_server")

  def test_one_device_strategy_with_two_gpus(self):
    self.assertIn("one_device strategy trains on one device",
                  _problems("--strategy=one_device", "--num_gpus_per_worker=2",
                            "--cpu_stand_in"))


class ParamsTest(absltest.TestCase):

  def _user_model(self):
    """A package.module:function model_fn with varied DEFAULT_PARAMS."""
    directory = self.create_tempdir()
    name = f"user_model_{id(self)}"
    directory.create_file(f"{name}.py", textwrap.dedent("""\
        DEFAULT_PARAMS = {"use_bias": True, "units": [8, 4], "rate": 0.1,
                          "steps": 3, "name": "net", "anything": None}

        def model_fn(features, labels, mode, params):
          raise NotImplementedError
        """))
    sys.path.insert(0, directory.full_path)
    self.addCleanup(sys.path.remove, directory.full_path)
    return f"{name}:model_fn"

  def test_key_value_coerced_to_default_types(self):
    job = _parse("--params=learning_rate=1,optimizer=adam,num_examples=7")
    self.assertEqual(job.params, {"learning_rate": 1.0, "optimizer": "adam",
                                  "num_examples": 7})
    self.assertIsInstance(job.params["learning_rate"], float)

  def test_json_and_user_model(self):
    model = self._user_model()
    job = flags.parse(_BASE + [
        f"--model_fn={model}",
        '--params={"use_bias": false, "units": [2, 3], "rate": 1, '
        '"anything": {"a": 1}, "num_examples": 4}'], environ={}).job
    self.assertEqual(job.params, {"use_bias": False, "units": [2, 3],
                                  "rate": 1.0, "anything": {"a": 1},
                                  "num_examples": 4})
    job = flags.parse(_BASE + [f"--model_fn={model}",
                               "--params=use_bias=no,units=[5],steps=9"],
                      environ={}).job
    self.assertEqual(job.params, {"use_bias": False, "units": [5],
                                  "steps": 9})

  def test_bad_values_and_unknown_keys_all_reported(self):
    message = _problems("--params=learning_rate=fast,num_examples=2.5,lr=1")
    self.assertIn("learning_rate='fast' is not float", message)
    self.assertIn("num_examples='2.5' is not int", message)
    self.assertIn("unknown key 'lr'. Valid keys (model_fn 'linear', input_fn "
                  "'constant'): learning_rate, num_examples, optimizer.",
                  message)

  def test_many_unknown_keys_are_one_short_problem(self):
    many = json.dumps({f"k{i}": i for i in range(1000)})
    message = _problems(f"--params={many}")
    self.assertLess(len(message), 1000, message)
    self.assertEqual(message.count("unknown key"), 1, message)
    self.assertIn("unknown keys 'k0', 'k1', ", message)
    self.assertIn("'k9' (and 990 more). Valid keys", message)

  def test_list_params_say_named_values(self):
    self.assertIn("--params=[1,2]: a JSON list, but --params takes named "
                  "values. Fix: ", _problems("--params=[1,2]"))

  def test_malformed_params(self):
    self.assertIn("'learning_rate' is not key=value",
                  _problems("--params=learning_rate"))
    self.assertIn("not valid JSON", _problems("--params={bad"))

  def test_unknown_model_fn_is_reported_with_other_problems(self):
    message = _problems("--model_fn=no_such_model", "--max_steps=-1")
    self.assertIn("flag --model_fn=no_such_model:", message)
    self.assertIn("flag --max_steps=-1:", message)


class EnvironmentTest(absltest.TestCase):

  def test_gpus_missing_without_cpu_stand_in(self):
    message = _problems("--strategy=mirrored", "--num_gpus_per_worker=2",
                        gpus=0)
    self.assertIn("flag --num_gpus_per_worker=2: this machine has 0 visible "
                  "GPU(s). Fix: pass --cpu_stand_in", message)

  def test_cpu_stand_in_and_real_gpus(self):
    job = _parse("--strategy=mirrored", "--num_gpus_per_worker=2",
                 "--cpu_stand_in", gpus=0)
    self.assertEqual((job.device_type, job.num_devices_per_worker), ("CPU", 2))
    job = _parse("--strategy=mirrored", "--num_gpus_per_worker=2", gpus=2)
    self.assertEqual((job.device_type, job.num_devices_per_worker), ("GPU", 2))

  def test_run_job_plans_a_parsed_job_once_and_others_itself(self):
    job, parsed_plan = _parsed("--max_steps=1", "--dry_run")
    self.assertIsInstance(parsed_plan, task_plan.TaskPlan)
    built = job_config.JobConfig(max_steps=2, dry_run=True)
    copy = dataclasses.replace(job, max_steps=2)
    # Planned by run_job, from its environ (a copy's facts may differ).
    with mock.patch.object(plan_lib, "plan_with_problems",
                           wraps=plan_lib.plan_with_problems) as plan:
      job_lib.run_job(job, plan=parsed_plan, environ={}, out=io.StringIO())
      plan.assert_not_called()
      job_lib.run_job(built, environ={}, out=io.StringIO())
      job_lib.run_job(copy, environ={}, out=io.StringIO())
      self.assertEqual(plan.call_count, 2)

  def test_a_job_built_in_code_that_does_not_fit_is_refused(self):
    job = job_config.JobConfig(strategy="collective", dry_run=True)
    environ = {"TF_CONFIG": _TF_CONFIG_2_WORKERS}
    with self.assertRaisesRegex(errors.ConfigError,
                                "flag --model_dir: not given"):
      job_lib.run_job(job, environ=environ, out=io.StringIO())

  def test_visible_gpu_count_honours_cuda_visible_devices(self):
    self.assertEqual(flags.visible_gpu_count({"CUDA_VISIBLE_DEVICES": ""}), 0)
    self.assertEqual(flags.visible_gpu_count({"CUDA_VISIBLE_DEVICES": "-1"}),
                     0)

  def test_bad_tf_config_reported_with_bad_flags(self):
    message = _problems("--max_steps=-1", environ={"TF_CONFIG": "{'a': 1}"})
    self.assertIn("TF_CONFIG is not valid JSON", message)
    self.assertIn("flag --max_steps=-1", message)

  def test_task_outside_cluster(self):
    config = json.dumps({"cluster": {"worker": ["127.0.0.1:2222"]},
                         "task": {"type": "worker", "index": 3}})
    message = _problems("--strategy=collective", "--model_dir=/m",
                        environ={"TF_CONFIG": config})
    self.assertIn('cluster["worker"] has 1 addresses', message)

  def test_cluster_needs_a_shared_model_dir(self):
    message = _problems("--strategy=collective",
                        environ={"TF_CONFIG": _TF_CONFIG_2_WORKERS})
    self.assertIn("flag --model_dir: not given, and TF_CONFIG names a "
                  "cluster", message)

  def test_global_batch_divides_over_replicas_of_the_cluster(self):
    environ = {"TF_CONFIG": _TF_CONFIG_2_WORKERS}
    message = _problems("--strategy=collective", "--model_dir=/m",
                        "--batch_size=7", environ=environ)
    self.assertIn("flag --batch_size=7: the global batch does not divide "
                  "evenly over 2 replicas", message)
    job, plan = _parsed("--strategy=collective", "--model_dir=/m",
                        "--batch_size=8", environ=environ)
    self.assertEqual(plan.replicas, 2)
    self.assertIn("global 8, per replica 4", job_lib.describe(job, plan))

  def test_remote_cluster(self):
    job = _parse("--strategy=ps",
                 "--remote_cluster=worker=127.0.0.1:2222,127.0.0.1:2223;"
                 "ps=127.0.0.1:2224")
    self.assertEqual(job.remote_cluster, {
        "worker": ["127.0.0.1:2222", "127.0.0.1:2223"],
        "ps": ["127.0.0.1:2224"]})
    self.assertIn("a remote cluster is driven through a strategy",
                  _problems("--remote_cluster=worker=127.0.0.1:2222"))
    self.assertIn("TF_CONFIG also names a cluster", _problems(
        "--strategy=collective", "--remote_cluster=worker=127.0.0.1:2222",
        "--model_dir=/m", environ={"TF_CONFIG": _TF_CONFIG_2_WORKERS}))
    self.assertIn("flag --remote_cluster=worker=nohost:", _problems(
        "--strategy=collective", "--remote_cluster=worker=nohost"))


class ToArgvTest(parameterized.TestCase):

  @parameterized.parameters(
      ([],),
      (["--max_steps=7", "--eval_steps=0", "--exporters=best,latest",
        "--params=learning_rate=0.125,optimizer=adam", "--cpu_stand_in",
        "--num_gpus_per_worker=2", "--strategy=central_storage",
        "--save_checkpoints_secs=30", "--tf_random_seed=3", "--dry_run",
        "--model_dir=/tmp/a b", "--data_dir=/data", "--mode=train"],),
      (['--params={"optimizer": "a,b", "learning_rate": 2}',
        "--strategy=parameter_server", "--start_delay_secs=5",
        "--remote_cluster={\"worker\": [\"127.0.0.1:5\"], \"ps\": "
        "[\"127.0.0.1:6\"]}", "--eval_idle_timeout_secs=60",
        "--verbosity=debug", "--steps_per_loop=4"],))
  def test_round_trip(self, args):
    job = _parse(*args)
    argv = flags.to_argv(job)
    self.assertEqual(
        flags.parse(argv, environ={}, gpu_count=lambda: 0).job, job)
    self.assertTrue(all(a.startswith("--") for a in argv), argv)

  def test_only_non_defaults(self):
    self.assertEqual(flags.to_argv(_parse("--max_steps=5")),
                     ["--model_fn=linear", "--input_fn=constant",
                      "--max_steps=5", "--batch_size=10"])


if __name__ == "__main__":
  absltest.main()
