"""`python -m harness.launch`: see `harness/launch/cli.py`."""

from harness.launch import cli

if __name__ == "__main__":
  cli.run()
