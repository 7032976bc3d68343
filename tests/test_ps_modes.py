"""`--mode=train` (and evaluate / export after it) on a parameter-server cluster.

    python -m harness.launch --chief --workers=1 --ps=1 -- python -m \\
        harness.main --strategy=parameter_server --mode=train ...

used to hang: the ps task called `Estimator.train`, which trained it as a
non-chief that waited for a chief, while the chief and the worker waited for
the ps's server, which no one started. The ps now serves until the trainers
are done, then exits (as in `train_and_evaluate`); an evaluator task has
nothing to do in `--mode=train` and exits; `Estimator.train` itself refuses
ps and evaluator tasks, as tf.estimator 2.15 did.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness import cluster as cluster_lib
from harness import errors
from harness import estimator as estimator_lib
from harness import plan as plan_lib
from harness import run_config as run_config_lib
from harness.cli import flags
from harness.cli import mode_runners
from harness.launch import ports
from tests import _processes
from tests import _ps_launch
from tests import conftest

_MAX_STEPS = _ps_launch.MAX_STEPS
_TIMEOUT_SECS = _ps_launch.TIMEOUT_SECS
_MODEL = [*_ps_launch.MODEL, f"--max_steps={_MAX_STEPS}"]
_checkpoint_step = _ps_launch.checkpoint_step


@pytest.mark.slow
class ParameterServerModesTest(absltest.TestCase):
  """Runs shared by the tests, without a strategy (replica_device_setter):
  one cluster trains a model_dir, then the same cluster shape evaluates it.
  The same runs with --strategy=parameter_server (an evaluator task in
  training too, exports after the evaluation) are
  `tests/test_launch_ps_stop.py`'s last runs. Predict (and export) without a
  strategy are the same one-process jobs (the strategy is dropped:
  `OneProcessTaskTest`), so the evaluation alone shows that the chief
  restores what its cluster trained.
  """

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    model_dir = tempfile.mkdtemp()
    cls.addClassCleanup(shutil.rmtree, model_dir, ignore_errors=True)
    cls.runs = {mode: _ps_launch.launch(model_dir, mode, [])
                for mode in ("train", "evaluate")}

  def test_train_then_evaluate_replica_device_setter(self):
    step = _ps_launch.assert_trained(self, self.runs["train"])
    _ps_launch.assert_evaluated(self, self.runs["evaluate"], step)


@pytest.mark.slow
class EveryTaskExitsTest(absltest.TestCase):

  def test_every_task_exits_by_itself(self):
    """Without harness.launch (which stops a ps): the ps exits on its own."""
    model_dir = self.create_tempdir().full_path
    codes, outputs, detail = _run_tasks(self, model_dir, "train",
                                        ("ps", "chief", "worker"))
    self.assertEqual(codes, {"ps/0": 0, "chief/0": 0, "worker/0": 0}, detail)
    self.assertIn("ps | ps/0 | training ended (finished); exiting",
                  outputs["ps/0"], detail)
    self.assertBetween(_checkpoint_step(self, model_dir, detail), _MAX_STEPS,
                       _MAX_STEPS + 2)

    # predict: the chief alone, every other task (evaluator too) exits 0.
    # predict used to wait for ever on grpc://<chief>, which nobody served:
    # now the chief predicts in process.
    codes, outputs, detail = _run_tasks(
        self, model_dir, "predict", ("ps", "chief", "worker", "evaluator"))
    self.assertEqual(codes, {"ps/0": 0, "chief/0": 0, "worker/0": 0,
                             "evaluator/0": 0}, detail)
    self.assertIn("predict | chief/0 | --mode=predict is a one-process job: "
                  "it runs here, in-process, as a local job",
                  outputs["chief/0"], detail)
    for task in ("ps/0", "worker/0", "evaluator/0"):
      self.assertIn(f"predict | {task} | --mode=predict is a one-process job "
                    "run by chief/0", outputs[task], detail)
      self.assertNotIn("predict | wrote", outputs[task], detail)
    _assert_predictions(self, model_dir, outputs["chief/0"], detail)


def _assert_predictions(test, model_dir, output, detail):
  """The chief's output says it wrote model_dir/predictions.jsonl: it did."""
  wrote = re.findall(r"predict \| wrote (\d+) predictions to (\S+)", output)
  path = os.path.join(model_dir, "predictions.jsonl")
  test.assertLen(wrote, 1, detail)
  test.assertEqual(wrote[0][1], path, detail)
  test.assertEqual(glob.glob(os.path.join(model_dir, "*.jsonl")), [path])
  with open(path) as f:
    lines = f.read().splitlines()
  test.assertLen(lines, int(wrote[0][0]))
  test.assertGreater(len(lines), 0)
  test.assertIn("probabilities", json.loads(lines[0]), lines[0])


def _run_tasks(test, model_dir, mode, jobs):
  """Runs harness.main once per job (TF_CONFIG each); waits for every one.

  Returns:
    ({task: exit code}, {task: output}, failure detail); a task still
    running at the timeout is killed and has no code.
  """
  chief, worker, ps = (f"127.0.0.1:{p}" for p in ports.pick_free_ports(3))
  cluster = {"chief": [chief], "worker": [worker], "ps": [ps]}
  logs = test.create_tempdir().full_path
  command = [sys.executable, "-m", "harness.main", f"--model_dir={model_dir}",
             f"--mode={mode}", "--strategy=parameter_server", *_MODEL]
  procs = {}
  for job in jobs:
    env = conftest.child_env({"cluster": cluster,
                              "task": {"type": job, "index": 0}})
    with open(os.path.join(logs, job), "w") as log:
      procs[f"{job}/0"] = _processes.popen(
          command, env=env, cwd=conftest.REPO_ROOT, stdout=log,
          stderr=subprocess.STDOUT, start_new_session=True)
  codes = {}
  try:
    for task, proc in procs.items():
      codes[task] = proc.wait(timeout=_TIMEOUT_SECS)
  except subprocess.TimeoutExpired:
    pass  # Reported by the caller's assertion, with the logs.
  finally:
    for proc in procs.values():  # Only our own children, by process group.
      if proc.poll() is None:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=30)
  outputs = {}
  for task in procs:
    with open(os.path.join(logs, task.split("/")[0])) as log:
      outputs[task] = log.read()
  detail = " ".join(command) + " (TF_CONFIG per task)\nexit " + json.dumps(
      codes) + "\n" + "\n".join(
      f"--- {t}\n{o[-3000:]}" for t, o in outputs.items())
  return codes, outputs, detail


def _info(cluster, task_type, index=0):
  return cluster_lib.parse_tf_config(
      {"cluster": cluster, "task": {"type": task_type, "index": index}})


_PS_CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
               "ps": ["127.0.0.1:3"]}
_PS_STRATEGY = ("--strategy=parameter_server",)
_NO_CHIEF = {"worker": ["127.0.0.1:1", "127.0.0.1:2"], "ps": ["127.0.0.1:3"]}


class OneProcessTaskTest(parameterized.TestCase):
  """Which task of a cluster runs evaluate / predict / export."""

  @parameterized.named_parameters(
      ("chief", _PS_CLUSTER, "chief", 0, True),
      ("worker", _PS_CLUSTER, "worker", 0, False),
      ("ps", _PS_CLUSTER, "ps", 0, False),
      ("evaluator", _PS_CLUSTER, "evaluator", 0, False),
      ("worker0_without_chief", _NO_CHIEF, "worker", 0, True),
      ("worker1_without_chief", _NO_CHIEF, "worker", 1, False),
      ("master", {"master": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
       "master", 0, True),
      ("worker_beside_master",
       {"master": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, "worker", 0,
       False))
  def test_rule(self, cluster, task_type, index, runs):
    plan = plan_lib.plan_task(_info(cluster, task_type, index), environ={})
    self.assertEqual(plan_lib.runs_one_process_job(plan), runs)
    expected = ("master/0" if "master" in cluster else
                "chief/0" if "chief" in cluster else "worker/0")
    self.assertEqual(plan_lib.one_process_task(plan), expected)
    local = plan_lib.in_process(plan)  # Decided from the plan, not anew.
    self.assertEqual((local.role, local.task_label, local.is_chief,
                      local.facts.master, local.model_dir, local.knobs),
                     (plan_lib.Role.LOCAL, "local", True, "", plan.model_dir,
                      plan.knobs))

  def test_local(self):
    plan = plan_lib.plan_task(None, environ={})
    self.assertTrue(plan_lib.runs_one_process_job(plan))
    self.assertEqual(plan_lib.one_process_task(plan), "local")
    self.assertIs(plan_lib.in_process(plan), plan)

  @parameterized.named_parameters(
      ("evaluate", "evaluate", _PS_CLUSTER, "chief"),
      ("predict", "predict", _PS_CLUSTER, "chief"),
      ("export", "export", _PS_CLUSTER, "chief"),
      ("predict_worker0_without_chief", "predict", _NO_CHIEF, "worker"),
      ("session_master_too", "predict", _PS_CLUSTER, "chief",
       {"session_master": "grpc://127.0.0.1:9"}),
      ("predict_without_strategy", "predict", _PS_CLUSTER, "chief", None,
       ()),
      ("export_without_strategy", "export", _PS_CLUSTER, "chief", None, ()))
  def test_chief_runs_in_process(self, mode, cluster, task_type,
                                 tf_config=None, strategy=_PS_STRATEGY):
    """The chief's sessions target "": no server runs in its process."""
    estimator = self._build(mode, task_type, cluster, strategy=strategy,
                            **(tf_config or {}))
    self.assertEqual(estimator.config.master, "")
    self.assertEqual(estimator.config.evaluation_master, "")
    self.assertIsNone(estimator.config.train_distribute)
    self.assertEqual(estimator.config.cluster_spec.as_dict(), {})

  def test_train_keeps_the_grpc_master(self):
    """Training still serves its task: 2.15's grpc://<this task>."""
    self.assertEqual(self._build("train", "chief").config.master,
                     "grpc://127.0.0.1:1")

  def test_model_dir_from_tf_config_is_kept(self):
    model_dir = self.create_tempdir().full_path
    estimator = self._build("predict", "chief", model_dir=model_dir,
                            flag_model_dir=False)
    self.assertEqual(estimator.model_dir, model_dir)

  @parameterized.named_parameters(
      ("worker", _PS_CLUSTER, "worker", 0, "chief/0"),
      ("ps", _PS_CLUSTER, "ps", 0, "chief/0"),
      ("evaluator", _PS_CLUSTER, "evaluator", 0, "chief/0"),
      ("worker1_without_chief", _NO_CHIEF, "worker", 1, "worker/0"))
  def test_other_tasks_do_nothing(self, cluster, task_type, index, chief):
    estimator = self._build("predict", task_type, cluster, index=index)
    with self.assertLogs(level="INFO") as logs:
      result = mode_runners.MODE_RUNNERS["predict"](
          estimator, self._job, self._plan)
    self.assertEqual(result, (None, [], None))
    self.assertIn(f"predict | {task_type}/{index} | --mode=predict is a "
                  f"one-process job run by {chief}", "\n".join(logs.output))
    self.assertFalse(os.path.exists(
        os.path.join(estimator.model_dir, "predictions.jsonl")))

  def _build(self, mode, task_type, cluster=_PS_CLUSTER, index=0,
             flag_model_dir=True, strategy=_PS_STRATEGY, **tf_config):
    environ = {"TF_CONFIG": json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": index},
         **tf_config})}
    model_dir = ([f"--model_dir={self.create_tempdir().full_path}"]
                 if flag_model_dir else [])
    self._job, self._plan = flags.parse(
        ["harness.main", f"--mode={mode}", "--model_fn=mnist_mlp",
         "--input_fn=synthetic", *strategy, *model_dir],
        environ=environ)
    return mode_runners.build_estimator(self._job, self._plan)


class EstimatorTrainTaskTest(parameterized.TestCase):
  """Estimator.train on a ps or evaluator task: 2.15's ValueError."""

  @parameterized.parameters("ps", "evaluator")
  def test_refused(self, task_type):
    cluster = {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}
    environ = {"TF_CONFIG": json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": 0}})}
    config = run_config_lib.RunConfig(
        model_dir=self.create_tempdir().full_path, environ=environ)

    def model_fn(features, labels, mode):
      raise AssertionError("train() must refuse before building anything")

    estimator = estimator_lib.Estimator(model_fn, config=config)
    with self.assertRaisesRegex(
        errors.ConfigError, "Train has been called wrong configuration.*"
        rf"task {task_type}/0") as raised:
      estimator.train(lambda: None, max_steps=1)
    self.assertIsInstance(raised.exception, ValueError)


if __name__ == "__main__":
  absltest.main()
