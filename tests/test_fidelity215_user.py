"""The 2.15 differences a new user met (issue 47, "2.15 differences"),
each asserted against what tf.estimator 2.15 does, its source cited.

Cited as `2.15 FILE:LINE`: tensorflow/estimator at tag v2.15.0 under
tensorflow_estimator/python/estimator/, and TensorFlow 2.15's
tensorflow/python/training/monitored_session.py (unchanged in 2.21).
"""

import contextlib
import io
import json
import os
import pathlib
import shutil
import signal
import sys

from absl.testing import absltest
import numpy as np
import pytest

import harness
from harness import errors
from harness import run as run_lib
from harness import spec
from harness._tf import tf
from harness.cli import flags
from harness.cli import job as job_lib
from harness.cli import mode_runners
from tests import _support
from tests import conftest
from tests import logs215_lines

_FOREVER = (pathlib.Path(__file__).resolve().parent / "legacy_programs" /
            "legacy_forever.py")
_CONFIG_PROGRAM = _FOREVER.parent / "legacy_config.py"
_MULTIWORKER = _FOREVER.parent / "legacy_multiworker.py"
_SEED_PROGRAM = _FOREVER.parent / "legacy_seed.py"
_SEEDS_215 = (pathlib.Path(__file__).resolve().parent / "fixtures" /
              "seeds215" / "seeds215.json")
_CONFIG_215 = (pathlib.Path(__file__).resolve().parent / "fixtures" /
               "logs215" / "using_config.json")
_START_SECS = 240  # TF start-up on a loaded 2-core machine.
_STOP_SECS = 60


def _input_fn():
  x = np.random.RandomState(0).rand(64, 2).astype(np.float32)
  y = (x.sum(axis=1) > 1).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8)


def _eval_input_fn():
  return _input_fn().take(4)


class BestExporterFirstEvaluationTest(absltest.TestCase):
  """Item 1: a run that evaluates once gets its export/best."""

  def test_one_evaluation_exports(self):
    # 2.15 exporter.py:279-305 (BestExporter.export): `not
    # self._has_exported` exports on the first call, whatever the result.
    model_dir = self.create_tempdir().full_path
    columns = [tf.feature_column.numeric_column("x", shape=[2])]
    est = harness.DNNClassifier(
        hidden_units=[4], feature_columns=columns, model_dir=model_dir,
        config=harness.RunConfig(tf_random_seed=1))
    exporter = harness.BestExporter(
        name="best",
        serving_input_receiver_fn=(
            harness.export.build_parsing_serving_input_receiver_fn(
                tf.feature_column.make_parse_example_spec(columns))))
    _, exports = harness.train_and_evaluate(
        est, harness.TrainSpec(_input_fn, max_steps=100),
        harness.EvalSpec(_eval_input_fn, steps=None, exporters=[exporter]))
    self.assertLen(exports, 1)
    self.assertIsNotNone(exports[0], "2.15 exports on the first evaluation")
    best = os.path.join(model_dir, "export", "best")
    self.assertLen(tf.io.gfile.listdir(best), 1)
    self.assertEqual(os.path.basename(exports[0].decode()),
                     tf.io.gfile.listdir(best)[0].rstrip("/"))


class EvaluatorTaskTest(absltest.TestCase):
  """Item 3: a 2.15 multi-worker program's evaluator task under harness.run.

  2.15 ran such a program's evaluator through TF's distribute coordinator,
  which gave it a cluster of its own (TF 2.15 distribute/distribute_
  coordinator.py:359-378, _split_cluster_for_evaluator): its strategy took
  no part in training. Built straight from a TF_CONFIG whose cluster does
  not list the evaluator (2.15 run_config.py:437-452's example, harness.
  launch's, a TFJob's), TF's MultiWorkerMirroredStrategy raises KeyError:
  'evaluator' (multi_worker_util.worker_count); harness.run, as harness.main
  does, has strategies built in an evaluator task initialise locally.
  """

  def test_strategy_built_in_an_evaluator_task_is_local(self):
    tf_config = {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
                 "task": {"type": "evaluator", "index": 0}}
    result = _support.run(
        [sys.executable, "-m", "harness.run", str(_MULTIWORKER),
         self.create_tempdir().full_path, "strategy_only"],
        timeout_secs=_START_SECS, env=conftest.child_env(tf_config))
    self.assertEqual(result.returncode, 0, result.description)
    self.assertIn("replicas 1", result.stdout, result.description)

  @pytest.mark.slow
  def test_launch_two_workers_and_an_evaluator(self):
    model_dir = self.create_tempdir().full_path
    result = _support.run(
        [sys.executable, "-m", "harness.launch", "--workers=2", "--evaluator",
         "--timeout_secs=500", "--", sys.executable, "-m", "harness.run",
         str(_MULTIWORKER), model_dir], timeout_secs=600)
    self.assertEqual(result.returncode, 0, result.description)
    output = result.stdout + result.stderr
    self.assertNotIn("KeyError", output, result.description)
    self.assertRegex(output, r"\[evaluator/0\] .*eval \| evaluator/0 \| "
                     r"step 40 \|", result.description)
    self.assertTrue(tf.io.gfile.glob(os.path.join(
        model_dir, "eval", "events.out.tfevents.*")), result.description)


class _Recorder(tf.compat.v1.train.SessionRunHook):

  def __init__(self, name, events):
    self._name, self._events = name, events

  def begin(self):
    self._events.append(("begin", self._name))

  def after_run(self, run_context, run_values):
    self._events.append(("after_run", self._name))

  def end(self, session):
    self._events.append(("end", self._name))


class _SaveRecorder(tf.compat.v1.train.CheckpointSaverListener):
  """Marks the chief's CheckpointSaverHook's place (its listener's calls)."""

  def __init__(self, events):
    self._events = events

  def begin(self):
    self._events.append(("begin", "saver"))

  def after_save(self, session, global_step_value):
    self._events.append(("save", int(global_step_value)))


class ChiefHookOrderTest(absltest.TestCase):
  """Item 2: training_chief_hooks run in 2.15's place."""

  def test_chief_hooks_before_caller_and_training_hooks(self):
    # 2.15 estimator.py:1446-1520 (_train_with_estimator_spec) gives
    # MonitoredTrainingSession chief_only_hooks=(its CheckpointSaverHook,
    # *training_chief_hooks) and hooks=(input hooks, the caller's hooks,
    # NanTensorHook, LoggingTensorHook, *training_hooks); TF 2.15
    # monitored_session.py:566-605 runs chief_only_hooks first, then
    # StepCounterHook and SummarySaverHook, then hooks.
    events = []

    def model_fn(features, labels, mode):
      del labels
      w = tf.compat.v1.get_variable("w", [2, 1])
      loss = tf.reduce_mean(tf.matmul(features["x"], w))
      train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
      return spec.EstimatorSpec(
          mode, loss=loss, train_op=train_op,
          training_hooks=[_Recorder("training", events)],
          training_chief_hooks=[_Recorder("chief", events)])

    est = harness.Estimator(model_fn, model_dir=self.create_tempdir(
        ).full_path, config=harness.RunConfig(save_checkpoints_steps=2))
    est.train(_input_fn, steps=2, hooks=[_Recorder("caller", events)],
              saving_listeners=[_SaveRecorder(events)])
    self.assertEqual(
        [e for e in events if e[0] == "begin"],
        [("begin", "saver"), ("begin", "chief"), ("begin", "caller"),
         ("begin", "training")])
    self.assertEqual([e for e in events if e[0] == "after_run"][:3],
                     [("after_run", "chief"), ("after_run", "caller"),
                      ("after_run", "training")])
    # The saver's end (the final save) comes before the chief hooks' end.
    ends = [e for e in events if e[0] in ("end", "save")]
    self.assertEqual(ends[-3:], [("end", "chief"), ("end", "caller"),
                                 ("end", "training")])
    self.assertEqual(ends[-4], ("save", 2))


class _FakeClock:

  def __init__(self, step_secs):
    self.now, self._step = 0.0, step_secs

  def __call__(self):
    self.now += self._step
    return self.now


def _interrupted_after(n):
  for i in range(n):
    yield {"y": np.float32(i)}
  raise KeyboardInterrupt


class PredictBoundTest(absltest.TestCase):
  """Item 4: --mode=predict on a repeating input: a bound, progress lines,
  and a Ctrl-C that speaks of predictions, not of resuming training."""

  def test_max_predictions_bounds_a_repeating_plain_input_fn(self):
    # 2.15 estimator.py:641-653 (Estimator.predict) yields until the input
    # ends (`while not mon_sess.should_stop()`): on a repeating input, for
    # ever, one prediction at a time. --max_predictions bounds the binary's
    # loop; without it, --mode=predict runs as long (until Ctrl-C).
    # No --model_dir: a temporary one, which may hold no checkpoint.
    job = flags.parse([
        "harness.main", "--model_fn=linear",
        "--input_fn=tests.programs.repeating_input:input_fn",
        "--mode=predict", "--max_predictions=25", "--verbosity=quiet"],
        environ={}).job
    result = job_lib.run_job(job, environ={}, out=io.StringIO())
    self.addCleanup(shutil.rmtree, result.model_dir, ignore_errors=True)
    with open(result.predictions_path, encoding="utf-8") as f:
      rows = [json.loads(line) for line in f]
    self.assertLen(rows, 25)

  def test_progress_lines_then_ctrl_c_keeps_the_lines(self):
    path = os.path.join(self.create_tempdir().full_path, "p.jsonl")
    with self.assertLogs("absl", level="INFO") as logs:
      with open(path, "w") as f:
        with self.assertRaises(errors.PredictionInterruptedError) as caught:
          mode_runners.write_predictions(
              _interrupted_after(7), f, path=path, limit=None,
              task_label="local",
              clock=_FakeClock(mode_runners.PREDICT_REPORT_SECS / 2))
    progress = [r.getMessage() for r in logs.records]
    self.assertLen(progress, 3)  # At 2, 4 and 6 lines (a clock read each).
    self.assertStartsWith(progress[0], "predict | local | 2 predictions "
                          f"written to {path}; the input has not ended")
    self.assertEqual(caught.exception.signal_name, "SIGINT")
    message = str(caught.exception)
    self.assertIn("interrupted after 7 predictions", message)
    self.assertNotIn("train", message)
    with open(path, encoding="utf-8") as f:
      self.assertEqual([json.loads(line)["y"] for line in f],
                       list(range(7)))

  @pytest.mark.slow
  def test_ctrl_c_through_the_binary_one_line_and_130(self):
    child = _support.ChildProcess([  # A temporary model_dir, untrained.
        "-m", "harness.main", "--model_fn=linear",
        "--input_fn=tests.programs.repeating_input:input_fn",
        "--mode=predict"], "harness.main")
    self.addCleanup(child.kill_group)
    self.assertTrue(child.wait_for_text("predictions written to",
                                        _START_SECS), child.describe())
    code, _ = child.stop(signal.SIGINT, _STOP_SECS)
    self.assertEqual(code, errors.EXIT_INTERRUPTED, child.describe())
    self.assertNotIn("Traceback", child.output, child.describe())
    last = [l for l in child.lines if l.startswith("harness.main:")]
    self.assertLen(last, 1, child.describe())
    self.assertIn("PredictionInterruptedError: predict | local | interrupted "
                  "after", last[0])
    self.assertNotIn("resume", child.output.lower(), child.describe())


class RunCtrlCTest(absltest.TestCase):
  """Item 5: Ctrl-C through `harness.run prog.py` ends as the binary does."""

  def test_interrupt_outside_the_loop_one_line_and_130(self):
    # 2.15 installed no SIGINT handler: Python's KeyboardInterrupt ended
    # `python prog.py`, status 130 (128 + SIGINT) seen from a shell.
    saved = sys.argv[:], sys.path[:]
    self.addCleanup(lambda: (sys.argv.__setitem__(slice(None), saved[0]),
                             sys.path.__setitem__(slice(None), saved[1])))
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
      try:
        code = run_lib.main([str(_FOREVER), self.create_tempdir().full_path,
                             "interrupt"])
      except KeyboardInterrupt:  # Not pytest's own Ctrl-C: a failure here.
        self.fail("KeyboardInterrupt came out of harness.run.main")
    self.assertEqual(code, errors.EXIT_INTERRUPTED)
    self.assertEqual(stderr.getvalue().count("harness.run:"), 1,
                     stderr.getvalue())  # One message (folded at 160).
    self.assertStartsWith(stderr.getvalue(), "harness.run: KeyboardInterrupt: "
                          f"{_FOREVER} was interrupted (SIGINT)")

  @pytest.mark.slow
  def test_ctrl_c_in_training_one_line_and_130(self):
    child = _support.ChildProcess(
        ["-m", "harness.run", str(_FOREVER),
         self.create_tempdir().full_path, "train"], "harness.run")
    self.addCleanup(child.kill_group)
    self.assertTrue(child.wait_for_text("train | local | step", _START_SECS),
                    child.describe())
    code, _ = child.stop(signal.SIGINT, _STOP_SECS)
    self.assertEqual(code, errors.EXIT_INTERRUPTED, child.describe())
    self.assertNotIn("Traceback", child.output, child.describe())
    last = [l for l in child.lines if l.startswith("harness.run:")]
    self.assertLen(last, 1, child.describe())
    self.assertIn("TrainingPreemptedError: local: training was interrupted "
                  "(SIGINT) and stopped at step", last[0])


class UsingConfigTest(absltest.TestCase):
  """Item 6: 2.15's `Using config: {...}`, once per Estimator."""

  def test_the_lines_215_wrote(self):
    # 2.15 estimator.py:200 (Estimator.__init__): `Using config: %s` of
    # str(vars(self._config)), after maybe_overwrite_model_dir_and_session_
    # config's `Using default config.` (estimator.py:1845). The reference is
    # what 2.15 printed for legacy_config.py (tests/fixtures/logs215/
    # record.py wrote using_config.json).
    model_dir = self.create_tempdir().full_path
    result = _support.run([sys.executable, "-m", "harness.run",
                           str(_CONFIG_PROGRAM), model_dir],
                          timeout_secs=_START_SECS)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertEqual(logs215_lines.using_config(result.stderr, model_dir),
                     json.loads(_CONFIG_215.read_text()), result.description)
    using = [line for line in result.stderr.splitlines()
             if line.startswith("INFO:tensorflow:Using ")]
    self.assertEqual([line.split(":")[2][:13] for line in using],
                     ["Using default", "Using config", "Using config"])


@pytest.mark.slow
class SeedTest(absltest.TestCase):
  """Item 7: initial weights at one seed, beside 2.15's (docs/COMPAT.md)."""

  def _run(self):
    result = _support.run([sys.executable, "-m", "harness.run",
                           str(_SEED_PROGRAM)], timeout_secs=_START_SECS)
    self.assertEqual(result.returncode, 0, result.description)
    return json.loads(result.stdout.strip().splitlines()[-1])

  def test_215_values_where_215_had_any_and_repeatable_runs(self):
    # tests/fixtures/seeds215/record.py ran legacy_seed.py twice on 2.15.
    runs_215 = json.loads(_SEEDS_215.read_text())["runs"]
    first, second = self._run(), self._run()
    for key in ("bare_graph", "dnn_kernel"):  # TF's own initializers.
      self.assertEqual(runs_215[0][key], runs_215[1][key], key)
      self.assertEqual(first[key], runs_215[0][key], key)
    # A Keras initializer with no seed of its own: 2.15's drew its op seed
    # from Python's unseeded `random`, different in each run; harness seeds
    # it from tf_random_seed, the same in each run.
    key = "layers_dense_kernel"
    self.assertNotEqual(runs_215[0][key], runs_215[1][key])
    self.assertEqual(first[key], second[key])


class SmallerDifferencesTest(absltest.TestCase):
  """Item 8: the smaller differences, each fixed or labelled."""

  def test_two_loss_lines_of_one_step_say_which_run(self):
    # 2.15 estimator.py:1417-1424: LoggingTensorHook({'loss', 'step'},
    # every_n_iter=log_step_count_steps) prints the loss of the run that
    # STARTS at `step` (the step read before its increment). harness's
    # `train | ... | step N | ... | loss=L` line is the loss of the run that
    # ENDED at global step N (docs/COMPAT.md, Logs). Here loss == the step
    # a run starts from.
    def model_fn(features, labels, mode):
      del features, labels
      w = tf.compat.v1.get_variable("w", [], initializer=tf.zeros_initializer())
      step = tf.compat.v1.train.get_global_step()
      loss = tf.cast(step, tf.float32) + 0.0 * w
      train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
          loss, global_step=step)
      return spec.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = harness.Estimator(model_fn, model_dir=self.create_tempdir(
        ).full_path, config=harness.RunConfig(log_step_count_steps=5,
                                              steps_per_loop=1))
    with self.assertLogs("absl", level="INFO") as logs, self.assertLogs(
        "tensorflow", level="INFO") as tf_logs:
      est.train(_input_fn, max_steps=11)
    self.assertIn("loss = 5.0, step = 5",
                  [r.getMessage()[:20] for r in tf_logs.records])
    harness_line = [r.getMessage() for r in logs.records
                    if r.getMessage().startswith("train | local | step 5/")]
    self.assertLen(harness_line, 1, logs.output)
    self.assertIn("| loss=4 |", harness_line[0])

  def test_both_unknown_names_are_reported(self):
    with self.assertRaises(errors.FlagError) as caught:
      flags.parse(["harness.main", "--model_fn=lineer", "--input_fn=constnt"],
                  environ={})
    self.assertIn("2 problem(s)", str(caught.exception))
    self.assertIn("flag --model_fn=lineer: unknown model_fn", str(
        caught.exception))
    self.assertIn("flag --input_fn=constnt: unknown input_fn", str(
        caught.exception))

  def test_plain_input_fn_said_once_for_every_mode(self):
    # Said once a process: a module name no other test resolved.
    folder = self.create_tempdir()
    name = f"plain_input_{os.path.basename(folder.full_path)}"
    folder.create_file(f"{name}.py", "from tests.programs.repeating_input "
                       "import input_fn\n")
    sys.path.insert(0, folder.full_path)
    self.addCleanup(sys.path.remove, folder.full_path)
    with self.assertLogs("absl", level="INFO") as logs:
      job = flags.parse([
          "harness.main", "--model_fn=linear", f"--input_fn={name}:input_fn",
          "--max_steps=4", "--eval_steps=3", "--throttle_secs=0",
          "--verbosity=quiet"], environ={}).job
      result = job_lib.run_job(job, environ={}, out=io.StringIO())
    self.addCleanup(shutil.rmtree, result.model_dir, ignore_errors=True)
    said = [r.getMessage() for r in logs.records
            if "not a factory" in r.getMessage()]
    self.assertLen(said, 1)
    self.assertIn("the same input serves training, evaluation and "
                  "prediction", said[0])

  def test_evaluation_that_ends_early_says_where(self):
    # 2.15 evaluation.py's _StopAfterNEvalsHook logged `Evaluation [k/N]`
    # every N/10 and nothing when the input ended first.
    est = harness.Estimator(
        lambda features, labels, mode: _scalar_spec(features, mode),
        model_dir=self.create_tempdir().full_path)
    est.train(_input_fn, steps=1)
    with self.assertLogs("absl", level="INFO") as logs:
      est.evaluate(lambda: _input_fn().take(33), steps=100)
    lines = [r.getMessage() for r in logs.records]
    self.assertIn("eval | step 30/100", lines)
    self.assertIn("eval | step 33/100: the input ended (evaluated 33 "
                  "batches, not 100)", lines)


def _scalar_spec(features, mode):
  w = tf.compat.v1.get_variable("w", [2, 1])
  loss = tf.reduce_mean(tf.matmul(features["x"], w))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return spec.EstimatorSpec(mode, loss=loss, train_op=train_op)


if __name__ == "__main__":
  absltest.main()
