"""Reports how it was started, then exits with the status given in argv.

    python -m harness.run tests/legacy_programs/legacy_argv.py OUT_JSON STATUS

Writes sys.argv, __name__, sys.path[0] and whether tf.estimator resolves to
harness to OUT_JSON, then calls sys.exit(int(STATUS)).
"""

import json
import sys

import tensorflow as tf


def main():
  out_path, status = sys.argv[1], int(sys.argv[2])
  with open(out_path, "w") as f:
    json.dump({
        "argv": sys.argv,
        "name": __name__,
        "path0": sys.path[0],
        "estimator": tf.estimator.Estimator.__module__,
        "v1_estimator": tf.compat.v1.estimator.Estimator.__module__,
    }, f)
  sys.exit(status)


if __name__ == "__main__":
  main()
