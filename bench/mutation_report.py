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
import ast
import configparser
import datetime
import difflib
import json
import os
import sys

from bench import mutation_triage

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


def _functions(mutated_path):
  """{function name: source} of mutmut's copy of a module (its mutants)."""
  if not os.path.exists(mutated_path):
    return {}
  with open(mutated_path, encoding="utf-8") as f:
    text = f.read()
  lines = text.splitlines()
  # By line numbers: ast.get_source_segment re-splits the text each call.
  return {node.name: "\n".join(lines[node.lineno - 1:node.end_lineno])
          for node in ast.walk(ast.parse(text))
          if isinstance(node, ast.FunctionDef) and "__mutmut_" in node.name}


def _sources(functions, mutant):
  """(original, mutant) source of a mutant's function, or (None, None)."""
  name = mutant.rsplit(".", 1)[-1]
  original = functions.get(name.rsplit("__mutmut_", 1)[0] + "__mutmut_orig")
  if original is None or name not in functions:
    return None, None
  return original, functions[name]


def change_of(functions, mutant):
  """The mutant's change as "old -> new" (one line each, stripped)."""
  original, mutated = _sources(functions, mutant)
  if original is None:
    return "(source not found)"
  diff = list(difflib.ndiff(original.splitlines()[1:],
                            mutated.splitlines()[1:]))
  old = " / ".join(d[2:].strip() for d in diff if d.startswith("- "))
  new = " / ".join(d[2:].strip() for d in diff if d.startswith("+ "))
  return f"{old} -> {new}"


def category_of(functions, mutant, status, change):
  """mutation_triage's category of a mutant run and not killed.

  Only a mutant whose tests ran and passed ("survived") can be explained;
  one no test ran, or that timed out, is "unexplained".
  """
  original, mutated = _sources(functions, mutant)
  if status != "survived" or original is None:
    return "unexplained"
  return mutation_triage.classify(mutant.rsplit("__mutmut_", 1)[0],
                                  original, mutated, change)


def scores(root):
  """{module path: ({status: count}, [(mutant, status, change, category)])}.

  The mutants listed are those run and not killed.
  """
  result = {}
  for module in _modules(os.path.join(root, "setup.cfg")):
    meta_path = os.path.join(root, "mutants", module + ".meta")
    if not os.path.exists(meta_path):
      raise FileNotFoundError(
          f"no mutmut results for {module} ({meta_path} is missing): run "
          "`nice -n 19 mutmut run --max-children 1` first")
    with open(meta_path, encoding="utf-8") as f:
      exit_codes = json.load(f)["exit_code_by_key"]
    functions = _functions(os.path.join(root, "mutants", module))
    counts = dict.fromkeys(_COLUMNS, 0)
    survivors = []
    for name, code in sorted(exit_codes.items()):
      counts[status_of(code)] += 1
      status = status_of(code)
      if status not in ("killed", "not checked"):
        change = change_of(functions, name)
        survivors.append((name, status, change,
                          category_of(functions, name, status, change)))
    result[module] = (counts, survivors)
  return result


def render(module_scores, day):
  """The generated section: a table of scores and the mutants not killed."""
  lines = [BEGIN, "", f"Results of {day} (`python -m bench.mutation_report`).",
           "", "| module | " + " | ".join(_COLUMNS) + " | total | killed of run |",
           "|---" * (len(_COLUMNS) + 3) + "|"]
  for module, (counts, _) in module_scores.items():
    total = sum(counts.values())
    run = total - counts["not checked"]
    score = f"{100 * counts['killed'] / run:.0f} %" if run else "-"
    lines.append(f"| `{module}` | " +
                 " | ".join(str(counts[c]) for c in _COLUMNS) +
                 f" | {total} | {score} |")
  lines += ["", "Mutants run and not killed, by category "
            "(`bench/mutation_triage.py` states each rule):", "",
            "| module | " + " | ".join(mutation_triage.CATEGORIES) + " |",
            "|---" * (len(mutation_triage.CATEGORIES) + 1) + "|"]
  for module, (_, survivors) in module_scores.items():
    found = [s[3] for s in survivors]
    lines.append(f"| `{module}` | " + " | ".join(
        str(found.count(c)) for c in mutation_triage.CATEGORIES) + " |")
  lines += ["", "The unexplained ones, with their change (`mutmut show NAME` "
            "prints it as a diff):", ""]
  for _, survivors in module_scores.values():
    lines += [f"- `{name}` ({status}): `{_cut(change)}`"
              for name, status, change, category in survivors
              if category == "unexplained"]
  return "\n".join(lines + ["", END])


def _cut(text, limit=150):
  text = text.replace("`", "'")
  return text if len(text) <= limit else text[:limit - 3] + "..."


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
