"""Tests of bench.perf.scaling's parts that run no cluster: its flags, the
setups it interleaves, the ratios and the RESULTS.md section it writes (the
benchmark itself is timed, not tested)."""

import contextlib
import io
import os
import sys
from unittest import mock

from absl.testing import absltest
import pytest

from bench.perf import scaling
from bench.perf import scaling_table
from bench.perf import scaling_worker
from bench.tf215 import tf215_env
from tests import conftest


def _run(rate, error=None):
  result = {"examples_per_sec": rate, "seconds": 1.0, "first_step_secs": 9.0,
            "load1": 0.5}
  if error:
    result = {"error": error, "load1": 0.5}
  return result


class FlagsTest(absltest.TestCase):

  def _error(self, argv):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), self.assertRaises(SystemExit):
      scaling._parse(argv)  # pylint: disable=protected-access
    return stderr.getvalue()

  def test_defaults_are_harness_bare_keras_at_one_and_two_workers(self):
    args = scaling._parse([])  # pylint: disable=protected-access
    setups = scaling._setups(args)  # pylint: disable=protected-access
    self.assertEqual([(s.runner, s.workers, s.steps_per_loop)
                      for s in setups],
                     [("harness", 1, "auto"), ("bare", 1, "1"),
                      ("keras", 1, "1"), ("harness", 2, "auto"),
                      ("bare", 2, "1"), ("keras", 2, "1")])

  def test_harness_runs_with_harness_defaults_the_others_without(self):
    args = scaling._parse(["--worker_flags=--threads=1"])  # pylint: disable=protected-access
    harness = scaling._worker_args(args, scaling.Setup(  # pylint: disable=protected-access
        runner="harness", workers=2))
    bare = scaling._worker_args(args, scaling.Setup(  # pylint: disable=protected-access
        runner="bare", workers=2))
    self.assertIn("--harness_defaults", harness)
    self.assertNotIn("--harness_defaults", bare)
    self.assertEqual(bare, ["--runner=bare", "--strategy=collective",
                            "--threads=1"])

  def test_unknown_runner_is_refused_by_name(self):
    self.assertIn("['tf_estimator'] unknown",
                  self._error(["--runners=harness,tf_estimator"]))

  def test_more_workers_than_cores_is_refused(self):
    self.assertIn("needs 4096 cores", self._error(["--workers=1,4096"]))

  def test_auto_needs_whole_loops_of_the_cadence_bound(self):
    self.assertIn("multiples of 100", self._error(["--timed_steps=150"]))

  def test_parameter_servers_take_auto_at_any_step_counts(self):
    args = scaling._parse(["--strategy=ps", "--timed_steps=150"])  # pylint: disable=protected-access
    self.assertEqual(args.loops, ["auto"])

  def test_k_must_divide_the_step_counts(self):
    self.assertIn("--steps_per_loop value 7",
                  self._error(["--steps_per_loop=7"]))

  def test_allreduce_is_the_ceilings_not_a_runner_here(self):
    self.assertIn("bench.perf.ceiling", self._error(
        ["--runners=harness,allreduce"]))

  def test_every_runner_here_has_its_description(self):
    self.assertEqual(
        set(scaling_worker.RUNNERS) - {"allreduce"},
        set(scaling_table.RUNNER_DESCRIPTIONS))

  def test_estimator215_runs_under_the_215_venv(self):
    self.assertEqual(scaling.worker_python("bare"), sys.executable)
    with mock.patch.object(os.path, "exists", return_value=False):
      with self.assertRaisesRegex(FileNotFoundError,
                                  "python -m bench.tf215.tf215_env"):
        scaling.worker_python("estimator215")
    with mock.patch.object(os.path, "exists", return_value=True):
      self.assertEqual(scaling.worker_python("estimator215"),
                       tf215_env.python_of(tf215_env.DEFAULT_VENV_DIR))
    # TF 2.15 has its own Keras 2 and no tf_keras.
    env = scaling._worker_env("worker/0", {}, "estimator215")  # pylint: disable=protected-access
    self.assertNotIn("TF_USE_LEGACY_KERAS", env)
    env = scaling._worker_env("worker/0", {}, "harness")  # pylint: disable=protected-access
    self.assertEqual(env["TF_USE_LEGACY_KERAS"], "1")

  def test_worker_flags_are_the_workers_own(self):
    args = scaling_worker._parse([  # pylint: disable=protected-access
        "--model_dir=/x", "--warmup_steps=1", "--timed_steps=1",
        "--runner=bare", "--strategy=ps", "--model=wide",
        "--bytes_per_pack=1024", "--implementation=ring", "--threads=1"])
    self.assertEqual((args.runner, args.strategy, args.model,
                      args.bytes_per_pack, args.implementation, args.threads),
                     ("bare", "ps", "wide", 1024, "ring", 1))


class TableTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    s = scaling_table.Setup
    self.setups = [s(runner="harness", workers=1, steps_per_loop="auto"),
                   s(runner="bare", workers=1),
                   s(runner="harness", workers=2, steps_per_loop="auto"),
                   s(runner="bare", workers=2), s(runner="keras", workers=2)]
    rates = [(100, 100, 150, 140, 50), (100, 110, 170, 150, 60)]
    self.runs = {setup: [_run(r[i]) for r in rates]
                 for i, setup in enumerate(self.setups)}

  def test_speedups_are_medians_of_per_round_ratios(self):
    got = {what: (round(med, 3), [round(r, 3) for r in each])
           for what, med, each in scaling_table.speedups(self.setups,
                                                         self.runs)}
    self.assertEqual(got["harness, 2 workers, K=auto / 1 worker"],
                     (1.6, [1.5, 1.7]))
    self.assertEqual(got["bare, 2 workers / 1 worker"],
                     (1.382, [1.4, 1.364]))
    self.assertEqual(got["harness, 1 worker, K=auto / bare, 1 worker"],
                     (0.955, [1.0, 0.909]))
    self.assertEqual(got["harness, 2 workers, K=auto / keras, 2 workers"],
                     (2.917, [3.0, 2.833]))
    self.assertNotIn("keras, 2 workers / 1 worker", got)  # No 1-worker run.

  def test_failed_rounds_are_left_out_of_ratios_and_shown(self):
    self.runs[self.setups[3]][1] = _run(None, error="worker/1: exit 1")
    got = {what: each for what, _, each in scaling_table.speedups(
        self.setups, self.runs)}
    self.assertEqual(got["bare, 2 workers / 1 worker"], [1.4])
    text = self._render()
    self.assertIn("| 2 | bare, 2 workers | n/a | n/a | 0.50 | worker/1: "
                  "exit 1 |", text)

  def _render(self, model="mlp", strategy="collective"):
    return scaling_table.render(
        setups=self.setups, runs=self.runs,
        command="python -m bench.perf.scaling",
        rounds=2, warmup_steps=100, timed_steps=400, elapsed_secs=60,
        uptime_before="load average: 0.1", uptime_after="load average: 0.2",
        model=model, strategy=strategy, autogroup="/autogroup-2 nice -20",
        batch_per_worker=256)

  def test_section_has_its_markers_rows_and_target(self):
    text = self._render()
    begin, end = scaling.BEGIN, scaling.END
    self.assertTrue(text.startswith(begin) and text.endswith(end))
    self.assertIn("| harness, 2 workers, K=auto | 160 (150-170) | 80 | 9.0 |",
                  text)
    self.assertIn(">= 1.6x one worker", text)
    self.assertIn("- scheduler autogroup of the bench: /autogroup-2 nice -20",
                  text)

  def test_a_larger_machine_has_sections_of_its_own(self):
    self.assertEqual(scaling_table.markers("mlp", cores=16)[0],
                     "<!-- bench.perf.scaling 16 cores: generated section "
                     "begins -->")
    self.assertEqual(scaling_table.markers("wide", "ps", cores=2),
                     scaling_table.markers("wide", "ps"))
    text = scaling_table.render(
        setups=self.setups, runs=self.runs, command="c", rounds=2,
        warmup_steps=100, timed_steps=400, elapsed_secs=60,
        uptime_before="-", uptime_after="-", model="cnn",
        strategy="collective", autogroup=None, batch_per_worker=256,
        cores=16)
    self.assertTrue(text.startswith(scaling_table.markers("cnn",
                                                          cores=16)[0]))
    self.assertIn("1 core per worker): cnn, 16 cores\n", text)

  def test_by_size_is_set_against_round_robin(self):
    s = scaling_table.Setup
    by_size = s(runner="harness_by_size", workers=2, steps_per_loop="1")
    harness = s(runner="harness", workers=2, steps_per_loop="1")
    runs = {harness: [_run(100), _run(120)],
            by_size: [_run(150), _run(120)]}
    got = {what: each for what, _, each in scaling_table.speedups(
        [harness, by_size], runs)}
    self.assertEqual(got["harness_by_size, 2 workers, K=1 / harness, 2 "
                         "workers, K=1"], [1.5, 1.0])

  def test_estimator215_is_set_against_harness(self):
    s = scaling_table.Setup
    e215 = s(runner="estimator215", workers=2)
    harness = s(runner="harness", workers=2, steps_per_loop="auto")
    runs = {e215: [_run(100), _run(80)], harness: [_run(150), _run(160)]}
    got = {what: each for what, _, each in scaling_table.speedups(
        [e215, harness], runs)}
    self.assertEqual(got["harness, 2 workers, K=auto / estimator215, 2 "
                         "workers"], [1.5, 2.0])
    self.assertIn("- estimator215: tf.estimator 2.15's", scaling_table.render(
        setups=[e215, harness], runs=runs, command="c", rounds=2,
        warmup_steps=100, timed_steps=400, elapsed_secs=60,
        uptime_before="-", uptime_after="-", model="mlp",
        strategy="collective", autogroup=None, batch_per_worker=256))

  def test_each_model_and_strategy_has_its_own_markers(self):
    self.assertEqual(scaling_table.markers("mlp")[0],
                     "<!-- bench.perf.scaling: generated section begins -->")
    self.assertEqual(scaling_table.markers("cnn")[0],
                     "<!-- bench.perf.scaling cnn: generated section "
                     "begins -->")
    self.assertEqual(scaling_table.markers("wide", "ps")[1],
                     "<!-- bench.perf.scaling wide ps: generated section "
                     "ends -->")


def _section(model, one, two, bare2, keras2, load="1.50", e215=None):
  setups = [scaling_table.Setup(runner="harness", workers=1,
                                steps_per_loop="auto"),
            scaling_table.Setup(runner="harness", workers=2,
                                steps_per_loop="auto"),
            scaling_table.Setup(runner="bare", workers=2),
            scaling_table.Setup(runner="keras", workers=2)]
  rates = [one, two, bare2, keras2]
  if e215:
    setups.append(scaling_table.Setup(runner="estimator215", workers=2))
    rates.append(e215)
  runs = {s: [_run(r)] for s, r in zip(setups, rates)}
  return scaling_table.render(
      setups=setups, runs=runs, command="c", rounds=1, warmup_steps=100,
      timed_steps=400, elapsed_secs=1,
      uptime_before=f"load average: {load}, 1.00, 1.00", uptime_after="-",
      model=model, strategy="collective", autogroup=None,
      batch_per_worker=256)


class ReadmeSentenceTest(absltest.TestCase):

  def test_sentence_from_both_sections(self):
    # CNN: 25.6 ms a step alone (10,000 examples/s), 2 x 256 examples in
    # 34.1 ms with 2 workers: 8.5 ms more for 1.39 MB of gradients.
    text = (_section("cnn", 10000, 15000, 14000, 7500) + "\n"
            + _section("mlp", 80000, 60000, 60000, 20000, load="2.25"))
    sentence = scaling_table.readme_sentence(text)
    self.assertIn("trained the bench CNN (25.6 ms of compute a step, 1.4 MB "
                  "of gradients) at 1.50x and the bench MLP (3.2 ms of "
                  "compute a step, 1.1 MB of gradients) at 0.75x one "
                  "worker's examples/s (2-core machine, load 1.5-2.2 "
                  "before", sentence)
    self.assertIn("harness ran at 1.00-1.07x the bare `make_callable` "
                  "loop's speed, 2.00-3.00x Keras `fit`'s. Each", sentence)
    # MLP: 2 x 256 / 60,000 s = 8.5 ms a step, 5.3 ms more than 3.2 for
    # 1.08 MB; CNN: 8.5 ms more than 25.6 for 1.39 MB.
    self.assertIn("added a = 5.0-6.1 ms per MB of gradients", sentence)

  def test_sentence_sets_harness_against_215_where_it_ran(self):
    text = (_section("cnn", 10000, 15000, 14000, 7500, e215=10000) + "\n"
            + _section("mlp", 80000, 60000, 60000, 20000, e215=40000))
    self.assertIn("2.00-3.00x Keras `fit`'s and 1.50x tf.estimator 2.15's "
                  "(`train_and_evaluate` on TensorFlow 2.15). Each",
                  scaling_table.readme_sentence(text))

  def test_one_load_where_both_runs_started_alike(self):
    text = (_section("cnn", 10000, 15000, 14000, 7500, load="2.71") + "\n"
            + _section("mlp", 80000, 60000, 60000, 20000, load="2.66"))
    self.assertIn("(2-core machine, load 2.7 before;",
                  scaling_table.readme_sentence(text))

  def test_no_sentence_without_both_models(self):
    self.assertIsNone(scaling_table.readme_sentence(
        _section("cnn", 10000, 15000, 14000, 7500)))

  def test_gradient_bytes_are_the_graphs_variables(self):
    # As the traced all-reduce reported them (one packed CollectiveReduce).
    self.assertEqual(scaling_table.GRADIENT_BYTES,
                     {"mlp": 1077288, "cnn": 1388584})

  def test_readme_span_is_the_results_sentence(self):
    span, results = conftest.readme_span_and_results("scaling")
    self.assertIsNotNone(span)
    self.assertEqual(span, scaling_table.readme_sentence(results))


@pytest.mark.slow  # A 2-worker cluster on TensorFlow 2.15.
class Estimator215RunTest(absltest.TestCase):

  def test_two_215_workers_train_in_sync(self):
    if not os.path.exists(tf215_env.python_of(tf215_env.DEFAULT_VENV_DIR)):
      self.skipTest("no tf.estimator 2.15 venv: run `python -m "
                    "bench.tf215.tf215_env` (it makes one), then run it again")
    if len(os.sched_getaffinity(0)) < 2:
      self.skipTest("needs 2 cores: run it where this process may use 2")
    result = scaling.run_setup(
        scaling.Setup(runner="estimator215", workers=2), warmup_steps=2,
        timed_steps=6, timeout_secs=300, model="mlp",
        worker_args=["--runner=estimator215", "--strategy=collective"])
    self.assertNotIn("error", result)
    self.assertEqual([w["replicas"] for w in result["workers"]], [2, 2])


if __name__ == "__main__":
  absltest.main()
