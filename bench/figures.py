"""What makes a benchmark figure fit for the docs (no TF import).

    watch = figures.CpuWatch()
    ...                                  # the measurement
    other = watch.other_cores()          # e.g. 0.07
    label = "quiet" if figures.is_quiet(other) else "loaded"

A figure the README states comes from a quiet run: one during which the
rest of the machine kept at most `QUIET_OTHER_CORES` cores busy on average
(/proc/stat's busy time less the measurement's own CPU time). A script
that writes such a figure records the run's raw data in the section it
writes (`data_line`, read back by `section_data`), so a test can render
the section and the README sentence from that data and find a hand edit.
"""

import json
import os
import resource
import time

from bench import report

__all__ = ["QUIET_OTHER_CORES", "LOADED", "CpuWatch", "is_quiet", "label_of",
           "store_row", "data_line", "section_data"]
# A run is "quiet" when the rest of the machine (every process but the
# measurement's own) kept at most this many cores busy on average while it
# ran; the figures a README states come from quiet runs only.
QUIET_OTHER_CORES = 0.25


def _busy_cpu_secs():
  """CPU-seconds every core spent busy since boot (/proc/stat), or None."""
  try:
    with open("/proc/stat", encoding="utf-8") as f:
      fields = [int(x) for x in f.readline().split()[1:]]
  except (OSError, ValueError):
    return None
  # user nice system idle iowait irq softirq steal: all but idle and iowait.
  busy = sum(fields[:3]) + sum(fields[5:8])
  return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_secs():
  own = (resource.getrusage(resource.RUSAGE_SELF),
         resource.getrusage(resource.RUSAGE_CHILDREN))
  return sum(r.ru_utime + r.ru_stime for r in own)


class CpuWatch:
  """What the rest of the machine used while a measurement ran.

  Started before the measurement; `other_cores()` after it: the cores other
  processes kept busy on average (the machine's busy CPU-seconds less this
  process's and its waited-for children's, over the wall time), or None
  where /proc/stat is not readable.
  """

  def __init__(self, clock=time.monotonic):
    self._clock = clock
    self._start = (clock(), _busy_cpu_secs(), _own_cpu_secs())

  def other_cores(self):
    wall0, busy0, own0 = self._start
    busy = _busy_cpu_secs()
    if busy is None or busy0 is None or self._clock() <= wall0:
      return None
    other = (busy - busy0) - (_own_cpu_secs() - own0)
    return round(max(0.0, other) / (self._clock() - wall0), 2)


def is_quiet(other_cores):
  """Whether a run whose rest of the machine used `other_cores` is quiet
  (unmeasured: not quiet)."""
  return other_cores is not None and other_cores <= QUIET_OTHER_CORES


LOADED = "loaded"  # The label of a run asked for as "quiet" that was not.


def label_of(requested, other_cores):
  """The row's label: "quiet" only for a quiet run."""
  if requested == "quiet" and not is_quiet(other_cores):
    return LOADED
  return requested


def store_row(record, label, *, command, results_path, begin, end, render):
  """Puts `record` under `label` in the section of `results_path` between
  `begin` and `end` (rendered by `render` from the section's data, which
  names `command`); returns that data."""
  with open(results_path, encoding="utf-8") as f:
    data = section_data(f.read(), begin, end) or {"rows": {}}
  data["command"] = command
  data["rows"][label] = record
  report.write_section(results_path, render(data), begin=begin, end=end)
  return data


_DATA_PREFIX = "<!-- data: "


def data_line(data):
  """The line a generated section carries its figures' raw data in (JSON in
  an HTML comment: invisible on the page, read back by `section_data`)."""
  return _DATA_PREFIX + json.dumps(data, sort_keys=True,
                                   ensure_ascii=False) + " -->"


def section_data(text, begin, end):
  """The raw data of `text`'s section between `begin` and `end`: the JSON
  of its `data_line`; None without one."""
  if begin not in text:
    return None
  for line in text.split(begin, 1)[1].split(end, 1)[0].splitlines():
    if line.startswith(_DATA_PREFIX) and line.endswith(" -->"):
      return json.loads(line[len(_DATA_PREFIX):-len(" -->")])
  return None


_VS215_BEGIN = "<!-- bench.tf215.vs215: generated section begins -->"
_VS215_END = "<!-- bench.tf215.vs215: generated section ends -->"
_XLA_COLUMN = "K=auto xla / K=auto"


def xla_sentence(results_text, case="cnn b256", missing_ok=False):
  """The README's XLA figure, from bench.tf215.vs215's section of RESULTS.md:
  `case`'s K=auto xla / K=auto cell (median of the per-round ratios).
  Without that cell: None if `missing_ok`, else ValueError."""
  section = results_text.split(_VS215_BEGIN, 1)[1].split(_VS215_END, 1)[0]
  header = None
  for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if _XLA_COLUMN in cells:
      header = cells
    elif header and cells[0] == case:
      cell = cells[header.index(_XLA_COLUMN)]
      if cell == "n/a" and missing_ok:
        return None
      ratio = float(cell.split("x", 1)[0])
      rounds = len(cell.split("; ", 1)[1].rstrip(")").split(", "))
      return (f"{1 / ratio:.1f}x slower (its examples/s {ratio:.2f}x "
              f"K=auto's, the median of {rounds} rounds' ratios: "
              "`bench/RESULTS.md`, `bench.tf215.vs215`)")
  if missing_ok:
    return None
  raise ValueError(f"bench.tf215.vs215's section has no {case!r} row in a "
                   "table "
                   f"with a {_XLA_COLUMN!r} column")
