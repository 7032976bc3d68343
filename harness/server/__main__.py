"""`python -m harness.server`: runs the binary (`server/cli.py`)."""

from harness.server import cli

if __name__ == "__main__":
  cli.run()
