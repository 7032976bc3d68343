"""Counts and renders bench.tf215.compat215's results (no TF import, no run).

The runner's conftest writes one JSON line per pytest report (a test's
setup / call / teardown, a subtest, a failed collection). This module turns
those lines into per-test outcomes, compares them with the tests tf.estimator
2.15 passes (bench/tf215/compat215_reference.json), and renders docs/COMPAT.md's
generated section: the table, the totals and the failing tests with their
reasons (bench/tf215/compat215_reasons.json).
"""

import json
import re

__all__ = ["BEGIN", "END", "NO_REASON", "outcomes", "rows", "render",
           "reason_problems", "replace_section"]

BEGIN = "<!-- compat215 -->"
END = "<!-- /compat215 -->"
NO_REASON = "no reason recorded yet"


def outcomes(lines):
  """{nodeid: (status, failed subtests)} from the conftest's JSON lines.

  status is "passed" (every phase passed), "failed" (a phase failed; a
  failed collection is recorded under the file's nodeid) or "skipped".
  pytest counts a test whose subtests fail as passed; so does this, and
  the second number says how many of its subtests failed.
  """
  phases, subfailed = {}, {}
  for line in lines:
    if not line.strip():
      continue
    record = json.loads(line)
    nodeid = record["nodeid"]
    if record["subtest"]:
      subfailed[nodeid] = subfailed.get(nodeid, 0) + (
          record["outcome"] == "failed")
      continue
    phases.setdefault(nodeid, []).append(
        (record["when"], record["outcome"]))
  result = {}
  for nodeid, seen in phases.items():
    kinds = {outcome for _, outcome in seen}
    if "failed" in kinds:
      status = "failed"
    elif "skipped" in kinds:
      status = "skipped"
    elif ("call", "passed") in seen:
      status = "passed"
    else:
      status = "failed"  # set up and torn down, never called: it did not run
    result[nodeid] = (status, subfailed.get(nodeid, 0))
  return result


def rows(files, reference, results):
  """Per file: (name, 2.15 passes, now, now with no failing subtest,
  the failing test ids, the ids of those that pass with a failing
  subtest), in the order of `files`.

  reference: {file: [test ids 2.15 passes]}; results: {file: outcomes}.
  A test 2.15 passes that harness did not run (deselected, or a collection
  error) is failing.
  """
  table = []
  for name in files:
    passed_215 = set(reference[name])
    got = results[name]
    now = {t for t in passed_215 if got.get(t, ("",))[0] == "passed"}
    clean = {t for t in now if got[t][1] == 0}
    table.append((name, len(passed_215), len(now), len(clean),
                  sorted(passed_215 - clean), sorted(now - clean)))
  return table


def _share(part, whole):
  return f"{100 * part / whole:.1f}" if whole else "0.0"


def _totals(table, reasons):
  total = sum(row[1] for row in table)
  now = sum(row[2] for row in table)
  clean = sum(row[3] for row in table)
  text = (f"In all: {now} of the {total} tests 2.15 passes pass "
          f"({_share(now, total)} %); {clean} ({_share(clean, total)} %) "
          f"with no failing subtest. Of the {now - clean} that pass with a "
          "failing subtest")
  by_reason = {}
  for row in table:
    for test in row[5]:
      reason = reasons.get(test, NO_REASON)
      by_reason[reason] = by_reason.get(reason, 0) + 1
  if not by_reason:
    return text + ": none."
  ordered = sorted(by_reason.items(), key=lambda item: (-item[1], item[0]))
  return text + ", by reason: " + "; ".join(
      f"{count}: {reason}" for reason, count in ordered) + "."


def render(table, reasons, provenance):
  """The generated section, markers included.

  reasons: {test id: reason}; provenance: one sentence on where the 2.15
  figures come from.
  """
  lines = [BEGIN, "",
           "| 2.15 test file | 2.15 passes | harness now | "
           "now, no failing subtest | failing now |",
           "|---|---|---|---|---|"]
  lines += [f"| {name} | {passed} | {now} | {clean} | {len(failing)} |"
            for name, passed, now, clean, failing, _ in table]
  lines += ["", _totals(table, reasons), "", provenance, ""]
  for row in table:
    lines += [f"- `{test}` — {reasons.get(test, NO_REASON)}"
              for test in row[4]]
  return "\n".join(lines + ["", END])


def reason_problems(table, reasons, files_run):
  """(failing tests with no reason, reasons whose test no longer fails).

  Only reasons of the files in `files_run` can be stale.
  """
  failing = {test for row in table for test in row[4]}
  missing = sorted(failing - set(reasons))
  stale = sorted(t for t in reasons
                 if t not in failing and t.split(".py::")[0] in files_run)
  return missing, stale


def replace_section(text, section):
  """text with its BEGIN ... END section replaced by `section`."""
  pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
  if len(pattern.findall(text)) != 1:
    raise ValueError(f"expected exactly one {BEGIN} ... {END} section; put "
                     "the two markers where the generated text goes")
  return pattern.sub(lambda _: section, text)
