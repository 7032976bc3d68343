"""The prefix of harness's log lines: compact by default, absl's in debug;
and each warning once per process (every repeat in debug).

absl prefixes every line with ~55 characters (`I1125 10:36:28.852658
140072152267648 train_loop.py:161] `); the binaries print `I 10:36:28 `
instead, and absl's full prefix with `--verbosity=debug`::

    log_format.use(debug=False)

In a pod of a JobSet restart (`$JOBSET_RESTART_ATTEMPT`, in the job's
plan), each line that names this process's task shows the attempt after
it, so the lines of two attempts can be told apart; other lines, and every
line outside a JobSet, are unchanged::

    log_format.show_attempt("chief/0", 2)
    # I 10:36:28 train | chief/0 attempt 2 | step 1200/10000 | ...

A binary's final error may run longer than a person reads in one line:
`fold` breaks it at spaces into lines of at most 160 characters, each
continuation indented under the line it continues; under `harness.launch`
(`$HARNESS_TASK` set), which puts `[<task>] ` before each line, 160 with
that prefix.
"""

import logging as std_logging
import os
import re
import textwrap
import time

from absl import logging

from harness.cluster import restart_attempt

__all__ = ["AttemptLabel", "CompactFormatter", "LINE_WIDTH", "WarnOnce",
           "fold", "show_attempt", "use"]

LINE_WIDTH = 160  # The most characters of a line a person reads.


def fold(text, width=None):
  """`text` with each line over `width` broken at spaces (words kept whole,
  a longer one alone), continuations indented 4 more than their line.

  `width` defaults to LINE_WIDTH less the `[<task>] ` harness.launch puts
  before each line of its task (`$HARNESS_TASK`).
  """
  if width is None:
    task = os.environ.get("HARNESS_TASK")
    width = LINE_WIDTH - (len(task) + 3 if task else 0)
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


class AttemptLabel(std_logging.Filter):
  """Writes the restart attempt after the task label of a line:
  `train | chief/0 | step 5` -> `train | chief/0 attempt 2 | step 5`.

  The label is matched as a field of harness's `a | b | c` lines (after
  `| `, before ` |` or the end), once a line.
  """

  def __init__(self, task_label, attempt):
    super().__init__()
    self._field = re.compile(r"(?<=\| )" + re.escape(task_label) +
                             r"(?= \||$)")
    self._shown = restart_attempt.label(task_label, attempt)

  def filter(self, record):
    try:
      message = record.getMessage()
    except (TypeError, ValueError):  # Bad %-arguments: the handler says so.
      return True
    shown = self._field.sub(self._shown, message, count=1)
    if shown != message:
      record.msg, record.args = shown, None
    return True


_ATTEMPT = {"filter": None}


def show_attempt(task_label, attempt):
  """Shows `attempt` after `task_label` in the lines of absl's handler
  from now on; None: lines as they are (the filter, if any, removed)."""
  handler = logging.get_absl_handler()
  if _ATTEMPT["filter"] is not None:
    handler.removeFilter(_ATTEMPT["filter"])
    _ATTEMPT["filter"] = None
  if attempt is not None:
    _ATTEMPT["filter"] = AttemptLabel(task_label, attempt)
    handler.addFilter(_ATTEMPT["filter"])
