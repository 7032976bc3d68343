"""The job's TaskPlan: its facts decided once at the door, every problem
reported together (harness.cli.plan)."""

import io
import json
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized

from harness import cluster as cluster_lib
from harness import errors
from harness import plan as task_plan
from harness.cli import flags
from harness.cli import job as job_lib
from harness.cli import job_config
from harness.cli import plan as plan_lib
from harness.state import paths

_BASE = ["harness.main", "--model_fn=linear", "--input_fn=constant"]
_CHIEF_AND_WORKER = {"chief": ["127.0.0.1:2222"],
                     "worker": ["127.0.0.1:2223"]}
_PS_CLUSTER = {**_CHIEF_AND_WORKER, "ps": ["127.0.0.1:2224"],
               "evaluator": ["127.0.0.1:2225"]}


def _environ(cluster, task_type, index=0, **extra):
  return {"TF_CONFIG": json.dumps(
      {"cluster": cluster, "task": {"type": task_type, "index": index},
       **extra})}


def _parse(*args, environ=None):
  return flags.parse(_BASE + list(args), environ=environ or {},
                     gpu_count=lambda: 0)


def _problems(*args, environ=None):
  try:
    _parse(*args, environ=environ)
  except errors.FlagError as e:
    return str(e)
  raise AssertionError(f"parse({args}) raised no FlagError")


class PlanFactsTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("chief", "chief", 0, task_plan.Role.TRAINER, "chief/0"),
      ("worker", "worker", 0, task_plan.Role.TRAINER, "worker/0"),
      ("ps", "ps", 0, task_plan.Role.PS, "ps/0"),
      ("evaluator", "evaluator", 0, task_plan.Role.EVALUATOR, "evaluator/0"))
  def test_role_and_label_of_each_task(self, task_type, index, role, label):
    job = _parse("--strategy=parameter_server", "--model_dir=/m",
                 environ=_environ(_PS_CLUSTER, task_type, index))
    self.assertEqual((job.plan.role, job.plan.task_label), (role, label))
    self.assertEqual(job.plan.cluster_info.task_type, task_type)
    self.assertTrue(job.plan.role.in_cluster)

  def test_local_and_client(self):
    local = _parse().plan
    self.assertEqual((local.role, local.task_label, local.cluster_info,
                      local.role.in_cluster),
                     (task_plan.Role.LOCAL, "local", None, False))
    client = _parse("--strategy=collective",
                    "--remote_cluster=worker=127.0.0.1:2222,127.0.0.1:2223"
                    ).plan
    self.assertEqual((client.role, client.task_label, client.replicas),
                     (task_plan.Role.CLIENT, "client", 2))
    self.assertEqual(client.remote_cluster,
                     {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]})

  def test_model_dir_and_where_it_came_from(self):
    self.assertEqual(
        (_parse("--model_dir=/a/b").plan.model_dir,
         _parse("--model_dir=/a/b").plan.model_dir_source),
        ("/a/b", paths.FROM_ARGUMENT))
    from_tf_config = _parse(
        "--strategy=collective",
        environ=_environ(_CHIEF_AND_WORKER, "worker", model_dir="/shared"))
    self.assertEqual((from_tf_config.plan.model_dir,
                      from_tf_config.plan.model_dir_source),
                     ("/shared", paths.FROM_TF_CONFIG))
    self.assertEqual((_parse().plan.model_dir,
                      _parse().plan.model_dir_source),
                     (None, paths.FROM_NOTHING))

  def test_replicas_of_the_strategy_on_its_cluster(self):
    environ = _environ(_CHIEF_AND_WORKER, "chief")
    self.assertEqual(_parse("--strategy=collective", "--model_dir=/m",
                            "--num_gpus_per_worker=2", "--cpu_stand_in",
                            "--batch_size=8", environ=environ).plan.replicas,
                     4)
    self.assertEqual(_parse("--strategy=mirrored", "--num_gpus_per_worker=3",
                            "--cpu_stand_in", "--batch_size=9"
                            ).plan.replicas, 3)
    self.assertEqual(_parse().plan.replicas, 1)

  def test_waiting_knobs_resolved_once(self):
    self.assertEqual(
        (_parse("--peer_timeout_secs=5").plan.knobs["peer_timeout_secs"],
         _parse(environ={"HARNESS_RESTART_WAIT_SECS": "7"}
                ).plan.knobs["restart_wait_secs"],
         _parse().plan.knobs["peer_timeout_secs"]),
        (5.0, 7.0, 60.0))
    # A knob without an environment fallback is the job's, not the plan's.
    self.assertNotIn("eval_poll_secs", _parse().plan.knobs)

  def test_plan_is_frozen(self):
    with self.assertRaises(AttributeError):
      _parse().plan.model_dir = "/elsewhere"  # pytype: disable=not-writable


class PlanProblemsTest(absltest.TestCase):

  def test_every_problem_together(self):
    message = _problems(
        "--strategy=mirrored", "--batch_size=7", "--num_gpus_per_worker=2",
        "--cpu_stand_in",
        environ={**_environ({"worker": ["127.0.0.1:2222",
                                        "127.0.0.1:2223"]}, "worker"),
                 "HARNESS_PEER_TIMEOUT_SECS": "soon"})
    for part in ("flag --batch_size=7: the global batch does not divide",
                 "flag --model_dir: not given, and TF_CONFIG names a cluster",
                 "a single-machine strategy, but the cluster has 2 training",
                 "HARNESS_PEER_TIMEOUT_SECS='soon' is not a number"):
      self.assertIn(part, message)
    self.assertIn("4 problem(s)", message)

  def test_remote_cluster_is_checked_against_the_strategy(self):
    message = _problems("--strategy=parameter_server",
                        "--remote_cluster=worker=127.0.0.1:2222")
    self.assertIn("flag --remote_cluster={\"worker\": [\"127.0.0.1:2222\"]}:"
                  " cluster ['worker'] has no \"ps\" job", message)

  def test_rules_run_once_per_parse(self):
    environ = _environ(_CHIEF_AND_WORKER, "chief")
    with mock.patch.object(cluster_lib, "validate",
                           wraps=cluster_lib.validate) as validate:
      _parse("--strategy=collective", "--model_dir=/m", environ=environ)
    validate.assert_called_once()

  def test_a_job_built_in_code_is_planned_the_same_way(self):
    job = job_config.JobConfig(strategy="collective", model_dir="/m")
    environ = _environ(_CHIEF_AND_WORKER, "chief")
    built = plan_lib.plan_job(job, environ=environ)
    parsed = _parse("--strategy=collective", "--model_dir=/m",
                    environ=environ).plan
    self.assertEqual(built, parsed)
    with self.assertRaisesRegex(errors.ConfigError,
                                "flag --model_dir: not given"):
      plan_lib.plan_job(job_config.JobConfig(strategy="collective"),
                         environ=environ)


  def test_cross_field_rules_refuse_a_job_built_in_code(self):
    # The flags' sentences, for a JobConfig that never saw a flag.
    for job, sentence in (
        (job_config.JobConfig(strategy="default", num_gpus_per_worker=4,
                              cpu_stand_in=True, dry_run=True),
         "flags strategy=default, num_gpus_per_worker=4: the default "
         "strategy trains on one device. Fix: --strategy=mirrored"),
        (job_config.JobConfig(remote_cluster={"worker": ["127.0.0.1:2222"]},
                              dry_run=True),
         "flags remote_cluster=worker=127.0.0.1:2222, strategy=default: a "
         "remote cluster is driven through a strategy. Fix: add "
         "--strategy=parameter_server")):
      with self.subTest(sentence[:40]):
        with self.assertRaises(errors.ConfigError) as raised:
          job_lib.run_job(job, environ={}, out=io.StringIO())
        self.assertIn(sentence, str(raised.exception))
        self.assertIn(sentence, _problems(*flags.to_argv(job)))


if __name__ == "__main__":
  absltest.main()
