"""The prefix of harness's log lines: compact by default, absl's in debug;
and each warning once per process (every repeat in debug).

absl prefixes every line with ~55 characters (`I1125 10:36:28.852658
140072152267648 train_loop.py:161] `); the binaries print `I 10:36:28 `
instead, and absl's full prefix with `--verbosity=debug`::

    log_format.use(debug=False)
"""

import logging as std_logging
import time

from absl import logging

__all__ = ["CompactFormatter", "WarnOnce", "use"]


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
