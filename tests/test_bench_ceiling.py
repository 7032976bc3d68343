"""Tests of bench.perf.ceiling: its flags, the runs it asks for, the
ceiling's arithmetic, the section and the README sentence it writes; and,
marked slow, that the two kinds of run it adds to bench.perf.scaling (the
all-reduce alone, one-worker jobs side by side) run (the benchmark itself is
timed, not tested)."""

import contextlib
import io
import os
from unittest import mock

from absl.testing import absltest
import pytest

from bench.perf import ceiling
from bench.perf import scaling
from tests import conftest


def _rate(rate, error=None):
  if error:
    return {"error": error, "load1": 0.5}
  return {"examples_per_sec": rate, "seconds": 1.0, "load1": 0.5,
          "workers": [{"timed_steps": 400}]}


def _allreduce(ms, error=None):
  if error:
    return {"error": error, "load1": 0.5}
  return {"examples_per_sec": 1.0, "seconds": ms * 400 / 1000.0,
          "load1": 0.5, "workers": [{"timed_steps": 400}]}


def _runs():
  """Two rounds: mlp cores that share nothing, cnn cores that do."""
  return {
      ("mlp", 2, "alone"): [_rate(100_000), _rate(102_400)],
      ("mlp", 2, "side_by_side"): [_rate(200_000), _rate(204_800)],
      ("mlp", 2, "allreduce"): [_allreduce(2.0), _allreduce(2.1)],
      ("mlp", 2, "allreduce_4b"): [_allreduce(0.6), _allreduce(0.7)],
      ("mlp", 2, "bare"): [_rate(104_000), _rate(104_000)],
      ("cnn", 2, "alone"): [_rate(16_000), _rate(16_000, "boom")],
      ("cnn", 2, "side_by_side"): [_rate(25_600), _rate(25_600)],
      ("cnn", 2, "allreduce"): [_allreduce(2.5), _allreduce(2.5)],
      ("cnn", 2, "allreduce_4b"): [_allreduce(0.6), _allreduce(0.6)],
      ("cnn", 2, "bare"): [_rate(20_000), _rate(20_000)],
  }


def _section(rows=None, cores=2):
  runs = _runs()
  return ceiling.render(
      rows=rows or ceiling.summarise(runs, ["mlp", "cnn"], [2]), runs=runs,
      command="python -m bench.perf.ceiling", rounds=2, warmup_steps=100,
      timed_steps=400, elapsed_secs=60, uptime_before="load average: 0.1",
      uptime_after="load average: 0.2", autogroup="/autogroup-2 nice -20",
      cores=cores)


class FlagsTest(absltest.TestCase):

  def _error(self, argv):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), self.assertRaises(SystemExit):
      ceiling._parse(argv)  # pylint: disable=protected-access
    return stderr.getvalue()

  def test_defaults_are_both_models_at_two_workers(self):
    args = ceiling._parse([])  # pylint: disable=protected-access
    self.assertEqual((args.model_names, args.worker_counts, args.rounds),
                     (["mlp", "cnn"], [2], 3))

  def test_one_worker_is_refused_it_is_measured_anyway(self):
    self.assertIn("each count must be >= 2", self._error(["--workers=1,2"]))

  def test_unknown_model_is_refused_by_name(self):
    self.assertIn("['wide'] unknown", self._error(["--models=mlp,wide"]))

  def test_more_workers_than_cores_is_refused(self):
    cores = len(os.sched_getaffinity(0))
    self.assertIn(f"needs {cores + 1} cores",
                  self._error([f"--workers={cores + 1}"]))


class RunsTest(absltest.TestCase):

  def _calls(self, kind):
    args = ceiling._parse([])  # pylint: disable=protected-access
    with mock.patch.object(scaling, "run_setup",
                           return_value={"load1": 0.0}) as run_setup:
      ceiling._run(kind, "cnn", 2, args)  # pylint: disable=protected-access
    (setup,), kwargs = run_setup.call_args
    return setup, kwargs

  def test_alone_is_one_bare_worker(self):
    setup, kwargs = self._calls("alone")
    self.assertEqual((setup.runner, setup.workers, kwargs["independent"]),
                     ("bare", 1, False))
    self.assertIn("--runner=bare", kwargs["worker_args"])

  def test_side_by_side_is_independent_bare_workers(self):
    setup, kwargs = self._calls("side_by_side")
    self.assertEqual((setup.runner, setup.workers, kwargs["independent"]),
                     ("bare", 2, True))

  def test_allreduce_runs_the_models_bytes_or_four(self):
    setup, kwargs = self._calls("allreduce")
    self.assertEqual((setup.runner, setup.workers, kwargs["model"]),
                     ("allreduce", 2, "cnn"))
    self.assertNotIn("--allreduce_bytes=4", kwargs["worker_args"])
    _, kwargs = self._calls("allreduce_4b")
    self.assertIn("--allreduce_bytes=4", kwargs["worker_args"])

  def test_the_bare_cluster_is_lockstep(self):
    setup, kwargs = self._calls("bare")
    self.assertEqual((setup.runner, setup.workers, kwargs["independent"]),
                     ("bare", 2, False))

  def test_independent_takes_no_parameter_servers(self):
    with self.assertRaisesRegex(ValueError, "no ps"):
      scaling.run_setup(scaling.Setup(runner="bare", workers=2),
                        warmup_steps=1, timed_steps=1, timeout_secs=1,
                        ps=1, independent=True)


class CeilingTest(absltest.TestCase):

  def test_the_formula(self):
    # c = 2.56 ms; e = 1; a = 2 ms: 2 x 2.56 / 4.56.
    self.assertAlmostEqual(
        ceiling.ceiling(alone=100_000, side_by_side=200_000, allreduce_ms=2.0,
                        workers=2), 2 * 2.56 / 4.56)
    # Cores that keep 0.8 of their speed: c / e = 3.2 ms.
    self.assertAlmostEqual(
        ceiling.ceiling(alone=100_000, side_by_side=160_000, allreduce_ms=0.0,
                        workers=2), 1.6)
    self.assertIsNone(ceiling.ceiling(alone=None, side_by_side=1,
                                      allreduce_ms=1, workers=2))

  def test_rows_are_medians_with_failed_runs_left_out(self):
    rows = {r["model"]: r for r in ceiling.summarise(_runs(), ["mlp", "cnn"],
                                                      [2])}
    mlp, cnn = rows["mlp"], rows["cnn"]
    self.assertAlmostEqual(mlp["alone"], 101_200)
    self.assertAlmostEqual(mlp["allreduce_ms"], 2.05)
    self.assertAlmostEqual(mlp["allreduce_4b_ms"], 0.65)
    self.assertEqual(cnn["alone"], 16_000)  # Round 2's failed.
    self.assertAlmostEqual(cnn["share"], 0.8)
    self.assertAlmostEqual(cnn["bare_speedup"], 1.25)
    self.assertEqual((mlp["target"], cnn["target"]), (1.6, 1.85))

  def test_room_the_target_leaves(self):
    rows = {r["model"]: r for r in ceiling.summarise(_runs(), ["mlp", "cnn"],
                                                      [2])}
    # mlp: c = 256 / 101,200 s, e = 1: 2c / 1.6 - c.
    c = 1000 * 256 / 101_200
    self.assertAlmostEqual(rows["mlp"]["allowed_ms"], 2 * c / 1.6 - c)
    # cnn: 2 cores keeping 0.8 each give 1.6x at most: no room for 1.85x.
    self.assertLess(rows["cnn"]["allowed_ms"], 0)
    self.assertIn("none: the cores alone give less", _section())

  def test_no_target_no_room(self):
    (row,) = ceiling.summarise(_runs(), ["mlp"], [3])
    self.assertIsNone(row["target"])
    self.assertIsNone(row["ceiling"])  # Nothing ran at 3.


class SectionTest(absltest.TestCase):

  def test_markers_table_and_runs(self):
    text = _section()
    begin, end = ceiling.markers()
    self.assertTrue(text.startswith(begin) and text.endswith(end))
    self.assertIn("| mlp | 2 | 101200 | 202400 (e = 1.00) | 2.05 (1.08 MB) "
                  "| 0.65 | 1.10x | 1.03x | 1.60x | 0.63 ms |", text)
    self.assertIn("| 2 | cnn | 2 | alone | n/a | n/a | 0.50 | boom |", text)
    self.assertIn("| 1 | mlp | 2 | allreduce | n/a | 2.00 | 0.50 |  |", text)

  def test_a_larger_machine_has_its_own_section(self):
    self.assertEqual(ceiling.markers(16)[0], "<!-- bench.perf.ceiling 16 "
                     "cores: generated section begins -->")
    self.assertIn("here (bench.perf.ceiling), 16 cores\n", _section(cores=16))

  def test_sentence_from_the_section(self):
    sentence = ceiling.readme_sentence("intro\n" + _section() + "\nmore")
    self.assertIn("each keep 0.80 of a core's speed (MLP: 1.00)", sentence)
    self.assertIn("takes 2.05 ms for the MLP's 1.1 MB and 2.50 ms for the "
                  "CNN's 1.4 MB (0.65 ms for 4 bytes)", sentence)
    self.assertIn("at most 1.42x (CNN) and 1.10x (MLP)", sentence)
    self.assertIn("the bare loop reached 1.25x and 1.03x (", sentence)

  def test_no_sentence_without_the_section_or_a_model(self):
    self.assertIsNone(ceiling.readme_sentence("nothing"))
    only_mlp = ceiling.render(
        rows=ceiling.summarise(_runs(), ["mlp"], [2]), runs={},
        command="c", rounds=0, warmup_steps=1, timed_steps=1,
        elapsed_secs=1, uptime_before="-", uptime_after="-", autogroup=None)
    self.assertIsNone(ceiling.readme_sentence(only_mlp))

  def test_readme_span_is_the_results_sentence(self):
    span, results = conftest.readme_span_and_results("ceiling")
    self.assertIsNotNone(span)
    self.assertEqual(span, ceiling.readme_sentence(results))


@pytest.mark.slow  # Two 2-process TensorFlow runs.
class NewRunsTest(absltest.TestCase):

  def test_allreduce_alone_and_side_by_side_run(self):
    if len(os.sched_getaffinity(0)) < 2:
      self.skipTest("needs 2 cores: run it where this process may use 2")
    allreduce = scaling.run_setup(
        scaling.Setup(runner="allreduce", workers=2), warmup_steps=2,
        timed_steps=5, timeout_secs=240, model="mlp",
        worker_args=["--runner=allreduce", "--strategy=collective",
                     "--allreduce_bytes=1024"])
    self.assertNotIn("error", allreduce)
    self.assertEqual([w["replicas"] for w in allreduce["workers"]], [2, 2])
    side = scaling.run_setup(
        scaling.Setup(runner="bare", workers=2), warmup_steps=2,
        timed_steps=5, timeout_secs=240, model="mlp",
        worker_args=["--runner=bare", "--strategy=collective"],
        independent=True)
    self.assertNotIn("error", side)
    # Two clusters of one: each its own replica, on its own core.
    self.assertEqual([w["replicas"] for w in side["workers"]], [1, 1])
    self.assertEqual([w["cpus"] for w in side["workers"]],
                     [[c] for c in sorted(os.sched_getaffinity(0))[:2]])
    self.assertAlmostEqual(side["examples_per_sec"], sum(
        256 * w["timed_steps"] / w["seconds"] for w in side["workers"]))


if __name__ == "__main__":
  absltest.main()
