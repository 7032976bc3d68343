"""Writes docs/MUTATION.md's scores from mutmut 3's own results (no TF import).

After `nice -n 19 mutmut run --max-children 1` (setup.cfg [mutmut]), mutmut
keeps one `mutants/<module>.py.meta` JSON file a mutated module, whose
`exit_code_by_key` maps each mutant's name to the exit status of its test
run. This script reads those files, counts them with mutmut's own meaning of an
exit status, and replaces only the generated section of docs/MUTATION.md (the
hand-written explanations of surviving mutants stay). What the section is
computed from goes to bench/docfigs/mutation_results.json (each mutant's exit
status, the counts, the changes of those not killed), committed, so
`--render_only` re-derives the section and tests/test_mutation_report.py checks
docs/MUTATION.md against it:

  python -m bench.docfigs.mutation_report                 # writes both
  python -m bench.docfigs.mutation_report --out /tmp/m.md --results /tmp/m.json
  python -m bench.docfigs.mutation_report --render_only  # from the JSON
"""

import argparse
import ast
import configparser
import datetime
import difflib
import json
import os
import sys

from bench.docfigs import mutation_triage

__all__ = ["BEGIN", "END", "RESULTS", "status_of", "scores", "results_of",
           "check_results", "render", "write_section"]

BEGIN = "<!-- bench.docfigs.mutation_report: generated section begins -->"
END = "<!-- bench.docfigs.mutation_report: generated section ends -->"

# mutmut 3's exit-status meanings (mutmut/stats.py); anything else is
# "suspicious" there too.
_KILLED = {1, 3}
_SURVIVED = {0}
_TIMEOUT = {36, 24, -24, 152, 255}
_NO_TESTS = {5, 33}
_COLUMNS = ("killed", "survived", "timeout", "no tests", "not checked",
            "other")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "mutation_results.json")


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
    result[module] = (counts, survivors, exit_codes)
  return result


def results_of(module_scores, day):
  """What the section is computed from, as JSON data: per module each
  mutant's exit status (its name less the module's prefix), the counts by
  status and by category, and the unexplained mutants with their change."""
  modules = {}
  for module, (counts, survivors, exit_codes) in module_scores.items():
    modules[module] = {
        "exit_codes": {name.rsplit(".", 1)[-1]: code
                       for name, code in sorted(exit_codes.items())},
        "counts": counts,
        "categories": {c: sum(s[3] == c for s in survivors)
                       for c in mutation_triage.CATEGORIES},
        "unexplained": [[name, status, change] for name, status, change,
                        category in survivors if category == "unexplained"]}
  return {"day": day, "modules": modules}


def check_results(results):
  """The ways `results` (results_of's data) disagrees with itself: counts
  that are not its exit statuses' tally, categories that do not add up to
  the mutants run and not killed, a list not as long as its count."""
  problems = []
  for module, data in results["modules"].items():
    counts = data["counts"]
    if "exit_codes" in data:
      tally = dict.fromkeys(_COLUMNS, 0)
      for code in data["exit_codes"].values():
        tally[status_of(code)] += 1
      if tally != counts:
        problems.append(f"{module}: counts {counts} != its exit statuses' "
                        f"{tally}")
    not_killed = sum(counts.values()) - counts["killed"] - counts[
        "not checked"]
    if sum(data["categories"].values()) != not_killed:
      problems.append(f"{module}: categories {data['categories']} do not "
                      f"add up to the {not_killed} run and not killed")
    if len(data["unexplained"]) != data["categories"]["unexplained"]:
      problems.append(f"{module}: {len(data['unexplained'])} unexplained "
                      f"listed, {data['categories']['unexplained']} counted")
  return problems


def _score(counts):
  """What the killed share was measured on: the mutants run, and how many
  of all were not."""
  total = sum(counts.values())
  run = total - counts["not checked"]
  if not run:
    return f"- (none of {total} run)"
  score = f"{100 * counts['killed'] / run:.0f} % of {run} run"
  if counts["not checked"]:
    score += f" ({counts['not checked']} of {total} not run)"
  return score


def render(results):
  """The generated section, from `results_of`'s data: a table of scores
  and the mutants not killed."""
  modules = results["modules"]
  lines = [BEGIN, "", f"Results of {results['day']} (`python -m "
           "bench.docfigs.mutation_report`; its data: "
           "bench/docfigs/mutation_results.json)."
           + (f" {results['note']}" if results.get("note") else ""),
           "", "| module | " + " | ".join(_COLUMNS) +
           " | total | killed, of the mutants run |",
           "|---" * (len(_COLUMNS) + 3) + "|"]
  for module, data in modules.items():
    counts = data["counts"]
    lines.append(f"| `{module}` | " +
                 " | ".join(str(counts[c]) for c in _COLUMNS) +
                 f" | {sum(counts.values())} | {_score(counts)} |")
  lines += ["", "Mutants run and not killed, by category "
            "(`bench/docfigs/mutation_triage.py` states each rule):", "",
            "| module | " + " | ".join(mutation_triage.CATEGORIES) + " |",
            "|---" * (len(mutation_triage.CATEGORIES) + 1) + "|"]
  for module, data in modules.items():
    lines.append(f"| `{module}` | " + " | ".join(
        str(data["categories"][c]) for c in mutation_triage.CATEGORIES)
                 + " |")
  lines += ["", "The unexplained ones, with their change (`mutmut show NAME` "
            "prints it as a diff):", ""]
  for data in modules.values():
    lines += [f"- `{name}` ({status}): `{_cut(change)}`"
              for name, status, change in data["unexplained"]]
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
  parser.add_argument("--results", default=None,
                      help="the data's JSON; default: "
                      "<root>/bench/docfigs/mutation_results.json")
  parser.add_argument("--render_only", action="store_true",
                      help="render the section from --results, not from "
                      "mutants/")
  args = parser.parse_args(argv)
  out = args.out or os.path.join(args.root, "docs", "MUTATION.md")
  results_path = args.results or os.path.join(args.root, "bench",
                                               "docfigs",
                                               "mutation_results.json")
  if args.render_only:
    with open(results_path, encoding="utf-8") as f:
      results = json.load(f)
  else:
    try:
      module_scores = scores(args.root)
    except FileNotFoundError as e:
      print(f"mutation_report: {e}", file=sys.stderr)
      return 1
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    results = results_of(module_scores, day)
    with open(results_path, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=1)  # The modules in setup.cfg order.
      f.write("\n")
  problems = check_results(results)
  if problems:
    print("mutation_report: " + "; ".join(problems), file=sys.stderr)
    return 1
  write_section(out, render(results))
  return 0


if __name__ == "__main__":
  sys.exit(main())
