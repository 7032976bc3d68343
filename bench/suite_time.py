"""Times the README's test command; writes the figure to RESULTS.md and README.

    python -m bench.suite_time                      # the README's command
    python -m bench.suite_time --label="beside CI" # a second row, same command
    python -m bench.suite_time --yardstick          # only the machine's figure

Runs the test command README.md shows (its second line: `.venv/bin/python
-m pytest ...`) once from the repository root, with the load average before
and after, and keeps one row per label in bench/RESULTS.md ("Test suite
time"); the README sentence between the `suite-time` markers states the
newest "quiet" row. 2-core machines differ by more than a round's changes
to the suite do, so each row also carries the machine's yardstick: the
CPU-seconds that `import tensorflow` takes in the command's interpreter
(median of 3), a large part of what each of the suite's few hundred
TensorFlow processes spends. A figure taken while other work shares the cores is a
row of its own label, never the quiet one.
"""

import argparse
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import time

from bench import report

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench.suite_time: generated section begins -->"
END = "<!-- bench.suite_time: generated section ends -->"
_README_BEGIN = "<!-- suite-time -->"
_README_END = "<!-- /suite-time -->"
_ROW_RE = re.compile(r"^\| (?P<label>[^|]+) \| (?P<minutes>[\d.]+) \|")


def readme_command(readme_text):
  """The test command: the README's first code block, second line."""
  block = readme_text.split("```bash\n", 1)[1].split("```", 1)[0]
  return block.strip().splitlines()[1]


def _load():
  return os.getloadavg()[0]


def tf_import_cpu_secs(python, runs=3):
  """The median CPU-seconds (user + system) of `python -c 'import
  tensorflow'`, each run a fresh process."""
  figures = []
  for _ in range(runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([python, "-c", "import tensorflow"], cwd=_ROOT,
                   capture_output=True, timeout=300, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures.append(after.ru_utime - before.ru_utime
                   + after.ru_stime - before.ru_stime)
  return statistics.median(figures)


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


def _rows(results_text):
  if BEGIN not in results_text:
    return {}
  section = results_text.split(BEGIN, 1)[1].split(END, 1)[0]
  return {m["label"].strip(): line for line in section.splitlines()
          if (m := _ROW_RE.match(line))}


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
  parser.add_argument("--label", default="quiet")
  parser.add_argument("--log", default=None,
                      help="a file for pytest's whole output")
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
  minutes, summary, before, after = measure(command, args.log)
  with open(results_path, encoding="utf-8") as f:
    rows = _rows(f.read())
  rows[args.label] = (f"| {args.label} | {minutes:.1f} | {summary} | "
                      f"{before:.1f} / {after:.1f} | {yardstick:.1f} | "
                      f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} |")
  report.write_section(results_path, render(rows, command), begin=BEGIN,
                       end=END)
  if args.label == "quiet" and _README_BEGIN in readme:
    head, rest = readme.split(_README_BEGIN, 1)
    tail = rest.split(_README_END, 1)[1]
    text = (f"{_README_BEGIN}about {round(minutes)} minutes on a quiet 2-core "
            f"machine where `import tensorflow` takes {yardstick:.1f} "
            "CPU-seconds (bench/RESULTS.md, \"Test suite time\")"
            f"{_README_END}")
    with open(readme_path, "w", encoding="utf-8") as f:
      f.write(head + text + tail)
  print(f"{args.label}: {minutes:.1f} min, {summary}; import tensorflow "
        f"{yardstick:.1f} CPU-s")
  return 0


if __name__ == "__main__":
  sys.exit(main())
