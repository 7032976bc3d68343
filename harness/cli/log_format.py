"""The prefix of harness's log lines: compact by default, absl's in debug.

absl prefixes every line with ~55 characters (`I1125 10:36:28.852658
140072152267648 train_loop.py:161] `); the binaries print `I 10:36:28 `
instead, and absl's full prefix with `--verbosity=debug`::

    log_format.use(debug=False)
"""

import logging as std_logging
import time

from absl import logging

__all__ = ["CompactFormatter", "use"]


class CompactFormatter(std_logging.Formatter):
  """`<level letter> HH:MM:SS <message>` (and a traceback, if any)."""

  def format(self, record):
    stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
    text = f"{record.levelname[:1]} {stamp} {record.getMessage()}"
    if record.exc_info:
      text += "\n" + self.formatException(record.exc_info)
    return text


def use(*, debug):
  """Compact prefix on absl's handler; absl's own with `debug`."""
  handler = logging.get_absl_handler()
  handler.setFormatter(logging.PythonFormatter() if debug
                       else CompactFormatter())
