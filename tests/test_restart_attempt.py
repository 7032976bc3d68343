"""The JobSet restart attempt ($JOBSET_RESTART_ATTEMPT) in the log lines and
on the live metrics, only when the variable is set (issue 36 item 5).

Read once at the edge (the plan, a RunConfig); the real `harness.main` run
that shows it in its progress lines is in tests/test_trainer_status.py.
"""

import logging as std_logging
import re
import urllib.request

from absl import logging
from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness import errors
from harness.cli import job
from harness.cli import job_config
from harness.cli import log_format
from harness.cli import plan as plan_lib
from harness.cluster import restart_attempt
from harness.launch import ports
from harness.telemetry import live_metrics
from tests import _support

_ENV = restart_attempt.RESTART_ATTEMPT_ENV
_SERIES = re.compile(r"^(harness_\w+)\{([^}]*)\} \S+$", re.MULTILINE)


def _shown(message, *args):
  """The line absl's handler writes for `message % args` (filters run)."""
  record = std_logging.LogRecord("absl", std_logging.INFO, "/x/progress.py",
                                 1, message, args or None, None)
  handler = logging.get_absl_handler()
  if not handler.filter(record):
    return None
  return log_format.CompactFormatter().format(record).split(" ", 2)[2]


def _label_sets(url):
  """{series name: set of label-name tuples} at `url`."""
  with urllib.request.urlopen(url, timeout=10) as reply:
    text = reply.read().decode("utf-8")
  sets = {}
  for name, labels in _SERIES.findall(text):
    names = tuple(sorted(re.findall(r'(\w+)="', labels)))
    values = dict(re.findall(r'(\w+)="([^"]*)"', labels))
    sets.setdefault(name, set()).add((names, values.get("attempt")))
  return sets


class FromEnvironTest(parameterized.TestCase):

  @parameterized.parameters(({}, None), ({_ENV: ""}, None),
                            ({_ENV: "0"}, 0), ({_ENV: " 2 "}, 2))
  def test_values(self, environ, attempt):
    self.assertEqual(restart_attempt.from_environ(environ), attempt)

  @parameterized.parameters("two", "-1", "1.5")
  def test_bad_value_names_it_and_the_rule(self, text):
    with self.assertRaisesRegex(errors.ConfigError,
                                f"JOBSET_RESTART_ATTEMPT='{re.escape(text)}'"
                                ": the JobSet restart attempt is an int"):
      restart_attempt.from_environ({_ENV: text})

  def test_the_plan_reads_it_once_and_reports_a_bad_one(self):
    config = job_config.JobConfig()
    self.assertIsNone(plan_lib.plan_job(config, environ={}).restart_attempt)
    plan = plan_lib.plan_job(config, environ={_ENV: "2"})
    self.assertEqual(plan.restart_attempt, 2)
    self.assertTrue(job.describe(config, plan).startswith(
        "harness.main | local attempt 2 | train_and_evaluate"))
    self.assertTrue(job.describe(config, plan_lib.plan_job(
        config, environ={})).startswith("harness.main | local | "))
    with self.assertRaisesRegex(errors.ConfigError, "JOBSET_RESTART_ATTEMPT"):
      plan_lib.plan_job(config, environ={_ENV: "x"})


class LogLineTest(absltest.TestCase):

  def tearDown(self):
    log_format.show_attempt("chief/0", None)
    super().tearDown()

  def test_lines_show_the_attempt_after_this_tasks_label(self):
    log_format.show_attempt("chief/0", 2)
    self.assertEqual(_shown("train | chief/0 | step 5/10 | loss=0.3"),
                     "train | chief/0 attempt 2 | step 5/10 | loss=0.3")
    self.assertEqual(_shown("train | %s | step %d", "chief/0", 5),
                     "train | chief/0 attempt 2 | step 5")
    self.assertEqual(_shown("metrics | chief/0"),
                     "metrics | chief/0 attempt 2")
    # Another task's label, a longer one, a line without a label: as is.
    self.assertEqual(_shown("peers | chief/01 | worker/1"),
                     "peers | chief/01 | worker/1")
    self.assertEqual(_shown("eval | step 1/2"), "eval | step 1/2")
    # A call with bad %-arguments is left to the handler (not raised here).
    record = std_logging.LogRecord("absl", std_logging.INFO, "x.py", 1,
                                   "train | %d", ("chief/0",), None)
    self.assertTrue(logging.get_absl_handler().filter(record))

  def test_without_the_variable_lines_are_unchanged(self):
    log_format.show_attempt("chief/0", None)
    self.assertEqual(_shown("train | chief/0 | step 5/10"),
                     "train | chief/0 | step 5/10")
    log_format.show_attempt("chief/0", 1)
    log_format.show_attempt("chief/0", None)  # Removed again.
    self.assertEqual(_shown("train | chief/0 | step 5/10"),
                     "train | chief/0 | step 5/10")


class MetricsLabelTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.addCleanup(live_metrics.stop)
    self.port = ports.pick_free_port()

  def test_every_series_carries_the_attempt(self):
    url = live_metrics.serve(port=self.port, task_label="chief/0", attempt=2)
    live_metrics.record_progress("chief/0", step=5, max_steps=10,
                                 steps_per_sec=1.0, loss=0.5)
    live_metrics.record_eval({"accuracy": 0.5}, 5)
    sets = _label_sets(url)
    self.assertIn("harness_eval_metric", sets)
    for name, labels in sets.items():
      self.assertEqual({attempt for _, attempt in labels}, {"2"}, name)
    self.assertEqual(sets["harness_global_step"], {(("attempt", "task"),
                                                    "2")})

  def test_without_an_attempt_no_attempt_label(self):
    url = live_metrics.serve(port=self.port, task_label="chief/0")
    live_metrics.record_progress("chief/0", step=5, max_steps=10)
    sets = _label_sets(url)
    self.assertEqual(sets["harness_global_step"], {(("task",), None)})

  @pytest.mark.slow  # TensorFlow and a training run: ~60 s on a busy CI.
  def test_a_training_run_labels_its_series_from_runconfig(self):
    model_dir = self.create_tempdir().full_path
    estimator = _support.linear_estimator(
        model_dir, 5, metrics_port=self.port, log_step_count_steps=5,
        environ={_ENV: "3"})
    self.assertEqual(estimator.config.restart_attempt, 3)
    estimator.train(_support.constant_input_fn, max_steps=10)
    sets = _label_sets(live_metrics.url())
    self.assertEqual(sets["harness_global_step"], {(("attempt", "task"),
                                                    "3")})


if __name__ == "__main__":
  absltest.main()
