"""Runs the README's main job several times; writes its accuracy and time.

    python -m bench.docfigs.first_command          # 5 runs, RESULTS.md, README
    python -m bench.docfigs.first_command --runs=3 --label=busy

The README's first command ends with `.venv/bin/python -m harness.main ...`;
each run is that command as written but for `--model_dir` (a fresh
temporary folder), from the repository root. A run's figures are its wall
time (process start to exit) and the accuracy of its closing evaluation (the
`accuracy` row of harness's results table). bench/RESULTS.md keeps one row
per label ("The first command") and, in the section, each row's raw data
(every run's seconds and accuracy); the README sentence between the
`first-command` markers states the newest "quiet" row: the accuracy range
and the median time, on a machine of the yardstick
`bench.docfigs.suite_time` uses.
A run asked for as quiet during which other processes used more than
`figures.QUIET_OTHER_CORES` of a core is labelled "loaded" instead.
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

from bench import figures
from bench import report
from bench.docfigs import suite_time

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BEGIN = "<!-- bench.docfigs.first_command: generated section begins -->"
END = "<!-- bench.docfigs.first_command: generated section ends -->"
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


LOADED = figures.LOADED


def summary(record):
  """(runs, accuracy min, max, seconds median, min, max) of a row's
  record: from its runs, or as recorded before runs were kept."""
  if "runs" not in record:
    return tuple(record["summary"])
  secs = [s for s, _ in record["runs"]]
  accuracies = [a for _, a in record["runs"]]
  return (len(secs), min(accuracies), max(accuracies),
          statistics.median(secs), min(secs), max(secs))


def record_of(runs, *, yardstick, load, other_cores, date):
  """A row's raw data: each run's (seconds, accuracy), the yardstick, the
  load average before and after, the cores other processes used (None:
  not measured) and the UTC date."""
  return {"runs": [[round(s, 2), a] for s, a in runs],
          "yardstick": round(yardstick, 2), "load": [round(x, 2) for x in load],
          "other_cores": other_cores, "date": date}


def _other(record):
  other = record.get("other_cores")
  return "not measured" if other is None else f"{other:.2f}"


def row(label, record):
  n, low, high, median, fastest, slowest = summary(record)
  return (f"| {label} | {n} | {low:.4f}–{high:.4f} | {median:.1f} "
          f"({fastest:.1f}–{slowest:.1f}) | {record['yardstick']:.1f} | "
          f"{record['load'][0]:.1f} / {record['load'][1]:.1f} | "
          f"{_other(record)} | {record['date']} |")


def readme_sentence(record):
  """The README's figures, from the quiet row's record."""
  n, low, high, median, _, _ = summary(record)
  if record.get("other_cores") is None:
    machine = (f"a 2-core machine at load {record['load'][0]:.1f}–"
               f"{record['load'][1]:.1f} (what other processes used was not "
               "measured then)")
  else:
    machine = (f"a quiet 2-core machine (other processes used "
               f"{record['other_cores']:.2f} of a core)")
  return (f"It ends with an accuracy of {low:.4f}–{high:.4f} ({n} runs) "
          f"after about {round(median)} s on {machine} where `import "
          f"tensorflow` takes {record['yardstick']:.1f} CPU-seconds (`python "
          "-m bench.docfigs.first_command`; bench/RESULTS.md, \"The first "
          "command\"; the install before it takes longer).")


def render(data):
  """The RESULTS.md section, from its raw data: {"command": the job's
  argv, "rows": {label: record}} (carried in the section)."""
  rows = data["rows"]
  lines = [BEGIN, "## The first command (bench.docfigs.first_command)", "",
           f"The README's main job, `{shlex.join(data['command'])}`, each "
           "run in a fresh model_dir; one row per label, the newest of each. "
           "A run asked for as \"quiet\" is labelled \"loaded\" when other "
           f"processes used more than {figures.QUIET_OTHER_CORES} of a core "
           "on average while it ran (/proc/stat, less the runs' own CPU "
           "time); only the quiet row's figures go to the README.", "",
           figures.data_line(data), "",
           "| label | runs | accuracy (min–max) | seconds, median "
           "(min–max) | `import tensorflow`, CPU-s | load before / after "
           "| other processes, cores | date |",
           "|---|---|---|---|---|---|---|---|"]
  return "\n".join(lines + [row(k, rows[k]) for k in sorted(rows)]
                   + ["", END])


def write(record, label, *, readme_path, results_path):
  """Puts `record` in RESULTS.md's section under `label` and, for a quiet
  run, the README's sentence; returns the label used."""
  label = figures.label_of(label, record["other_cores"])
  with open(readme_path, encoding="utf-8") as f:
    command = main_job(f.read())
  figures.store_row(record, label, command=command, results_path=results_path,
                    begin=BEGIN, end=END, render=render)
  if label == "quiet":
    report.write_readme_span("first-command", readme_sentence(record),
                             readme_path)
  return label


def main(argv=None, *, run=run_once, root=_ROOT,
         yardstick_fn=suite_time.tf_import_cpu_secs, watch=figures.CpuWatch):
  """The command; `run`, `yardstick_fn` and `watch` (a CpuWatch class) are
  what it measures with, `root` the repository it writes to."""
  parser = argparse.ArgumentParser(prog="python -m bench.docfigs.first_command",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--label", default="quiet",
                      help="the row's label; a 'quiet' run during which "
                      "other processes used more than "
                      f"{figures.QUIET_OTHER_CORES} of a core is labelled "
                      f"'{LOADED}' and leaves the README as it is")
  args = parser.parse_args(argv)
  readme_path = os.path.join(root, "README.md")
  with open(readme_path, encoding="utf-8") as f:
    job = main_job(f.read())
  yardstick = yardstick_fn(os.path.join(root, job[0]))
  load_before, watching = os.getloadavg()[0], watch()
  runs = [run(job) for _ in range(args.runs)]
  record = record_of(
      runs, yardstick=yardstick, load=(load_before, os.getloadavg()[0]),
      other_cores=watching.other_cores(),
      date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
  if any(a is None for _, a in runs):
    raise RuntimeError(f"a run printed no accuracy: {runs}")
  label = write(record, args.label, readme_path=readme_path,
                results_path=os.path.join(root, "bench", "RESULTS.md"))
  if label != args.label:
    print(f"other processes used {_other(record)} cores during the runs "
          f"(quiet: at most {figures.QUIET_OTHER_CORES}): labelled "
          f"{label!r}, the README keeps its figures")
  print(row(label, record))
  return 0


if __name__ == "__main__":
  sys.exit(main())
