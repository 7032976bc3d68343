"""Runs the README's main job several times; writes its accuracy and time.

    python -m bench.first_command            # 5 runs, RESULTS.md and README
    python -m bench.first_command --runs=3 --label=busy

The README's first command ends with `.venv/bin/python -m harness.main ...`;
each run is that command as written but for `--model_dir` (a fresh
temporary folder), from the repository root. A run's figures are its wall
time (process start to exit) and the accuracy of its closing evaluation (the
`accuracy` row of harness's results table). bench/RESULTS.md keeps one row
per label ("The first command"); the README sentence between the
`first-command` markers states the newest "quiet" row: the accuracy range
and the median time, on a machine of the yardstick `bench.suite_time` uses.
"""

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench import report
from bench import suite_time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench.first_command: generated section begins -->"
END = "<!-- bench.first_command: generated section ends -->"
_ACCURACY_RE = re.compile(r"^  accuracy +([0-9.]+)$", re.MULTILINE)
_TIMEOUT_SECS = 600


def main_job(readme_text):
  """The README's first command's last part: the harness.main run (argv)."""
  job = report.readme_commands(readme_text)[0].split(" && ")[-1]
  argv = shlex.split(job)
  if argv[1:3] != ["-m", "harness.main"]:
    raise ValueError(f"README's first command does not end in a "
                     f"harness.main run: {job!r}")
  return argv


def accuracy(output):
  """The accuracy of the run's closing results table (None if absent)."""
  found = _ACCURACY_RE.findall(output)
  return float(found[-1]) if found else None


def run_once(argv):
  """(wall seconds, accuracy) of one run in a fresh model_dir."""
  model_dir = tempfile.mkdtemp(prefix="first_command_")
  try:
    args = [a for a in argv if not a.startswith("--model_dir=")]
    args[0] = os.path.join(_ROOT, args[0])
    started = time.monotonic()
    result = subprocess.run(args + [f"--model_dir={model_dir}"], cwd=_ROOT,
                            capture_output=True, text=True,
                            timeout=_TIMEOUT_SECS, check=False)
    secs = time.monotonic() - started
  finally:
    shutil.rmtree(model_dir, ignore_errors=True)
  if result.returncode != 0:
    raise RuntimeError(f"exit {result.returncode}: "
                       f"{(result.stdout + result.stderr)[-2000:]}")
  return secs, accuracy(result.stdout + result.stderr)


def row(label, runs, yardstick, load):
  secs = [s for s, _ in runs]
  accuracies = [a for _, a in runs]
  return (f"| {label} | {len(runs)} | {min(accuracies):.4f}–"
          f"{max(accuracies):.4f} | {statistics.median(secs):.1f} "
          f"({min(secs):.1f}–{max(secs):.1f}) | {yardstick:.1f} | "
          f"{load[0]:.1f} / {load[1]:.1f} | "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} |")


def readme_sentence(quiet_row):
  cells = report.row_cells(quiet_row)
  low, high = cells[2].split("–")
  median = cells[3].split()[0]
  return (f"It ends with an accuracy of {low}–{high} ({cells[1]} runs) after "
          f"about {round(float(median))} s on a quiet 2-core machine where "
          f"`import tensorflow` takes {cells[4]} CPU-seconds "
          "(`python -m bench.first_command`; bench/RESULTS.md, \"The first "
          "command\"; the install before it takes longer).")


def _rows(text):
  return report.labelled_rows(text, BEGIN, END)


def render(rows, argv):
  lines = [BEGIN, "## The first command (bench.first_command)", "",
           f"The README's main job, `{shlex.join(argv)}`, each run in a "
           "fresh model_dir; one row per label, the newest of each.", "",
           "| label | runs | accuracy (min–max) | seconds, median "
           "(min–max) | `import tensorflow`, CPU-s | load before / after "
           "| date |",
           "|---|---|---|---|---|---|---|"]
  return "\n".join(lines + [rows[k] for k in sorted(rows)] + ["", END])


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.first_command",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--label", default="quiet")
  args = parser.parse_args(argv)
  readme_path = os.path.join(_ROOT, "README.md")
  results_path = os.path.join(_ROOT, "bench", "RESULTS.md")
  with open(readme_path, encoding="utf-8") as f:
    readme = f.read()
  job = main_job(readme)
  yardstick = suite_time.tf_import_cpu_secs(os.path.join(_ROOT, job[0]))
  load_before = os.getloadavg()[0]
  runs = [run_once(job) for _ in range(args.runs)]
  load = (load_before, os.getloadavg()[0])
  if any(a is None for _, a in runs):
    raise RuntimeError(f"a run printed no accuracy: {runs}")
  with open(results_path, encoding="utf-8") as f:
    rows = _rows(f.read())
  rows[args.label] = row(args.label, runs, yardstick, load)
  report.write_section(results_path, render(rows, job), begin=BEGIN, end=END)
  if args.label == "quiet":
    report.write_readme_span("first-command", readme_sentence(rows["quiet"]),
                             readme_path)
  print(rows[args.label])
  return 0


if __name__ == "__main__":
  sys.exit(main())
