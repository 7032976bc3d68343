"""Times the README's test command; writes the figure to RESULTS.md and README.

    python -m bench.suite_time                      # the README's command
    python -m bench.suite_time --label="beside CI" \\
        --beside="bash .ci/other_tensorflows"     # while CI's other legs run
    python -m bench.suite_time --yardstick          # only the machine's figure

Runs the test command README.md shows (its second line: `.venv/bin/python
-m pytest ...`) once from the repository root, with the load average before
and after, and keeps one row per label in bench/RESULTS.md ("Test suite
time"); the README sentence between the `suite-time` markers states the
newest "quiet" row and the newest "beside CI" one. A figure taken while
other work shares the cores is a row of its own label, never the quiet one:
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

from bench import report

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench.suite_time: generated section begins -->"
END = "<!-- bench.suite_time: generated section ends -->"
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


def _rows(results_text):
  return report.labelled_rows(results_text, BEGIN, END)


def readme_sentence(rows):
  """The README's figure: the newest quiet row, and the one taken beside
  the rest of CI when there is one; None without a quiet row."""
  if QUIET not in rows:
    return None
  quiet = report.row_cells(rows[QUIET])
  if len(quiet) < 6:  # A row from before the yardstick column.
    return None
  text = (f"about {round(float(quiet[1]))} minutes on a quiet 2-core machine "
          f"where `import tensorflow` takes {quiet[4]} CPU-seconds")
  beside = report.row_cells(rows[BESIDE_CI]) if BESIDE_CI in rows else []
  if len(beside) >= 6:
    text += (f", {round(float(beside[1]))} on the same machine while the "
             "rest of CI's legs run beside it")
  return text + ' (bench/RESULTS.md, "Test suite time")'


def render(rows, command):
  lines = [BEGIN, "## Test suite time (bench.suite_time)", "",
           f"The README's test command, `{command}`, on this 2-core "
           "machine; one row per label, the newest run of each.", "",
           "| label | minutes | pytest | load before / after "
           "| `import tensorflow`, CPU-s | date |",
           "|---|---|---|---|---|---|"]
  return "\n".join(lines + [rows[k] for k in sorted(rows)] + ["", END])


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.suite_time",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--label", default=QUIET,
                      help=f"the row's label: {QUIET!r} on a quiet machine, "
                      f"{BESIDE_CI!r} while CI's other legs run")
  parser.add_argument("--log", default=None,
                      help="a file for pytest's whole output")
  parser.add_argument("--beside", default=None,
                      help="a shell command to run at the same time (e.g. "
                      "`bash .ci/other_tensorflows`); the row names it")
  parser.add_argument("--yardstick", action="store_true",
                      help="print the CPU-seconds of `import tensorflow` "
                      "(median of 3) and exit")
  args = parser.parse_args(argv)
  readme_path = os.path.join(_ROOT, "README.md")
  results_path = os.path.join(_ROOT, "bench", "RESULTS.md")
  with open(readme_path, encoding="utf-8") as f:
    readme = f.read()
  command = readme_command(readme)
  yardstick = tf_import_cpu_secs(os.path.join(_ROOT, shlex.split(command)[0]))
  if args.yardstick:
    print(f"{yardstick:.1f}")
    return 0
  beside = args.beside and Beside(
      args.beside, args.log and args.log + ".beside")
  try:
    minutes, summary, before, after = measure(command, args.log)
  finally:
    beside_phrase = beside and beside.finish()
  if beside_phrase:
    summary += "; " + beside_phrase
  with open(results_path, encoding="utf-8") as f:
    rows = _rows(f.read())
  rows[args.label] = (f"| {args.label} | {minutes:.1f} | {summary} | "
                      f"{before:.1f} / {after:.1f} | {yardstick:.1f} | "
                      f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} |")
  report.write_section(results_path, render(rows, command), begin=BEGIN,
                       end=END)
  sentence = readme_sentence(rows)
  if sentence:
    report.write_readme_span("suite-time", sentence, readme_path)
  print(f"{args.label}: {minutes:.1f} min, {summary}; import tensorflow "
        f"{yardstick:.1f} CPU-s")
  return 0


if __name__ == "__main__":
  sys.exit(main())
