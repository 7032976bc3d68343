"""The binary and a Python RunConfig given the same TF_CONFIG reach the same
plan (harness.plan.plan_task, below both doors)."""

import dataclasses
import json
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized

from harness import cluster as cluster_lib
from harness import errors
from harness import run_config as run_config_lib
from harness import plan as task_plan
from harness.cli import flags
from harness.distribute import strategies
from harness.state import paths

_CLUSTER = {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"],
            "ps": ["127.0.0.1:2224"], "evaluator": ["127.0.0.1:2225"]}
_MASTER = {"master": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"],
           "ps": ["127.0.0.1:2224"]}
_TRAINERS = {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}
_JOBSET = {"HARNESS_JOBSET_NAME": "j", "HARNESS_JOBSET_TASKS": json.dumps(
    {"chief": 1, "worker": 1}), "HARNESS_JOBSET_PORT": "2222",
           "HARNESS_JOBSET_REPLICATED_JOB": "worker",
           "HARNESS_JOBSET_JOB_INDEX": "0", "HARNESS_JOBSET_POD_INDEX": "0"}


def _tf_config(cluster, task_type, index=0):
  return {"TF_CONFIG": json.dumps({
      "cluster": cluster, "task": {"type": task_type, "index": index},
      "model_dir": "/shared/m"})}


class BothDoorsTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("chief", _tf_config(_CLUSTER, "chief"), "parameter_server",
       task_plan.Role.TRAINER, "chief/0"),
      ("worker", _tf_config(_CLUSTER, "worker"), "parameter_server",
       task_plan.Role.TRAINER, "worker/0"),
      ("ps", _tf_config(_CLUSTER, "ps"), "parameter_server",
       task_plan.Role.PS, "ps/0"),
      ("evaluator", _tf_config(_CLUSTER, "evaluator"), "parameter_server",
       task_plan.Role.EVALUATOR, "evaluator/0"),
      ("master", _tf_config(_MASTER, "master"), "default",
       task_plan.Role.TRAINER, "master/0"),
      ("evaluator_only", _tf_config(_TRAINERS, "evaluator"), "collective",
       task_plan.Role.EVALUATOR, "evaluator/0"),
      ("collective_worker", _tf_config(_TRAINERS, "worker"), "collective",
       task_plan.Role.TRAINER, "worker/0"))
  def test_same_plan(self, environ, strategy, role, label):
    binary = flags.parse(
        ["--model_fn=linear", "--input_fn=constant", f"--strategy={strategy}"],
        environ=environ, gpu_count=lambda: 0).plan
    config = run_config_lib.RunConfig(
        train_distribute=strategies.make_strategy(
            strategy, num_devices_per_worker=1, device_type="CPU"),
        environ=environ)
    self.assertEqual(config.plan, binary)
    self.assertEqual((binary.role, binary.task_label), (role, label))
    self.assertEqual((config.task_label, config.is_chief),
                     (label, binary.is_chief))
    self.assertEqual(binary.model_dir_source, paths.FROM_TF_CONFIG)

  def test_same_plan_from_a_jobset_pod(self):
    binary = flags.parse(
        ["--model_fn=linear", "--input_fn=constant", "--strategy=collective",
         "--model_dir=/shared/m"], environ=_JOBSET, gpu_count=lambda: 0).plan
    config = run_config_lib.RunConfig(
        model_dir="/shared/m", environ=_JOBSET,
        train_distribute=strategies.make_strategy(
            "collective", num_devices_per_worker=1, device_type="CPU"))
    # The one difference: where each door was given the model_dir.
    self.assertEqual((binary.model_dir_source, config.plan.model_dir_source),
                     (paths.FROM_ARGUMENT, paths.FROM_RUN_CONFIG))
    self.assertEqual(dataclasses.replace(
        config.plan, model_dir_source=paths.FROM_ARGUMENT), binary)
    self.assertEqual(binary.task_label, "worker/0")

  def test_run_config_takes_the_binary_s_plan_as_it_is(self):
    environ = _tf_config(_CLUSTER, "worker")
    binary = flags.parse(
        ["--model_fn=linear", "--input_fn=constant",
         "--strategy=parameter_server"],
        environ=environ, gpu_count=lambda: 0).plan
    strategy = strategies.make_strategy("parameter_server")
    with mock.patch.object(cluster_lib, "validate") as validate:
      config = run_config_lib.RunConfig(train_distribute=strategy, plan=binary)
      run_config_lib.check_supported_config(config)
    validate.assert_not_called()  # Planned once, by the binary.
    self.assertEqual(config.plan, binary)
    self.assertEqual((config.model_dir, config.task_label, config.is_chief),
                     ("/shared/m", "worker/0", False))
    with self.assertRaisesRegex(errors.ConfigError, "not both"):
      run_config_lib.RunConfig(model_dir="/other", plan=binary)


if __name__ == "__main__":
  absltest.main()
