"""Command-line plumbing shared by the small binaries (launch, server).

A bad flag or argument is one line on stderr and exit status 2::

    app.run(main, flags_parser=cli.flags_parser("launch", _USAGE))
    ...
    cli.usage_error("launch", "no command: ...", _USAGE)
"""

import sys

from absl import flags

__all__ = ["flags_parser", "usage_error"]


def usage_error(program, message, usage=None):
  """Writes `program: error: message` (and `usage`) to stderr; exits 2."""
  sys.stderr.write(f"{program}: error: {message}\n")
  if usage:
    sys.stderr.write(f"{usage}\n")
  sys.stderr.flush()
  sys.exit(2)


def flags_parser(program, usage=None):
  """An absl `flags_parser` that reports a bad flag with `usage_error`."""

  def parse(argv):
    try:
      return flags.FLAGS(argv)
    except flags.Error as e:
      usage_error(program, str(e), usage)

  return parse
