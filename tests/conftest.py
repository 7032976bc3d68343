"""Shared test fixtures: data paths (tests/data: the 2.15 model_dir fixtures
and the released CRDs; the shipped MNIST), the end of every child process a
test started (tests/_processes.py), one temporary folder for the whole run,
and a last line naming each promise the run skipped and how to enable it."""

import collections
import glob
import json
import os
import pathlib
import re
import shutil
import tempfile

import pytest

from tests import _processes

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
# What the tests read ships in the repository (tests/data/README.md).
DATA_DIR = REPO_ROOT / "tests" / "data"
FIXTURES_DIR = DATA_DIR / "fixtures"  # model_dirs tf.estimator 2.15 wrote.
K8S_CRDS_DIR = DATA_DIR / "k8s" / "crds"  # Trimmed: tests/_crd_copies.py.
# The project's reference folder beside the checkout, where one is (CI's):
# only tests/test_data_copies.py reads it, to check the copies above.
SHARED_DIR = pathlib.Path(
    os.environ.get("HARNESS_SHARED_DIR", REPO_ROOT.parent / "shared"))
# The MNIST test split shipped in the package (input_fns.mnist_idx's default).
MNIST_DIR = REPO_ROOT / "input_fns" / "data" / "mnist"

# absltest's create_tempdir() reads --test_tmpdir; under pytest nobody parses
# absl flags, so parse an empty command line once (defaults only).
from absl import flags as _absl_flags  # pylint: disable=g-import-not-at-top

if not _absl_flags.FLAGS.is_parsed():
  _absl_flags.FLAGS(["pytest"], known_only=True)


# Set by the pytest process that made the run's temporary folder; its
# pytest-xdist workers and every child inherit it, with TMPDIR.
TEMP_ROOT_ENV = "HARNESS_TESTS_TMPDIR"


def pytest_configure(config):
  """Every temporary file of the run goes into one folder, removed when the
  run ends: the tests' own, their children's, and what a killed process or
  one that leaves with os._exit cannot remove (a model_dir made for an
  Estimator given none, AutoGraph's source files). /tmp is left as found."""
  if os.environ.get(TEMP_ROOT_ENV):
    return  # A pytest-xdist worker: the controller made it.
  root = tempfile.mkdtemp(prefix="harness-tests-")
  os.environ[TEMP_ROOT_ENV] = os.environ["TMPDIR"] = root
  tempfile.tempdir = None  # gettempdir() reads TMPDIR again.
  config.harness_temp_root = root


def pytest_unconfigure(config):
  line = getattr(config, "harness_skipped_line", None)
  reporter = config.pluginmanager.getplugin("terminalreporter")
  if line and reporter:  # Last, after pytest's own counts.
    reporter.write_line(line.replace("\n", " "), yellow=True)
  root = getattr(config, "harness_temp_root", None)
  if root:
    shutil.rmtree(root, ignore_errors=True)


def skipped_promises(reports):
  """One line naming what the run skipped and how to enable each: the
  skipped tests grouped by their reason (which says what to install or
  set), busiest first, each with its test files; None when none skipped.

  Args:
    reports: pytest's TestReports of the skipped tests.
  """
  groups = collections.defaultdict(set)
  counts = collections.Counter()
  for report in reports:
    if isinstance(report.longrepr, tuple):  # (file, line, "Skipped: why")
      reason = report.longrepr[2]
    else:
      reason = str(report.longrepr)
    reason = re.sub(r"^Skipped: ", "", reason).strip()
    counts[reason] += 1
    groups[reason].add(report.nodeid.split("::", 1)[0].rsplit("/", 1)[-1])
  if not counts:
    return None
  parts = [f"{n} in {', '.join(sorted(groups[reason]))}: {reason}"
           for reason, n in counts.most_common()]
  total = sum(counts.values())
  return (f"{total} test{'s' * (total != 1)} skipped, not checking what "
          f"{'they promise' if total != 1 else 'it promises'}; to run "
          f"{'them' if total != 1 else 'it'}: " + " | ".join(parts))


def pytest_terminal_summary(terminalreporter, config):
  """Keeps the line naming each skipped promise for the run's end."""
  config.harness_skipped_line = skipped_promises(
      terminalreporter.stats.get("skipped", []))


@pytest.fixture(autouse=True)
def _no_child_left():
  """Kills, when a test ends, the children it started and their trees
  (tests/_processes.py); children of a class's setUpClass live on until
  the session ends."""
  mark = _processes.started()
  yield
  _processes.kill_started_since(mark)


@pytest.fixture(autouse=True, scope="session")
def _no_child_left_at_the_end():
  yield
  _processes.kill_started_since(0)


def readme_span_and_results(name):
  """(the README's text between `<!-- name -->` and `<!-- /name -->`, or
  None without those markers; bench/RESULTS.md's text): what a test pins a
  generated README sentence with."""
  readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
  span = re.search(rf"<!-- {name} -->(.*?)<!-- /{name} -->", readme,
                   re.DOTALL)
  results = (REPO_ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
  return (span.group(1) if span else None), results


def child_env(tf_config=None, extra=None):
  """os.environ for a child process: repo importable, TF_CONFIG as given.

  Args:
    tf_config: a TF_CONFIG dict for the child; None: the child gets none.
    extra: more variables ({name: value}), set last.
  """
  env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
  env["PYTHONPATH"] = str(REPO_ROOT)
  if tf_config is not None:
    env["TF_CONFIG"] = json.dumps(tf_config)
  env.update(extra or {})
  return env


def eval_steps(model_dir):
  """Global steps of the eval summaries (tag "loss") in <model_dir>/eval."""
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  steps = set()
  for path in glob.glob(os.path.join(model_dir, "eval", "events.out.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      if any(v.tag == "loss" for v in event.summary.value):
        steps.add(event.step)
  return steps


def summary_steps(model_dir, tag):
  """Sorted global steps at which <model_dir>'s own event files hold `tag`."""
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  steps = []
  for path in glob.glob(os.path.join(model_dir, "events.out.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      steps.extend(event.step for v in event.summary.value if v.tag == tag)
  return sorted(steps)
