"""How the binaries answer a bad flag and `--help` (launch, server, k8s).

A bad flag or argument is one line on stderr and exit status 2; `--help`
prints the binary's own text and its flags (no source paths), exit 0::

    from harness.cli import binary_flags

    app.run(main, flags_parser=binary_flags.flags_parser(
        "launch", _USAGE, _help))
    ...
    binary_flags.usage_error("launch", "no command: ...", _USAGE)
"""

import sys
import textwrap

from absl import flags

from harness.cli import log_format

__all__ = ["flags_parser", "usage_error", "wants_help", "flag_help"]

HELP_ARGS = ("-h", "-?", "--help", "--helpshort", "--helpfull")


def usage_error(program, message, usage=None):
  """Writes `program: error: message` (and `usage`) to stderr; exits 2."""
  sys.stderr.write(log_format.fold(f"{program}: error: {message}") + "\n")
  if usage:
    sys.stderr.write(f"{usage}\n")
  sys.stderr.flush()
  sys.exit(2)


def wants_help(args):
  """Whether `args` (no program name) ask for help before any `--`."""
  own = args[:args.index("--")] if "--" in args else args
  return any(arg in HELP_ARGS for arg in own)


def flag_help(flag_values, names):
  """`--name: help` and `(default: 'X')` for each of `names`, sorted."""
  lines = []
  for name in sorted(names):
    flag = flag_values[name]
    head = f"--[no]{name}" if flag.boolean else f"--{name}"
    multi = isinstance(flag, flags.MultiFlag)  # Drop absl's own sentence:
    help_text = flag.help.split(";\n")[0] if multi else flag.help
    text = f"{head}: {' '.join(help_text.split())}"
    lines.extend(textwrap.wrap(text, 79, initial_indent="  ",
                               subsequent_indent="      "))
    if flag.default is not None and not (multi and not flag.default):
      lines.append(f"      (default: {flag.default_as_str})")  # absl's quotes
  return "\n".join(lines)


def flags_parser(program, usage=None, help_text=None):
  """An absl `flags_parser` that reports a bad flag with `usage_error`.

  With `help_text` (a function returning the text), `--help` and its
  variants print it to stdout and exit 0 (absl's own help exits 1 and heads
  the flags with the module's source path).
  """

  def parse(argv):
    if help_text is not None and wants_help(list(argv[1:])):
      sys.stdout.write(help_text().rstrip("\n") + "\n")
      sys.stdout.flush()
      sys.exit(0)
    try:
      return flags.FLAGS(argv)
    except flags.Error as e:
      usage_error(program, str(e), usage)

  return parse
