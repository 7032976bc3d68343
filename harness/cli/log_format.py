"""The prefix of harness's log lines: compact by default, absl's in debug;
and each warning once per process (every repeat in debug).

absl prefixes every line with ~55 characters (`I1125 10:36:28.852658
140072152267648 train_loop.py:161] `); the binaries print `I 10:36:28 `
instead, and absl's full prefix with `--verbosity=debug`::

    log_format.use(debug=False)

A binary's final error may run longer than a person reads in one line:
`fold` breaks it at spaces into lines of at most 160 characters, each
continuation indented under the line it continues.
"""

import logging as std_logging
import textwrap
import time

from absl import logging

__all__ = ["CompactFormatter", "LINE_WIDTH", "WarnOnce", "fold", "use"]

LINE_WIDTH = 160  # The most characters of a line a person reads.


def fold(text, width=LINE_WIDTH):
  """`text` with each line over `width` broken at spaces (words kept whole,
  a longer one alone), continuations indented 4 more than their line."""
  out = []
  for line in text.splitlines() or [""]:
    if len(line) <= width:
      out.append(line)
      continue
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    out += textwrap.wrap(line, width=width, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False)
  return "\n".join(out)


class CompactFormatter(std_logging.Formatter):
  """`<level letter> HH:MM:SS <message>` (and a traceback, if any)."""

  def format(self, record):
    stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
    text = f"{record.levelname[:1]} {stamp} {record.getMessage()}"
    if record.exc_info:
      text += "\n" + self.formatException(record.exc_info)
    return text


class WarnOnce(std_logging.Filter):
  """Drops a WARNING identical (text and values) to one already shown."""

  def __init__(self):
    super().__init__()
    self._seen = set()

  def filter(self, record):
    if record.levelno != std_logging.WARNING:
      return True
    key = record.getMessage()
    if key in self._seen:
      return False
    self._seen.add(key)
    return True


_WARN_ONCE = WarnOnce()


def use(*, debug):
  """Compact prefix and each warning once on absl's handler; absl's own
  prefix and every repeat with `debug`."""
  handler = logging.get_absl_handler()
  handler.setFormatter(logging.PythonFormatter() if debug
                       else CompactFormatter())
  if debug:
    handler.removeFilter(_WARN_ONCE)
  else:
    handler.addFilter(_WARN_ONCE)
