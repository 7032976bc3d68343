"""Prints an installed distribution's requirements, one a line, minus some.

Used by the pre-release leg of .ci/other_tensorflows: harness is installed
with --no-deps (its tf-keras requirement would bring back the released
TensorFlow), then the rest of its requirements, read from its own metadata
so they never drift from setup.py:

    python .ci/other_requirements.py --extra=test --skip=tensorflow,tf-keras
"""

import argparse
import importlib.metadata

from packaging.requirements import Requirement


def other_requirements(distribution, extra, skip):
  """Returns `distribution`'s requirements (with `extra`'s) not in `skip`."""
  lines = []
  for text in importlib.metadata.requires(distribution) or ():
    requirement = Requirement(text)
    if requirement.name.lower() in skip:
      continue
    environment = {"extra": extra or ""}
    if requirement.marker and not requirement.marker.evaluate(environment):
      continue
    requirement.marker = None
    lines.append(str(requirement))
  return lines


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--distribution", default="harness")
  parser.add_argument("--extra", default="")
  parser.add_argument("--skip", default="",
                      help="comma-separated distribution names to leave out")
  args = parser.parse_args()
  skip = {name.strip().lower() for name in args.skip.split(",") if name}
  for line in other_requirements(args.distribution, args.extra, skip):
    print(line)


if __name__ == "__main__":
  main()
