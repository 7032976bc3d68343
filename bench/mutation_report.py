"""Writes docs/MUTATION.md's scores from mutmut 3's own results (no TF import).

After `nice -n 19 mutmut run --max-children 1` (setup.cfg [mutmut]), mutmut
keeps one `mutants/<module>.py.meta` JSON file a mutated module, whose
`exit_code_by_key` maps each mutant's name to the exit status of its test
run. This script reads those files, counts them with mutmut's own meaning of
an exit status, and replaces only the generated section of docs/MUTATION.md
(the hand-written explanations of surviving mutants stay):

  python -m bench.mutation_report                 # writes docs/MUTATION.md
  python -m bench.mutation_report --out /tmp/m.md
"""

import argparse
import configparser
import datetime
import json
import os
import sys

__all__ = ["BEGIN", "END", "status_of", "scores", "render", "write_section"]

BEGIN = "<!-- bench.mutation_report: generated section begins -->"
END = "<!-- bench.mutation_report: generated section ends -->"

# mutmut 3's exit-status meanings (mutmut/stats.py); anything else is
# "suspicious" there too.
_KILLED = {1, 3}
_SURVIVED = {0}
_TIMEOUT = {36, 24, -24, 152, 255}
_NO_TESTS = {5, 33}
_COLUMNS = ("killed", "survived", "timeout", "no tests", "not checked",
            "other")


def status_of(exit_code):
  """mutmut's name for a mutant's test-run exit status (None: not run)."""
  if exit_code is None:
    return "not checked"
  for name, codes in (("killed", _KILLED), ("survived", _SURVIVED),
                      ("timeout", _TIMEOUT), ("no tests", _NO_TESTS)):
    if exit_code in codes:
      return name
  return "other"


def _modules(setup_cfg):
  parser = configparser.ConfigParser()
  parser.read(setup_cfg)
  return [line for line in parser.get("mutmut", "only_mutate").split("\n")
          if line.strip()]


def scores(root):
  """{module path: ({status: count}, [surviving mutant names])}."""
  result = {}
  for module in _modules(os.path.join(root, "setup.cfg")):
    meta_path = os.path.join(root, "mutants", module + ".meta")
    if not os.path.exists(meta_path):
      raise FileNotFoundError(
          f"no mutmut results for {module} ({meta_path} is missing): run "
          "`nice -n 19 mutmut run --max-children 1` first")
    with open(meta_path, encoding="utf-8") as f:
      exit_codes = json.load(f)["exit_code_by_key"]
    counts = dict.fromkeys(_COLUMNS, 0)
    survivors = []
    for name, code in sorted(exit_codes.items()):
      counts[status_of(code)] += 1
      if status_of(code) != "killed":
        survivors.append((name, status_of(code)))
    result[module] = (counts, survivors)
  return result


def render(module_scores, day):
  """The generated section: a table of scores and the mutants not killed."""
  lines = [BEGIN, "", f"Results of {day} (`python -m bench.mutation_report`).",
           "", "| module | " + " | ".join(_COLUMNS) + " | total | score |",
           "|---" * (len(_COLUMNS) + 3) + "|"]
  for module, (counts, _) in module_scores.items():
    total = sum(counts.values())
    score = f"{100 * counts['killed'] / total:.0f} %" if total else "-"
    lines.append(f"| `{module}` | " +
                 " | ".join(str(counts[c]) for c in _COLUMNS) +
                 f" | {total} | {score} |")
  lines += ["", "Mutants not killed (`mutmut show NAME` prints the change):",
            ""]
  for _, survivors in module_scores.values():
    lines += [f"- `{name}` ({status})" for name, status in survivors]
  return "\n".join(lines + ["", END])


def write_section(path, section):
  """Replaces BEGIN..END in `path` with `section` (appends if absent)."""
  text = ""
  if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
      text = f.read()
  if BEGIN in text and END in text:
    head, rest = text.split(BEGIN, 1)
    text = head + section + rest.split(END, 1)[1]
  else:
    text = text + ("\n" if text else "") + section + "\n"
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--root", default=".", help="the repo (has setup.cfg)")
  parser.add_argument("--out", default=None,
                      help="default: <root>/docs/MUTATION.md")
  args = parser.parse_args(argv)
  out = args.out or os.path.join(args.root, "docs", "MUTATION.md")
  try:
    module_scores = scores(args.root)
  except FileNotFoundError as e:
    print(f"mutation_report: {e}", file=sys.stderr)
    return 1
  day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
  write_section(out, render(module_scores, day))
  return 0


if __name__ == "__main__":
  sys.exit(main())
