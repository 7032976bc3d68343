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
from harness import run_config as run_config_lib
from harness._tf import tf
from harness.cli import flags
from harness.cli import mode_runners
from harness.launch import ports
from tests import _processes
from tests import conftest

_MAX_STEPS = 30
# A run takes ~20 s on 2 idle cores; these only bound a hang.
_TIMEOUT_SECS = 240
_MODEL = ["--model_fn=mnist_mlp", "--input_fn=synthetic", "--eval_steps=2",
          f"--max_steps={_MAX_STEPS}"]
_STRATEGIES = (("parameter_server", ["--strategy=parameter_server"]),
               ("replica_device_setter", []))  # No strategy.


def _launch(model_dir, mode, strategy_flags, evaluator=False):
  """Runs the launch command in `mode`; returns (exit code, output text)."""
  command = [
      sys.executable, "-m", "harness.launch", "--chief", "--workers=1",
      "--ps=1", f"--timeout_secs={_TIMEOUT_SECS}"] + (
          ["--evaluator"] if evaluator else []) + [
              "--", sys.executable, "-m", "harness.main",
              f"--model_dir={model_dir}", f"--mode={mode}",
              *strategy_flags, *_MODEL]
  result = subprocess.run(command, env=conftest.child_env(),
                          cwd=conftest.REPO_ROOT, capture_output=True,
                          text=True, timeout=_TIMEOUT_SECS + 60, check=False)
  output = result.stdout + result.stderr
  return result.returncode, output, (
      f"{' '.join(command)}\nexit {result.returncode}\n{output[-6000:]}")


def _checkpoint_step(test, model_dir, detail):
  latest = tf.train.latest_checkpoint(model_dir)
  test.assertIsNotNone(latest, detail)
  return int(tf.train.load_variable(latest, "global_step"))


def _assert_ended_with_0(test, output, detail, tasks):
  test.assertIn("launch | exit 0", output, detail)
  for task in tasks:
    test.assertIn(f"launch | {task} exited with 0", output, detail)


def _assert_one_process_job(test, code, output, detail, mode):
  """The chief did `mode`; the worker exited at once (launch may stop the ps
  first: `test_every_task_exits_by_itself` waits for each task instead)."""
  test.assertEqual(code, 0, detail)
  _assert_ended_with_0(test, output, detail, ("chief/0", "worker/0"))
  test.assertIn(f"{mode} | chief/0 | --mode={mode} is a one-process job: it "
                "runs here, in-process, as a local job", output, detail)
  test.assertIn(f"{mode} | worker/0 | --mode={mode} is a one-process job run "
                "by chief/0: this task has nothing to do and exits", output,
                detail)


@pytest.mark.slow
class ParameterServerModesTest(parameterized.TestCase):
  """Runs shared by the tests: per strategy, one cluster trains a model_dir
  (the parameter_server one with an evaluator task too), then the same
  cluster shape evaluates it; with --strategy=parameter_server it predicts
  with and exports it as well. Without a strategy those two are the same
  one-process jobs (the strategy is dropped: `OneProcessTaskTest`), so the
  evaluation alone shows that the chief restores what its cluster trained.
  """

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.runs = {}
    for name, strategy_flags in _STRATEGIES:
      model_dir = tempfile.mkdtemp()
      cls.addClassCleanup(shutil.rmtree, model_dir, ignore_errors=True)
      modes = (("train", "evaluate", "predict", "export")
               if name == "parameter_server" else ("train", "evaluate"))
      cls.runs[name] = {"model_dir": model_dir}
      for mode in modes:
        cls.runs[name][mode] = _launch(
            model_dir, mode, strategy_flags,
            evaluator=name == "parameter_server" and mode == "train")

  @parameterized.named_parameters(*((name, name) for name, _ in _STRATEGIES))
  def test_train_then_evaluate(self, name):
    run = self.runs[name]
    model_dir = run["model_dir"]
    code, output, detail = run["train"]
    self.assertEqual(code, 0, detail)
    _assert_ended_with_0(self, output, detail, ("chief/0", "worker/0"))
    self.assertIn("ps | ps/0 | serving until chief/0, worker/0 finish",
                  output, detail)
    # A ps serves variables: no model/batch banner rows, no checkpoint it
    # never wrote in its closing lines.
    self.assertIn("[ps/0] harness.main | ps/0 | serves variables", output,
                  detail)
    for row in ("model_fn:", "batch:", "latest checkpoint:"):
      self.assertNotRegex(output, rf"\[ps/0\] +{row}", detail)
    # Asynchronous trainers: each may have one step in flight at the end.
    step = _checkpoint_step(self, model_dir, detail)
    self.assertBetween(step, _MAX_STEPS, _MAX_STEPS + 2)
    self.assertRegex(output, r"train \| chief/0 \| training finished at "
                     rf"step {step}\b", detail)
    for task in ("chief-0", "worker-0"):  # Both left their loop.
      self.assertTrue(os.path.exists(
          os.path.join(model_dir, f"task_done-{task}")), detail)

    # The same cluster shape evaluates the checkpoint it left: a
    # one-process job, done by the chief alone (in process); the worker and
    # the ps exit by themselves.
    code, output, detail = run["evaluate"]
    _assert_one_process_job(self, code, output, detail, "evaluate")
    self.assertIn(f"[chief/0] eval results | chief/0 | global_step {step}",
                  output, detail)
    self.assertLen(re.findall(r"\beval \| \S+ \| step \d+", output), 1,
                   detail)
    self.assertNotIn("eval results | worker/0", output, detail)

  def test_then_predict_and_export_parameter_server(self):
    """predict used to wait for ever on grpc://<chief>, which nobody
    served: now the chief predicts (and exports) in process."""
    run = self.runs["parameter_server"]
    model_dir = run["model_dir"]
    code, output, detail = run["predict"]
    _assert_one_process_job(self, code, output, detail, "predict")
    wrote = re.findall(r"\[(\S+)\].*predict \| wrote (\d+) predictions to "
                       r"(\S+)", output)
    path = os.path.join(model_dir, "predictions.jsonl")
    self.assertLen(wrote, 1, detail)
    self.assertEqual(wrote[0][0], "chief/0", detail)
    self.assertEqual(wrote[0][2], path, detail)
    self.assertEqual(glob.glob(os.path.join(model_dir, "*.jsonl")), [path])
    with open(path) as f:
      lines = f.read().splitlines()
    self.assertLen(lines, int(wrote[0][1]))
    self.assertGreater(len(lines), 0)
    self.assertIn("probabilities", json.loads(lines[0]), lines[0])

    code, output, detail = run["export"]
    _assert_one_process_job(self, code, output, detail, "export")
    exports = glob.glob(os.path.join(model_dir, "export", "saved_model", "*",
                                     "saved_model.pb"))
    self.assertLen(exports, 1, detail)

  def test_evaluator_task_exits_in_train_mode(self):
    run = self.runs["parameter_server"]
    code, output, detail = run["train"]
    self.assertEqual(code, 0, detail)
    _assert_ended_with_0(self, output, detail,
                         ("chief/0", "worker/0", "evaluator/0"))
    self.assertIn("train | evaluator/0 | --mode=train evaluates nothing",
                  output, detail)
    # The evaluator neither trained nor took the trainers' lease.
    self.assertNotIn("train | evaluator/0 | starting at step", output, detail)
    self.assertNotIn("lease | evaluator/0", output, detail)
    self.assertBetween(_checkpoint_step(self, run["model_dir"], detail),
                       _MAX_STEPS, _MAX_STEPS + 2)


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
    codes, outputs, detail = _run_tasks(
        self, model_dir, "predict", ("ps", "chief", "worker", "evaluator"))
    self.assertEqual(codes, {"ps/0": 0, "chief/0": 0, "worker/0": 0,
                             "evaluator/0": 0}, detail)
    self.assertIn("predict | wrote", outputs["chief/0"], detail)
    for task in ("ps/0", "worker/0", "evaluator/0"):
      self.assertIn(f"predict | {task} | --mode=predict is a one-process job "
                    "run by chief/0", outputs[task], detail)
      self.assertNotIn("predict | wrote", outputs[task], detail)


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
    info = _info(cluster, task_type, index)
    self.assertEqual(mode_runners.runs_one_process_job(info), runs)
    expected = ("master/0" if "master" in cluster else
                "chief/0" if "chief" in cluster else "worker/0")
    self.assertEqual(mode_runners.one_process_task(info), expected)

  def test_local(self):
    self.assertTrue(mode_runners.runs_one_process_job(None))
    self.assertEqual(mode_runners.one_process_task(None), "local")

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
