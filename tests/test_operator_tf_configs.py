"""Every TF_CONFIG the operators inject, fed to harness's real parsers.

`tests/fixtures/tf_config/*.json` hold, per operator, the TF_CONFIG of
every task of a small job as the operator's own code (or documentation)
builds it, each file citing its source (repository, path, commit, or the
doc's address). Each task goes through:

* the door of `harness.main`: `cli/flags.parse` and its `TaskPlan` (role,
  task label), with TF_CONFIG's rules for the strategy;
* `harness.RunConfig` (task, chief, session master, training cluster);
* the server start of a task (`distribute/roles.prepare_task`, which the
  chief / worker / master / ps runners call), a recording class standing in
  for `tf.distribute.Server` the way tf.estimator's own tests stood one in;
* the peer wait before a training session (`guard/preemption.TrainingGuard`,
  with a recording probe in place of `guard/peer_wait.probe`).

Where harness refuses a form (as tf.estimator 2.15 did), the refusal names
the rule and the fix. The docs table of these forms is in docs/REMOTE.md.
"""

import json
import os
import pathlib
import sys
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized

import harness
from harness import errors
from harness import plan as task_plan
from harness._tf import tf
from harness.cli import flags
from harness.cluster import tf_config_checks
from harness.core import train_loop
from harness.distribute import roles
from harness.distribute import strategies
from harness.guard import peer_wait
from harness.guard import preemption

_FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "tf_config"
_BASE = ["harness.main", "--model_fn=linear", "--input_fn=constant",
         "--model_dir=/shared/model", "--batch_size=12"]
_PS_KINDS = ("default", "parameter_server")
_TRAINERS = ("chief", "master", "worker")

# (fixture, job index) -> the strategies the job runs with and the task that
# is the chief. Which task waits for which peers follows from the strategy:
# under parameter servers a trainer waits for every ps, under collective for
# every other trainer; a ps and the evaluator wait for no peer.
_ACCEPTED = {
    ("volcano", 0): (_PS_KINDS, "chief/0"),
    ("volcano", 1): (("default", "collective"), "chief/0"),
    ("tfjob", 0): (_PS_KINDS, "chief/0"),
    ("tfjob", 1): (("default", "collective"), "chief/0"),
    ("tfjob_v1_1", 0): (_PS_KINDS, "chief/0"),
    ("tfjob_no_chief", 0): (("parameter_server",), "worker/0"),
    ("tfjob_no_chief", 1): (("collective",), "worker/0"),
    ("tony", 0): (_PS_KINDS, "chief/0"),
    ("vertex_ai", 0): (_PS_KINDS, "chief/0"),
    ("sagemaker", 0): (("default",), "master/0"),
    ("multi_worker_tutorial", 0): (("collective",), "worker/0"),
}
# (fixture, job index, strategy) -> words of the refusal (2.15 refused these
# too: no chief without a strategy; a "master" job under a tf.distribute
# strategy fails when its server starts).
_REFUSED = {
    ("tfjob_no_chief", 0, "default"): (
        'must have one "chief" node', "--strategy=collective or "
        "parameter_server"),
    ("tfjob_no_chief", 1, "default"): (
        'must have one "chief" node', "--strategy=collective or "
        "parameter_server"),
    ("multi_worker_tutorial", 0, "default"): (
        'must have one "chief" node', "--strategy=collective or "
        "parameter_server"),
    ("sagemaker", 0, "parameter_server"): (
        'legacy "master" job', "--strategy=default", 'rename "master"'),
}


def _fixture(name):
  return json.loads((_FIXTURES / f"{name}.json").read_text())


def _task_cases():
  """(case name, fixture, job index, strategy, task label) of every task."""
  for (name, job), (kinds, _) in sorted(_ACCEPTED.items()):
    for label in _fixture(name)["jobs"][job]["tasks"]:
      for kind in kinds:
        case = f"{name}_{job}_{kind}_{label.replace('/', '')}"
        yield case, name, job, kind, label


def _refused_cases():
  for (name, job, kind), words in sorted(_REFUSED.items()):
    for label in _fixture(name)["jobs"][job]["tasks"]:
      case = f"{name}_{job}_{kind}_{label.replace('/', '')}"
      yield case, name, job, kind, label, words


def _addresses(tasks):
  """{task label: address} over every task's cluster (and own task)."""
  found = {}
  for config in tasks.values():
    for job, addresses in config["cluster"].items():
      for index, address in enumerate(addresses):
        found[f"{job}/{index}"] = address
  return found


class _RecordingServer:
  """Stands in for `tf.distribute.Server`: records, serves nothing."""
  started = []

  def __init__(self, cluster, job_name, task_index, config=None,
               protocol=None, start=True):
    del config, protocol, start
    self.address = cluster.as_dict()[job_name][task_index]
    self.target = f"grpc://{self.address}"
    self.cluster = cluster.as_dict()

  def start(self):
    _RecordingServer.started.append(self)


class OperatorFixturesTest(absltest.TestCase):

  def test_every_fixture_cites_its_source_and_is_covered(self):
    names = sorted(p.stem for p in _FIXTURES.glob("*.json"))
    self.assertGreaterEqual(len(names), 7)
    covered = {name for name, _ in _ACCEPTED}
    self.assertEqual(covered, set(names))
    for name in names:
      doc = _fixture(name)
      source = doc["source"]
      self.assertTrue(
          {"repo", "path", "commit"} <= set(source) or "doc" in source,
          f"{name}: source {source} names no repo/path/commit nor doc")
      if "commit" in source:
        self.assertRegex(source["commit"], r"^[0-9a-f]{40}$")
      for job in doc["jobs"]:
        for label, config in job["tasks"].items():
          self.assertEqual(
              f"{config['task']['type']}/{config['task']['index']}", label)


class OperatorTaskTest(parameterized.TestCase):
  """Each accepted task: role, label, chief, its server and its peers."""

  def setUp(self):
    super().setUp()
    # prepare_task remembers the tasks it started for the life of the
    # process; a fresh list keeps these cases from leaving a "serving"
    # process behind (harness.main leaves with os._exit then).
    self.enter_context(mock.patch.object(roles, "_PREPARED", []))
    self.enter_context(mock.patch.dict(os.environ))  # GRPC_FAIL_FAST
    _RecordingServer.started = []

  def _run_config(self, config_json, kind):
    os.environ["TF_CONFIG"] = json.dumps(config_json)
    return harness.RunConfig(model_dir="/shared/model",
                             train_distribute=strategies.make_strategy(kind))

  def _started_server(self, config):
    """The address of the server `prepare_task` starts for this task."""
    server_module = sys.modules[tf.distribute.Server.__module__]
    recorder = type("Recorder", (_RecordingServer,), {})
    with mock.patch.object(server_module, tf.distribute.Server.__name__,
                           recorder):
      prepared = roles.prepare_task(config)
    self.assertLen(_RecordingServer.started, 1)
    self.assertIs(prepared.server, _RecordingServer.started[0])
    self.assertNotIn("evaluator", prepared.server.cluster)
    return prepared.server.address

  def _awaited_peers(self, config):
    """The addresses a training session of this task waits for."""
    probed = []
    context = train_loop.TrainContext(
        master=config.master, is_chief=config.is_chief, should_init=True,
        session_config=None, task_label=config.task_label)
    with mock.patch.object(peer_wait, "probe", probed.append):
      guard = preemption.TrainingGuard.for_run(config, context, None)
    guard.before_session()
    return sorted(probed)

  @parameterized.named_parameters(*_task_cases())
  def test_task(self, name, job, kind, label):
    tasks = _fixture(name)["jobs"][job]["tasks"]
    chief = _ACCEPTED[(name, job)][1]
    addresses = _addresses(tasks)
    task_type = label.split("/")[0]
    trainers = sorted(t for t in addresses if t.split("/")[0] in _TRAINERS)
    ps = sorted(t for t in addresses if t.startswith("ps/"))

    plan = flags.parse(_BASE + [f"--strategy={kind}"],
                       environ={"TF_CONFIG": json.dumps(tasks[label])},
                       gpu_count=lambda: 0).plan
    role = {"ps": task_plan.Role.PS, "evaluator": task_plan.Role.EVALUATOR}.get(
        task_type, task_plan.Role.TRAINER)
    self.assertEqual((plan.role, plan.task_label), (role, label))
    self.assertEqual(plan.model_dir, "/shared/model")

    config = self._run_config(tasks[label], kind)
    self.assertEqual((config.task_type, config.task_label), (task_type, label))
    with_strategy = kind != "default"
    self.assertEqual(config.is_chief, label == chief or (
        with_strategy and task_type == "evaluator"))
    if task_type == "evaluator":
      self.assertEqual((config.master, config.num_worker_replicas),
                       ("", 0))
      self.assertFalse(config.cluster_spec)  # Not part of training.
      return
    self.assertEqual(config.num_worker_replicas, len(trainers))
    self.assertEqual(config.num_ps_replicas, len(ps))
    self.assertEqual(self._started_server(config), addresses[label])
    self.assertEqual(config.master, f"grpc://{addresses[label]}")
    if task_type == "ps":
      return  # A ps serves; it waits for no peer.
    wanted = ([addresses[t] for t in trainers if t != label]
              if kind == "collective" else [addresses[t] for t in ps])
    self.assertEqual(self._awaited_peers(config), sorted(wanted))


class OperatorRefusalTest(parameterized.TestCase):
  """The forms harness refuses, as 2.15 did, say the rule and the fix."""

  @parameterized.named_parameters(*_refused_cases())
  def test_refused(self, name, job, kind, label, words):
    config = _fixture(name)["jobs"][job]["tasks"][label]
    with self.assertRaises(errors.FlagError) as raised:
      flags.parse(_BASE + [f"--strategy={kind}"],
                  environ={"TF_CONFIG": json.dumps(config)},
                  gpu_count=lambda: 0)
    for word in words:
      self.assertIn(word, str(raised.exception))


class StrategySetupTrustsTheChecksTest(parameterized.TestCase):
  """`prepare_task` trusts `cluster.validate` (run before training) and
  keeps the one rule validate lacks: one machine, one trainer."""

  _TWO_TRAINERS = {"cluster": {"chief": ["127.0.0.1:2001"],
                               "worker": ["127.0.0.1:2002"]},
                   "task": {"type": "chief", "index": 0}}

  def setUp(self):
    super().setUp()
    self.enter_context(mock.patch.object(roles, "_PREPARED", []))
    self.enter_context(mock.patch.dict(os.environ))
    os.environ["TF_CONFIG"] = json.dumps(self._TWO_TRAINERS)
    _RecordingServer.started = []
    server_module = sys.modules[tf.distribute.Server.__module__]
    self.enter_context(mock.patch.object(
        server_module, tf.distribute.Server.__name__,
        type("Recorder", (_RecordingServer,), {})))

  def _checked_config(self, kind):
    config = harness.RunConfig(model_dir="/shared/model",
                               train_distribute=strategies.make_strategy(kind))
    harness.run_config.check_supported_config(config)  # Before training.
    return config

  @parameterized.parameters("mirrored", "central_storage")
  def test_binary_and_run_config_refuse_one_machine_on_two_trainers(
      self, kind):
    with self.assertRaisesRegex(errors.FlagError, "single-machine strategy"):
      flags.parse(_BASE + [f"--strategy={kind}"], environ=dict(os.environ),
                  gpu_count=lambda: 0)
    # The plan's rule: raised before training, and by prepare_task for a
    # caller that skipped that check.
    message = (f"^The strategy is {kind}, a single-machine strategy, but the "
               "cluster has 2 training")
    with self.assertRaisesRegex(errors.NotSupportedError, message):
      self._checked_config(kind)
    config = harness.RunConfig(model_dir="/shared/model",
                               train_distribute=strategies.make_strategy(kind))
    with self.assertRaisesRegex(errors.NotSupportedError, message):
      roles.prepare_task(config)
    self.assertEqual(_RecordingServer.started, [])

  @parameterized.parameters("collective", "default")
  def test_the_strategy_jobs_rule_is_not_run_again(self, kind):
    config = self._checked_config(kind)
    with mock.patch.object(
        tf_config_checks, "check_strategy_jobs",
        wraps=tf_config_checks.check_strategy_jobs) as rule:
      prepared = roles.prepare_task(config)
    rule.assert_not_called()
    self.assertEqual(prepared.server.address, "127.0.0.1:2001")


if __name__ == "__main__":
  absltest.main()
