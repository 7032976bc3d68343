"""The side environment with REAL tf.estimator 2.15 that bench.tf215.vs215 runs.

Creates (once) a Python venv with tensorflow-cpu 2.15 and
tensorflow-estimator 2.15 from PyPI, outside the project's own venv::

    python -m bench.tf215.tf215_env       # creates or checks; prints its python
    python -m bench.tf215.tf215_env --venv_dir=/tmp/other

Needs `python3.11` (TF 2.15 has no wheels for newer Pythons) and network
access to PyPI the first time; later calls only check the imports.
"""

import argparse
import os
import shutil
import subprocess
import sys

__all__ = ["COMPAT_EXTRA", "DEFAULT_VENV_DIR", "ensure", "python_of"]

DEFAULT_VENV_DIR = "/tmp/harness_bench_tf215_venv"
_PACKAGES = ("tensorflow-cpu==2.15.*", "tensorflow-estimator==2.15.*")
# What bench.tf215.compat215 --reference adds: pytest >= 9 reports absltest's
# subtests; 2.15's own run had pandas (its pandas tests pass vacuously
# without it); numpy stays below 2 for TF 2.15.
COMPAT_EXTRA = ("pytest>=9", "pandas", "numpy<2")
_CHECK = ("import tensorflow as tf, tensorflow_estimator as e; "
          "assert tf.__version__.startswith('2.15'), tf.__version__; "
          "print(tf.__version__, e.__name__)")


def python_of(venv_dir):
  return os.path.join(venv_dir, "bin", "python")


def _works(python, extra=()):
  if not os.path.exists(python):
    return False
  check = _CHECK + "".join(
      f"; import {name.split('>')[0].split('=')[0]}" for name in extra)
  result = subprocess.run([python, "-c", check], capture_output=True,
                          text=True, timeout=300, check=False)
  return result.returncode == 0


def ensure(venv_dir=DEFAULT_VENV_DIR, base_python=None, extra=()):
  """Returns the side venv's python, creating the venv if it is missing.

  extra: more pip requirements (e.g. COMPAT_EXTRA), installed if missing.
  """
  python = python_of(venv_dir)
  if _works(python, extra):
    return python
  if extra and _works(python):
    subprocess.run([python, "-m", "pip", "install", "--quiet", *extra],
                   check=True, timeout=1800)
    return python
  base_python = base_python or shutil.which("python3.11")
  if base_python is None:
    raise SystemExit("bench.tf215.tf215_env needs python3.11 on PATH "
                     "(TF 2.15 has "
                     "no wheels for newer Pythons); pass --base_python.")
  subprocess.run([base_python, "-m", "venv", "--clear", venv_dir], check=True,
                 timeout=300)
  subprocess.run([python, "-m", "pip", "install", "--quiet", *_PACKAGES,
                  *extra],
                 check=True, timeout=1800)
  if not _works(python):
    raise SystemExit(f"{venv_dir}: tensorflow 2.15 does not import after "
                     "installation; delete the folder and retry.")
  return python


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--venv_dir", default=DEFAULT_VENV_DIR)
  parser.add_argument("--base_python", default=None)
  args = parser.parse_args(argv)
  print(ensure(args.venv_dir, args.base_python))
  return 0


if __name__ == "__main__":
  sys.exit(main())
