"""Each generated section of bench/RESULTS.md and the data file it is
rendered from (no TF import).

    python -m bench.sections --render   # RESULTS.md's sections from the data
    python -m bench.sections --check    # exit 1 where the two differ

A script that measures writes its section through `report.write_section`;
for the committed bench/RESULTS.md that also writes the section's figures to
a JSON file in its tenant's folder, named by the section's marker:
`<!-- bench.perf.scaling cnn: generated section begins -->` ->
bench/perf/results/scaling_cnn.json. The file holds the section as data:
its prose lines, and each Markdown table as a header and rows of cells (the
figures). `render` turns the data back into the section, character for
character, so tests/test_bench_sections.py finds a hand edit of any figure
in RESULTS.md. The sections measured before these files existed were
parsed into them from RESULTS.md as it stood; their runs' raw per-round
data was not kept, so what is pinned is the published figures.
"""

import argparse
import json
import os
import re
import sys

__all__ = ["RESULTS", "data_path", "to_data", "render", "store",
           "generated_sections", "rendered", "main"]

_BENCH = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(_BENCH, "RESULTS.md")
_BEGIN_RE = re.compile(
    r"^<!-- (bench\.(\w+)\.(\w+)((?: \w+)*)): generated section begins -->$",
    re.M)
_RULE_RE = re.compile(r"^\|(?: ?:?-+:? ?\|)+$")


def data_path(begin):
  """The data file of the section whose begin marker is `begin`."""
  m = _BEGIN_RE.match(begin)
  if not m:
    raise ValueError(f"{begin!r} is not a bench section's begin marker "
                     "(`<!-- bench.TENANT.SCRIPT[ WORD...]: generated "
                     "section begins -->`)")
  tenant, script, words = m[2], m[3], m[4].split()
  return os.path.join(_BENCH, tenant, "results",
                      "_".join([script] + words) + ".json")


def _cells(line):
  """A table row's cells, or None where re-joining them would not give the
  line back (then the row is kept as written)."""
  cells = [c.removeprefix(" ").removesuffix(" ")
           for c in line[1:-1].split("|")]
  return cells if _row(cells) == line else None


def _row(cells):
  return "| " + " | ".join(cells) + " |" if cells else "||"


def to_data(section):
  """The section (markers included) as data: {"begin", "end", "blocks"},
  each block {"lines": [prose]} or {"table": {"header", "rule", "rows"}}."""
  lines = section.split("\n")
  blocks, i = [], 1
  while i < len(lines) - 1:
    if (lines[i].startswith("|") and i + 1 < len(lines) - 1
        and _RULE_RE.match(lines[i + 1]) and _cells(lines[i]) is not None):
      table = {"header": _cells(lines[i]), "rule": lines[i + 1], "rows": []}
      i += 2
      while i < len(lines) - 1 and lines[i].startswith("|"):
        table["rows"].append(_cells(lines[i]) or lines[i])
        i += 1
      blocks.append({"table": table})
      continue
    if not blocks or "lines" not in blocks[-1]:
      blocks.append({"lines": []})
    blocks[-1]["lines"].append(lines[i])
    i += 1
  return {"begin": lines[0], "end": lines[-1], "blocks": blocks}


def render(data):
  """The section's text, markers included, from `to_data`'s data."""
  lines = [data["begin"]]
  for block in data["blocks"]:
    if "lines" in block:
      lines += block["lines"]
      continue
    table = block["table"]
    lines += [_row(table["header"]), table["rule"]]
    lines += [r if isinstance(r, str) else _row(r) for r in table["rows"]]
  return "\n".join(lines + [data["end"]])


def store(section):
  """Writes the data file of `section` (as `report.write_section` wrote it
  into bench/RESULTS.md); returns its path."""
  path = data_path(section.split("\n", 1)[0])
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    json.dump(to_data(section), f, indent=1, ensure_ascii=False)
    f.write("\n")
  return path


def generated_sections(text):
  """{begin marker: the section's text, markers included} of `text`."""
  found = {}
  for m in _BEGIN_RE.finditer(text):
    end = m[0].replace("generated section begins", "generated section ends")
    stop = text.index(end, m.start()) + len(end)
    found[m[0]] = text[m.start():stop]
  return found


def rendered(text):
  """`text` with each generated section rendered from its data file."""
  for begin, section in generated_sections(text).items():
    with open(data_path(begin), encoding="utf-8") as f:
      text = text.replace(section, render(json.load(f)), 1)
  return text


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.sections")
  mode = parser.add_mutually_exclusive_group(required=True)
  mode.add_argument("--render", action="store_true",
                    help="rewrite bench/RESULTS.md's generated sections from "
                    "their data files (nothing is measured)")
  mode.add_argument("--check", action="store_true",
                    help="exit 1 where RESULTS.md differs from its data files")
  args = parser.parse_args(argv)
  with open(RESULTS, encoding="utf-8") as f:
    text = f.read()
  new = rendered(text)
  if args.check:
    differ = [b for b, s in generated_sections(text).items()
              if s not in new]
    for begin in differ:
      print(f"differs from {data_path(begin)}: {begin}")
    return 1 if differ else 0
  with open(RESULTS, "w", encoding="utf-8") as f:
    f.write(new)
  return 0


if __name__ == "__main__":
  sys.exit(main())
