"""Installs harness on each Python the README names; times it; runs jobs.

    python -m bench.docfigs.install_time               # 3.10 to 3.13 (pyenv)
    python -m bench.docfigs.install_time --pythons=/usr/bin/python3.12
    python -m bench.docfigs.install_time --readme_only  # README from RESULTS

For each interpreter, one at a time: the README's install command as
written (`python -m venv V && V/bin/pip install -e '.[test]'`, with the pip
that venv brings and an empty pip cache, so every wheel is downloaded as on
a first install), timed; then, with that venv's Python, the README's main
job (its `harness.main` part as written, in a fresh model_dir) and the
README's first `harness.launch` example (2 workers and an evaluator, in a
fresh model_dir). The venv and the cache are deleted afterwards (disk).
bench/RESULTS.md keeps one row per Python ("Install on each Python"); the
README sentence between the `install-time` markers states them.
"""

import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from bench.docfigs import first_command
from bench import report

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BEGIN = "<!-- bench.docfigs.install_time: generated section begins -->"
END = "<!-- bench.docfigs.install_time: generated section ends -->"
# The pyenv interpreters of the Pythons the README names (3.10 to 3.13).
PYENV_PATTERN = os.path.expanduser("~/.pyenv/versions/3.1[0-3].*/bin/python")
_INSTALL_TIMEOUT_SECS = 1800
_JOB_TIMEOUT_SECS = 900


def launch_example(readme_text):
  """The README's first `harness.launch` example (argv), from the first
  ```bash block of its "Clusters on one machine" section."""
  section = readme_text.split("## Clusters on one machine", 1)[1]
  block = section.split("```bash\n", 1)[1].split("```", 1)[0]
  lines = block.replace("\\\n", " ").splitlines()
  command = next(l for l in lines if l.strip() and not l.startswith("#"))
  argv = shlex.split(command)
  if argv[1:3] != ["-m", "harness.launch"]:
    raise ValueError(f"the README's first launch example is not a "
                     f"harness.launch command: {command!r}")
  return argv


def with_python(argv, python, model_dir):
  """`argv` with every Python (`python`, `.venv/bin/python`) replaced by
  `python` and its --model_dir by `model_dir`."""
  out = []
  for arg in argv:
    if arg == "python" or arg.endswith("/bin/python"):
      arg = python
    elif arg.startswith("--model_dir="):
      arg = f"--model_dir={model_dir}"
    out.append(arg)
  return out


def _env(cache_dir):
  env = {k: v for k, v in os.environ.items()
         if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
  env["PIP_CACHE_DIR"] = cache_dir
  return env


def _run(argv, env, timeout):
  """(exit status, seconds, output) of one command from the root."""
  started = time.monotonic()
  try:
    result = subprocess.run(argv, cwd=_ROOT, env=env, capture_output=True,
                            text=True, timeout=timeout, check=False)
  except subprocess.TimeoutExpired as e:
    return "timeout", time.monotonic() - started, str(e.output)
  return (result.returncode, time.monotonic() - started,
          result.stdout + result.stderr)


def _job(argv, python, env):
  """'pass (N s)' or 'FAIL ...' of a job in a fresh model_dir."""
  model_dir = tempfile.mkdtemp(prefix="install_time_")
  try:
    status, secs, output = _run(with_python(argv, python, model_dir), env,
                                _JOB_TIMEOUT_SECS)
  finally:
    shutil.rmtree(model_dir, ignore_errors=True)
  if status != 0:
    print(output[-2000:], file=sys.stderr)
    return f"FAIL: exit {status} after {secs:.0f} s"
  found = first_command.accuracy(output)
  extra = f", accuracy {found:.4f}" if found is not None else ""
  return f"pass ({secs:.0f} s{extra})"


def measure(python, readme_text):
  """The results of one interpreter: a dict of the row's cells."""
  scratch = tempfile.mkdtemp(prefix="install_time_venv_")
  venv, cache = os.path.join(scratch, "v"), os.path.join(scratch, "cache")
  env = _env(cache)
  try:
    version = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    started = time.monotonic()
    status, _, tail = _run([python, "-m", "venv", venv], env, 300)
    pip = os.path.join(venv, "bin", "pip")
    pip_version = subprocess.run(
        [pip, "--version"], capture_output=True, text=True, timeout=60,
        check=False).stdout.split()[1:2] or ["?"]
    if status == 0:
      status, _, tail = _run([pip, "install", "-q", "-e", ".[test]"], env,
                             _INSTALL_TIMEOUT_SECS)
    minutes = (time.monotonic() - started) / 60
    cells = {"python": version, "minutes": minutes, "pip": pip_version[0],
             "install": "pass" if status == 0 else f"FAIL: exit {status}"}
    if status != 0:
      print(tail[-2000:], file=sys.stderr)
      cells["job"] = cells["launch"] = "not run"
      return cells
    venv_python = os.path.join(venv, "bin", "python")
    cells["tensorflow"] = subprocess.run(
        [venv_python, "-c", "import importlib.metadata as m; "
         "print(m.version('tensorflow'))"], capture_output=True, text=True,
        timeout=60, check=False).stdout.strip() or "?"
    cells["job"] = _job(first_command.main_job(readme_text), venv_python, env)
    cells["launch"] = _job(launch_example(readme_text), venv_python, env)
    return cells
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


def row(cells, load):
  """A RESULTS.md row; `load` is the 1-minute load (before, after)."""
  return (f"| {cells['python']} | {cells['minutes']:.1f} | {cells['pip']} | "
          f"{cells.get('tensorflow', '?')} | {cells['install']} | "
          f"{cells['job']} | {cells['launch']} | {load[0]:.1f} / "
          f"{load[1]:.1f} | "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} |")


def _load(cell):
  """The load before of a 'before / after' cell, to the nearest whole."""
  return round(float(cell.split("/")[0]))


def _minor(python_version):
  return ".".join(python_version.split(".")[:2])


def readme_sentence(rows):
  """The README sentence of the rows ({python version: row}); None unless
  every row passed its install, job and launch."""
  cells = [report.row_cells(r) for _, r in sorted(
      rows.items(), key=lambda kv: tuple(map(int, kv[0].split("."))))]
  if not cells or any(not c[4].startswith("pass") or not c[5].startswith(
      "pass") or not c[6].startswith("pass") for c in cells):
    return None
  times = ", ".join(
      f"{_minor(c[0])} {c[1]} min (pip {c[2]}, load {_load(c[7])})"
      for c in cells)
  return (f"The install took {times}, each from an empty pip cache on a "
          "2-core machine shared with other jobs (its 1-minute load average "
          "at the start), and the main job and a 2-worker `harness.launch` "
          "passed on each (`python -m bench.docfigs.install_time`; "
          "bench/RESULTS.md, "
          "\"Install on each Python\").")


def _rows(text):
  return report.labelled_rows(text, BEGIN, END)


def render(rows):
  lines = [BEGIN, "## Install on each Python (bench.docfigs.install_time)", "",
           "`python -m venv V && V/bin/pip install -q -e '.[test]'` with the "
           "pip the venv brings and an empty pip cache (minutes: venv and "
           "install), then with V's Python the README's main job and its "
           "first `harness.launch` example, each in a fresh model_dir; one "
           "row per Python, the newest.", "",
           "| Python | install, min | pip | TensorFlow | install | main job "
           "| 2-worker launch | load before / after | date |",
           "|---|---|---|---|---|---|---|---|---|"]
  ordered = sorted(rows, key=lambda v: tuple(map(int, v.split("."))))
  return "\n".join(lines + [rows[k] for k in ordered] + ["", END])


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.docfigs.install_time",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--pythons", default="",
                      help="comma-separated interpreters (default: "
                      f"{PYENV_PATTERN})")
  parser.add_argument("--readme_only", action="store_true",
                      help="measure nothing: write the README sentence of "
                      "bench/RESULTS.md's rows")
  args = parser.parse_args(argv)
  pythons = [p for p in args.pythons.split(",") if p] or sorted(
      glob.glob(PYENV_PATTERN))
  if args.readme_only:
    pythons = []
  elif not pythons:
    raise SystemExit(f"no interpreter found at {PYENV_PATTERN}: name them "
                     "with --pythons=PATH,...")
  readme_path = os.path.join(_ROOT, "README.md")
  results_path = os.path.join(_ROOT, "bench", "RESULTS.md")
  with open(readme_path, encoding="utf-8") as f:
    readme = f.read()
  with open(results_path, encoding="utf-8") as f:
    rows = _rows(f.read())
  for python in pythons:
    load = os.getloadavg()[0]
    cells = measure(python, readme)
    rows[cells["python"]] = row(cells, (load, os.getloadavg()[0]))
    print(rows[cells["python"]], flush=True)
    report.write_section(results_path, render(rows), begin=BEGIN, end=END)
  sentence = readme_sentence(rows)
  if sentence is None:
    print("a row failed: the README sentence is left as it was",
          file=sys.stderr)
    return 1
  report.write_readme_span("install-time", sentence, readme_path)
  return 0


if __name__ == "__main__":
  sys.exit(main())
