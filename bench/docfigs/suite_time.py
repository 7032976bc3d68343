"""Times the README's test command; writes the figure to RESULTS.md and README.

    python -m bench.docfigs.suite_time                # the README's command
    python -m bench.docfigs.suite_time --label="beside CI" \\
        --beside="bash .ci/other_tensorflows"     # while CI's other legs run
    python -m bench.docfigs.suite_time --yardstick    # the machine's figure

Runs the test command README.md shows (its second line: `.venv/bin/python
-m pytest ...`) once from the repository root, with the load average before
and after, and keeps one row per label in bench/RESULTS.md ("Test suite
time", with each row's raw data in the section); the README sentence
between the `suite-time` markers states the newest "quiet" row and the
newest "beside CI" one. A figure taken while other work shares the cores is
a row of its own label, never the quiet one (a run asked for as quiet
during which other processes used more than `figures.QUIET_OTHER_CORES` of
a core is labelled "loaded"):
`--beside=CMD` runs the shell command CMD at the same time (its own process
group, waited for; the row names it), e.g. `bash .ci/other_tensorflows`,
CI's legs on the oldest TensorFlow and the pre-release.

2-core machines differ by more than a round's changes to the suite do, so
each row also carries the machine's yardstick: the CPU-seconds that `import
tensorflow` takes in the command's interpreter (median of 3), a large part
of what each of the suite's few hundred TensorFlow processes spends.
"""

import argparse
import os
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import time

from bench import figures
from bench import report

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BEGIN = "<!-- bench.docfigs.suite_time: generated section begins -->"
END = "<!-- bench.docfigs.suite_time: generated section ends -->"
QUIET = "quiet"
BESIDE_CI = "beside CI"


def readme_command(readme_text):
  """The test command: the README's first code block, second line."""
  return report.readme_commands(readme_text)[1]


def _load():
  return os.getloadavg()[0]


def child_cpu_secs(argv):
  """The CPU-seconds (user + system) a fresh process running `argv` took."""
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  subprocess.run(argv, cwd=_ROOT, capture_output=True, timeout=300,
                 check=True)
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  return (after.ru_utime - before.ru_utime
          + after.ru_stime - before.ru_stime)


def tf_import_cpu_secs(python, runs=3):
  """The median CPU-seconds of `python -c 'import tensorflow'`."""
  return statistics.median(
      child_cpu_secs([python, "-c", "import tensorflow"])
      for _ in range(runs))


def measure(command, log=None):
  """(minutes, pytest's closing line, load before, load after); pytest's
  whole output goes to the file `log` when given."""
  load_before, started = _load(), time.monotonic()
  result = subprocess.run(shlex.split(command), cwd=_ROOT, text=True,
                          capture_output=True, timeout=3 * 3600, check=False)
  minutes = (time.monotonic() - started) / 60
  if log:
    with open(log, "w", encoding="utf-8") as f:  # local-fs: a bench log
      f.write(result.stdout + result.stderr)
  summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
  return minutes, summary.strip("= "), load_before, _load()


class Beside:
  """A shell command run beside the measured one, in its own process group;
  its output goes to `log` (or nowhere)."""

  def __init__(self, shell_command, log=None):
    self.command = shell_command
    self._out = log and open(log, "w", encoding="utf-8")  # local-fs: a log
    self._started = time.monotonic()
    self._proc = subprocess.Popen(
        ["bash", "-c", shell_command], cwd=_ROOT, start_new_session=True,
        stdout=self._out or subprocess.DEVNULL, stderr=subprocess.STDOUT)

  def finish(self, timeout_secs=3600):
    """Waits for the command (killing its group after `timeout_secs`); a
    phrase for the row: the command, its exit status and minutes."""
    try:
      code = self._proc.wait(timeout=timeout_secs)
    except subprocess.TimeoutExpired:
      os.killpg(self._proc.pid, signal.SIGKILL)
      code = self._proc.wait()
    minutes = (time.monotonic() - self._started) / 60
    if self._out:
      self._out.close()
    return f"beside: `{self.command}`, exit {code} after {minutes:.1f} min"


LOADED = figures.LOADED


def record_of(*, minutes, pytest, load, yardstick, other_cores, date):
  """A row's raw data: the wall minutes, pytest's closing line (and the
  command beside it), the load average before and after, the yardstick,
  the cores other processes used (None: not measured) and the UTC date."""
  return {"minutes": round(minutes, 2), "pytest": pytest,
          "load": [round(x, 2) for x in load], "yardstick": round(yardstick, 2),
          "other_cores": other_cores, "date": date}


def _other(record):
  other = record.get("other_cores")
  return "not measured" if other is None else f"{other:.2f}"


def row(label, record):
  return (f"| {label} | {record['minutes']:.1f} | {record['pytest']} | "
          f"{record['load'][0]:.1f} / {record['load'][1]:.1f} | "
          f"{record['yardstick']:.1f} | {_other(record)} | {record['date']} |")


def readme_sentence(records):
  """The README's figure: the newest quiet row, and the one taken beside
  the rest of CI when there is one; None without a quiet row."""
  if QUIET not in records:
    return None
  quiet = records[QUIET]
  if quiet.get("other_cores") is None:
    machine = (f"a 2-core machine at load {quiet['load'][0]:.1f}–"
               f"{quiet['load'][1]:.1f} (what other processes used was not "
               "measured then)")
  else:
    machine = (f"a quiet 2-core machine (other processes used "
               f"{quiet['other_cores']:.2f} of a core)")
  text = (f"about {round(quiet['minutes'])} minutes on {machine} where "
          f"`import tensorflow` takes {quiet['yardstick']:.1f} CPU-seconds")
  if BESIDE_CI in records:
    text += (f", {round(records[BESIDE_CI]['minutes'])} on the same machine "
             "while the rest of CI's legs run beside it")
  return text + ' (bench/RESULTS.md, "Test suite time")'


def render(data):
  """The RESULTS.md section, from its raw data: {"command": the test
  command, "rows": {label: record}} (carried in the section)."""
  rows = data["rows"]
  lines = [BEGIN, "## Test suite time (bench.docfigs.suite_time)", "",
           f"The README's test command, `{data['command']}`, on this 2-core "
           "machine; one row per label, the newest run of each. A run "
           "asked for as \"quiet\" is labelled \"loaded\" when other "
           f"processes used more than {figures.QUIET_OTHER_CORES} of a core "
           "on average while it ran (/proc/stat, less the run's own CPU "
           "time).", "", figures.data_line(data), "",
           "| label | minutes | pytest | load before / after "
           "| `import tensorflow`, CPU-s | other processes, cores | date |",
           "|---|---|---|---|---|---|---|"]
  return "\n".join(lines + [row(k, rows[k]) for k in sorted(rows)]
                   + ["", END])


def write(record, label, *, readme_path, results_path):
  """Puts `record` in RESULTS.md's section under `label` (a loaded "quiet"
  run as "loaded") and the README's sentence; returns the label used."""
  label = figures.label_of(label, record["other_cores"])
  with open(readme_path, encoding="utf-8") as f:
    command = readme_command(f.read())
  data = figures.store_row(record, label, command=command,
                           results_path=results_path, begin=BEGIN, end=END,
                           render=render)
  sentence = readme_sentence(data["rows"])
  if sentence:
    report.write_readme_span("suite-time", sentence, readme_path)
  return label


def main(argv=None, *, measure_fn=measure, root=_ROOT,
         yardstick_fn=tf_import_cpu_secs, watch=figures.CpuWatch):
  """The command; `measure_fn`, `yardstick_fn` and `watch` (a CpuWatch
  class) are what it measures with, `root` the repository it writes to."""
  parser = argparse.ArgumentParser(prog="python -m bench.docfigs.suite_time",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--label", default=QUIET,
                      help=f"the row's label: {QUIET!r} on a quiet machine "
                      f"(a run during which other processes used more than "
                      f"{figures.QUIET_OTHER_CORES} of a core is labelled "
                      f"{LOADED!r}), {BESIDE_CI!r} while CI's other legs run")
  parser.add_argument("--log", default=None,
                      help="a file for pytest's whole output")
  parser.add_argument("--beside", default=None,
                      help="a shell command to run at the same time (e.g. "
                      "`bash .ci/other_tensorflows`); the row names it")
  parser.add_argument("--yardstick", action="store_true",
                      help="print the CPU-seconds of `import tensorflow` "
                      "(median of 3) and exit")
  args = parser.parse_args(argv)
  readme_path = os.path.join(root, "README.md")
  with open(readme_path, encoding="utf-8") as f:
    command = readme_command(f.read())
  yardstick = yardstick_fn(os.path.join(root, shlex.split(command)[0]))
  if args.yardstick:
    print(f"{yardstick:.1f}")
    return 0
  watching = watch()
  beside = args.beside and Beside(
      args.beside, args.log and args.log + ".beside")
  try:
    minutes, summary, before, after = measure_fn(command, args.log)
  finally:
    beside_phrase = beside and beside.finish()
  if beside_phrase:
    summary += "; " + beside_phrase
  record = record_of(minutes=minutes, pytest=summary, load=(before, after),
                     yardstick=yardstick, other_cores=watching.other_cores(),
                     date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
  label = write(record, args.label, readme_path=readme_path,
                results_path=os.path.join(root, "bench", "RESULTS.md"))
  print(f"{label}: {minutes:.1f} min, {summary}; import tensorflow "
        f"{yardstick:.1f} CPU-s; other processes {_other(record)} cores")
  return 0


if __name__ == "__main__":
  sys.exit(main())
