"""Runs tf.estimator 2.15's own tests against harness; writes docs/COMPAT.md.

    git clone --branch v2.15.0 https://github.com/tensorflow/estimator
    python -m bench.tf215.compat215 --estimator_src=estimator  # COMPAT.md
    python -m bench.tf215.compat215 --estimator_src=estimator --reference
    python -m bench.tf215.compat215 --estimator_src=estimator --files=gc_test

Each of the v2.15.0 test files in FILES is copied to a scratch folder outside
the project (`--work_dir`) beside a conftest that imports `harness.compat`
and registers the canned `dnn_testing_utils` / `linear_testing_utils` of
the same checkout, then run alone: `python -m pytest -q -p no:cacheprovider
-rfE FILE`, with a time limit a file (`--file_timeout_secs`) and pandas
importable (put it on PYTHONPATH if the python lacks it). estimator_test
runs with DESELECTED left out (they wait for the TF_CONFIG's absent peers,
see the ledger). The conftest records every test's outcome, subtests
included (pytest >= 9 reports absltest's subTest failures).

`--reference` runs the same files, nothing deselected and no harness, on
tf.estimator 2.15 itself (the side venv of bench.tf215.tf215_env, with pytest
and pandas added) and writes the tests it passes to
bench/tf215/compat215_reference.json.
The default run compares harness with that file and rewrites docs/COMPAT.md's
section between its `<!-- compat215 -->` markers: the table, the totals and
every failing test with its reason from bench/tf215/compat215_reasons.json. A
failing test with no recorded reason, a reason whose test passes now (stale)
or a file that ran out of time is printed, and the exit status is 1.
`--files` reruns some files; the others' results are read from `--work_dir`.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from bench.tf215 import compat215_table as table_lib
from bench.tf215 import tf215_env

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_PKG = os.path.join("tensorflow_estimator", "python", "estimator")
REFERENCE = os.path.join(_ROOT, "bench", "tf215", "compat215_reference.json")
REASONS = os.path.join(_ROOT, "bench", "tf215", "compat215_reasons.json")
HARNESS = os.path.join(_ROOT, "bench", "tf215", "compat215_harness.json")
# The v2.15.0 test files issue 28 ran, under tensorflow_estimator/python/estimator.
FILES = (
    "keras_test", "estimator_test", "model_fn_test", "training_test",
    "exporter_test", "hooks/hooks_test", "export/export_test",
    "early_stopping_test", "util_test", "gc_test", "estimator_export_test",
    "tpu/tpu_config_test", "head/multi_class_head_test",
    "head/multi_label_head_test", "head/regression_head_test",
    "head/multi_head_test", "head/base_head_test", "canned/baseline_test",
    "canned/baseline_estimator_test", "canned/dnn_estimator_test",
    "canned/dnn_linear_combined_estimator_test",
    "canned/dnn_linear_combined_test", "canned/linear_test")
DESELECTED = tuple(
    f"estimator_test.py::EstimatorTrainTest::{name}" for name in (
        "test_master_distributed_hooks",
        "test_master_distributed_hooks_for_worker_0",
        "test_master_distributed_hooks_for_worker_nonzero",
        "test_master_hooks_single_replica",
        "test_master_hooks_single_replica_with_ps",
        "test_hooks_with_distributed_collective_ops"))
_TESTING_UTILS = ("canned.dnn_testing_utils", "canned.linear_testing_utils")

_RECORDER = '''
import json as _json
import os as _os


def _record(nodeid, when, outcome, subtest):
  with open(_os.environ["COMPAT215_OUTCOMES"], "a", encoding="utf-8") as f:
    f.write(_json.dumps({"nodeid": nodeid, "when": when, "outcome": outcome,
                         "subtest": subtest}) + "\\n")


def pytest_collectreport(report):
  if report.failed:
    _record(report.nodeid, "collect", "failed", False)


def pytest_runtest_logreport(report):
  _record(report.nodeid, report.when, report.outcome,
          type(report).__name__ == "SubtestReport")
'''

_HARNESS = '''
import importlib.util as _util
import sys as _sys

import harness.compat  # noqa: F401  (the tensorflow_estimator aliases)

for _rel in {utils!r}:
  for _root in ("tensorflow_estimator.python.estimator",
                "tensorflow.python.estimator"):
    _name = f"{{_root}}.{{_rel}}"
    _spec = _util.spec_from_file_location(
        _name, _os.path.join({src!r}, *_rel.split(".")) + ".py")
    _module = _util.module_from_spec(_spec)
    _sys.modules[_name] = _module
    _spec.loader.exec_module(_module)
    _parent, _, _leaf = _name.rpartition(".")
    setattr(_sys.modules[_parent], _leaf, _module)
'''


def conftest_text(src, reference):
  """The scratch folder's conftest: the recorder, and for harness the
  aliases and the checkout's canned testing utils."""
  text = '"""Written by bench.tf215.compat215."""\n' + _RECORDER
  if not reference:
    text += _HARNESS.format(utils=_TESTING_UTILS,
                            src=os.path.join(os.path.abspath(src), _PKG))
  return text


def _env(reference, outcomes_path):
  env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
  env["COMPAT215_OUTCOMES"] = outcomes_path
  if reference:
    env.pop("PYTHONPATH", None)  # the harness venv's packages do not fit 2.15
  else:
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p)
  return env


def _check_python(python, env):
  check = subprocess.run(
      [python, "-c", "import pandas, pytest; "
       "assert int(pytest.__version__.split('.')[0]) >= 9, pytest.__version__"],
      env=env, capture_output=True, text=True, timeout=300, check=False)
  if check.returncode != 0:
    raise SystemExit(
        f"bench.tf215.compat215: {python} needs pandas and pytest >= 9 "
        "(pytest 9 "
        "reports absltest subtests): pip install pandas 'pytest>=9', or put "
        "pandas on PYTHONPATH. " + check.stderr.strip().splitlines()[-1])


def run_file(python, rel, scratch, env, timeout_secs, reference):
  """Runs one test file; returns its meta (exit status, seconds, timed out)."""
  stem = os.path.basename(rel)
  outcomes_path = env["COMPAT215_OUTCOMES"]
  if os.path.exists(outcomes_path):
    os.remove(outcomes_path)
  command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE",
             f"{stem}.py"]
  if not reference:
    command += [f"--deselect={test}" for test in DESELECTED
                if test.startswith(f"{stem}.py::")]
  started = time.monotonic()
  with open(os.path.join(scratch, f"{stem}.log"), "w") as log:
    process = subprocess.Popen(command, cwd=scratch, env=env, stdout=log,
                               stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
      status, timed_out = process.wait(timeout=timeout_secs), False
    except subprocess.TimeoutExpired:
      os.killpg(process.pid, signal.SIGKILL)
      status, timed_out = process.wait(timeout=60), True
  return {"exit_status": status, "timed_out": timed_out,
          "seconds": round(time.monotonic() - started)}


def run_files(python, src, files, scratch, timeout_secs, reference):
  os.makedirs(scratch, exist_ok=True)
  with open(os.path.join(scratch, "conftest.py"), "w") as f:
    f.write(conftest_text(src, reference))
  env = _env(reference, "")
  _check_python(python, env)
  for rel in files:
    stem = os.path.basename(rel)
    shutil.copy(os.path.join(src, _PKG, rel + ".py"), scratch)
    env["COMPAT215_OUTCOMES"] = os.path.join(scratch, f"{stem}.jsonl")
    meta = run_file(python, rel, scratch, env, timeout_secs, reference)
    with open(os.path.join(scratch, f"{stem}.meta.json"), "w") as f:
      json.dump(meta, f)
    print(f"{stem}: exit {meta['exit_status']}, {meta['seconds']} s"
          + (" (TIMED OUT)" if meta["timed_out"] else ""), flush=True)


def read_results(scratch):
  """{stem: outcomes}; raises SystemExit naming a file not run or cut off."""
  results, problems = {}, []
  for rel in FILES:
    stem = os.path.basename(rel)
    meta_path = os.path.join(scratch, f"{stem}.meta.json")
    if not os.path.exists(meta_path):
      problems.append(f"{stem}: not run in {scratch}")
      continue
    with open(meta_path) as f:
      meta = json.load(f)
    if meta["timed_out"]:
      problems.append(f"{stem}: cut off after {meta['seconds']} s; rerun it "
                      f"alone: --files={stem} --file_timeout_secs=...")
    elif meta["exit_status"] < 0:
      problems.append(f"{stem}: pytest was killed by signal "
                      f"{-meta['exit_status']}; rerun it: --files={stem}")
    lines_path = os.path.join(scratch, f"{stem}.jsonl")
    lines = []
    if os.path.exists(lines_path):
      with open(lines_path) as f:
        lines = f.readlines()
    results[stem] = table_lib.outcomes(lines)
  if problems:
    raise SystemExit("bench.tf215.compat215: " + "; ".join(problems))
  return results


def _versions(python):
  out = subprocess.run(
      [python, "-c", "from importlib import metadata as m; print(' '.join("
       "m.version(p) for p in ('tensorflow-cpu', 'tensorflow-estimator')))"],
      env=_env(True, ""), capture_output=True, text=True, timeout=300,
      check=True).stdout.split()
  return {"tensorflow-cpu": out[0], "tensorflow-estimator": out[1]}


def write_reference(python, results, path=REFERENCE):
  """bench/tf215/compat215_reference.json: per file the tests 2.15 passes."""
  files = {}
  for stem, got in results.items():
    statuses = [status for status, _ in got.values()]
    files[stem] = {
        "passes": sorted(t for t, (s, sub) in got.items()
                         if s == "passed" and not sub),
        "skipped": statuses.count("skipped"),
        "failed": len(got) - statuses.count("skipped")
                  - sum(1 for s, sub in got.values() if s == "passed"
                        and not sub)}
  data = {"versions": _versions(python), "files": files}
  with open(path, "w", encoding="utf-8") as f:
    json.dump(data, f, indent=1, sort_keys=True)
    f.write("\n")
  for stem, entry in files.items():
    print(f"{stem}: 2.15 passes {len(entry['passes'])}")


def load_reasons(path=REASONS):
  """{test id: reason} from the reasons file ({"reasons": {key: text},
  "tests": {test id: key}})."""
  with open(path, encoding="utf-8") as f:
    data = json.load(f)
  return {test: data["reasons"][key] for test, key in data["tests"].items()}


def load_json(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def write_harness(results, path=HARNESS):
  """bench/tf215/compat215_harness.json: every test's outcome on harness."""
  with open(path, "w", encoding="utf-8") as f:
    json.dump({stem: {t: list(o) for t, o in got.items()}
               for stem, got in results.items()}, f, indent=0,
              sort_keys=True)
    f.write("\n")


def section_and_table(reference, harness, reasons):
  """COMPAT.md's generated section and its rows, from the three files'
  contents (reference, harness: as written; reasons: load_reasons)."""
  stems = [os.path.basename(rel) for rel in FILES]
  results = {s: {t: tuple(o) for t, o in harness[s].items()} for s in stems}
  table = table_lib.rows(
      stems, {s: reference["files"][s]["passes"] for s in stems}, results)
  versions = ", ".join(f"{k} {v}" for k, v in reference["versions"].items())
  provenance = (
      "\"2.15 passes\": the tests that pass with no failing subtest on "
      f"tf.estimator 2.15 itself ({versions}), run by `python -m "
      "bench.tf215.compat215 --reference` into "
      "bench/tf215/compat215_reference.json; "
      "harness's outcomes are in bench/tf215/compat215_harness.json.")
  return table_lib.render(table, reasons, provenance), table


def write_doc(results, doc_path, files_run):
  """Rewrites COMPAT.md's section; returns the exit status (1: a reason
  is missing or stale)."""
  write_harness(results)
  reasons = load_reasons()
  section, table = section_and_table(load_json(REFERENCE),
                                     load_json(HARNESS), reasons)
  with open(doc_path, encoding="utf-8") as f:
    text = f.read()
  with open(doc_path, "w", encoding="utf-8") as f:
    f.write(table_lib.replace_section(text, section))
  missing, stale = table_lib.reason_problems(table, reasons, files_run)
  for name, passed, now, clean, failing, _ in table:
    print(f"{name}: 2.15 passes {passed}, harness {now}, no failing "
          f"subtest {clean}, failing {len(failing)}")
  print(next(p for p in section.split("\n\n") if p.startswith("In all")))
  for test in missing:
    print(f"no reason recorded yet: {test} (add it to {REASONS})")
  for test in stale:
    print(f"stale reason: {test} passes now (remove it from {REASONS})")
  return 1 if missing or stale else 0


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.tf215.compat215",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--estimator_src", required=True,
                      help="a checkout of tensorflow/estimator at v2.15.0")
  parser.add_argument("--reference", action="store_true",
                      help="run on tf.estimator 2.15; write the reference")
  parser.add_argument("--files", default="",
                      help="comma-separated file stems to (re)run; default all")
  parser.add_argument("--python", default=None,
                      help="default: this python, or with --reference the "
                      "bench.tf215.tf215_env venv's")
  parser.add_argument("--work_dir", default=os.path.join(
      tempfile.gettempdir(), "harness_compat215"))
  parser.add_argument("--file_timeout_secs", type=int, default=2400)
  parser.add_argument("--render_only", action="store_true",
                      help="run nothing; use the results in --work_dir")
  parser.add_argument("--doc", default=os.path.join(_ROOT, "docs",
                                                    "COMPAT.md"))
  args = parser.parse_args(argv)
  if not os.path.exists(os.path.join(args.estimator_src, _PKG,
                                     "estimator_test.py")):
    raise SystemExit(
        f"bench.tf215.compat215: --estimator_src={args.estimator_src} has no "
        f"{_PKG}/estimator_test.py; give a checkout of v2.15.0: git clone "
        "--branch v2.15.0 https://github.com/tensorflow/estimator")
  stems = {os.path.basename(rel): rel for rel in FILES}
  wanted = [s for s in args.files.split(",") if s] or list(stems)
  unknown = [s for s in wanted if s not in stems]
  if unknown:
    raise SystemExit(f"bench.tf215.compat215: --files={args.files}: "
                     f"{unknown} not in FILES ({', '.join(stems)})")
  python = args.python or (tf215_env.ensure(extra=tf215_env.COMPAT_EXTRA)
                           if args.reference else sys.executable)
  scratch = os.path.join(args.work_dir,
                         "reference" if args.reference else "harness")
  if not args.render_only:
    run_files(python, args.estimator_src, [stems[s] for s in wanted],
              scratch, args.file_timeout_secs, args.reference)
  results = read_results(scratch)
  if args.reference:
    write_reference(python, results)
    return 0
  return write_doc(results, args.doc, set(wanted))


if __name__ == "__main__":
  sys.exit(main())
