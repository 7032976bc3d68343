"""`python -m harness.k8s`: runs the binary (`k8s/cli.py`)."""

import sys

from harness.k8s import cli

if __name__ == "__main__":
  sys.exit(cli.main(sys.argv))
