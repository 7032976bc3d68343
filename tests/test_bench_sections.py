"""bench/RESULTS.md is what its data files render (bench/sections.py): a
hand edit of any figure in a generated section fails here; every other
part of the page is a hand-written analysis named below; the medians the
tables state are the medians of the rounds they list; bench/README.md
names every script, tenant by tenant, and no machine's paths."""

import glob
import json
import os
import re
import statistics

from absl.testing import absltest

from bench import report
from bench import sections
from tests import conftest

_BENCH = conftest.REPO_ROOT / "bench"

# Parts of RESULTS.md no script writes: analyses written by hand from the
# runs their headings name (their figures are not pinned; each heading says
# "hand-written" or "written by hand").
_HAND_WRITTEN = (
    "### What these figures support",
    "## MNIST acceptance run",
    "## Harness overhead hotspots",
    "### What the figures show",
    "## Where the time goes in a collective step",
    "### Counted: what harness runs per 100 steps beyond the bare loop",
    "### A/B checks after issue 49's refactor",
    "### The input iterator: harness's gap to the bare loop, placed",
    "### Reading the ceiling",
    "### harness against tf.estimator 2.15 on one and two workers",
    "### What the per-step breakdown shows",
    "### What the canned figures show",
    "### Check after the TaskPlan",
    "### Check after the 2.15 executor",
    "### Reading the quiet run of 2026-11-26 05:23 UTC",
    "### Reading the quiet run of 2026-11-26 (issue 26)",
    "### Reading bench.tf215.vs215 (issue 18)",
    "### Before the peer watch",
)


def _results():
  return (_BENCH / "RESULTS.md").read_text(encoding="utf-8")


def _data(begin):
  with open(sections.data_path(begin), encoding="utf-8") as f:
    return json.load(f)


def _edited(section):
  """`section` with one figure changed by one character: the first digit
  past the first cell of its first table row, one up."""
  lines = section.split("\n")
  for i, line in enumerate(lines):
    if i and lines[i - 1].startswith("|") and line.startswith("| "):
      m = re.compile(r"\d").search(line, line.index("|", 1))
      if m:
        lines[i] = (line[:m.start()] + str((int(m[0]) + 1) % 10)
                    + line[m.end():])
        return "\n".join(lines), line, lines[i]
  raise AssertionError(f"no figure in a table row: {lines[0]}")


class RenderedTest(absltest.TestCase):

  def test_each_section_is_its_data_rendered(self):
    found = sections.generated_sections(_results())
    self.assertLen(found, 15)
    for begin, section in found.items():
      with self.subTest(section=begin):
        self.assertTrue(os.path.exists(sections.data_path(begin)),
                        sections.data_path(begin))
        self.assertEqual(sections.render(_data(begin)), section)

  def test_every_data_file_has_its_section(self):
    paths = {sections.data_path(b)
             for b in sections.generated_sections(_results())}
    self.assertEqual(set(glob.glob(str(_BENCH / "*" / "results" / "*.json"))),
                     paths)

  def test_check_passes_on_the_committed_page(self):
    self.assertEqual(sections.main(["--check"]), 0)

  def test_a_one_character_hand_edit_of_any_figure_fails(self):
    text = _results()
    for begin, section in sections.generated_sections(text).items():
      with self.subTest(section=begin):
        edited, row, its_edit = _edited(section)
        self.assertNotEqual(edited, section)
        print(f"{row[:50]} -> {its_edit[:50]}")
        hand_edited = text.replace(section, edited)
        self.assertNotEqual(sections.rendered(hand_edited), hand_edited)

  def test_data_round_trips(self):
    for begin in sections.generated_sections(_results()):
      with self.subTest(section=begin):
        data = _data(begin)
        self.assertEqual(sections.to_data(sections.render(data)), data)

  def test_a_table_is_data_cells(self):
    section = ("<!-- bench.perf.x: generated section begins -->\n## X\n\n"
               "| a | b |\n|---|---|\n| 1.5 | 2 |\n|   sub | |\n\ntail\n"
               "<!-- bench.perf.x: generated section ends -->")
    data = sections.to_data(section)
    self.assertEqual(data["blocks"][1]["table"], {
        "header": ["a", "b"], "rule": "|---|---|",
        "rows": [["1.5", "2"], "|   sub | |"]})
    self.assertEqual(sections.render(data), section)

  def test_the_data_file_is_named_by_the_marker(self):
    self.assertEqual(
        sections.data_path("<!-- bench.perf.scaling wide ps: generated "
                           "section begins -->"),
        str(_BENCH / "perf" / "results" / "scaling_wide_ps.json"))
    with self.assertRaisesRegex(ValueError, "bench.TENANT.SCRIPT"):
      sections.data_path("<!-- bench.run: generated section begins -->")


class WriteSectionTest(absltest.TestCase):

  def test_the_committed_page_gets_its_data_file_another_does_not(self):
    root = self.create_tempdir().full_path
    results = os.path.join(root, "RESULTS.md")
    other = os.path.join(root, "other.md")
    section = ("<!-- bench.perf.x: generated section begins -->\n| a |\n"
               "|---|\n| 7 |\n<!-- bench.perf.x: generated section ends -->")
    marker = section.split("\n", 1)[0]
    # pylint: disable=protected-access
    saved = sections.RESULTS, sections._BENCH
    sections.RESULTS, sections._BENCH = results, root
    try:
      report.write_section(other, section, begin=marker,
                           end=section.rsplit("\n", 1)[1])
      self.assertFalse(os.path.exists(sections.data_path(marker)))
      report.write_section(results, section, begin=marker,
                           end=section.rsplit("\n", 1)[1])
      self.assertEqual(sections.render(_data(marker)), section)
    finally:
      sections.RESULTS, sections._BENCH = saved


class HandWrittenTest(absltest.TestCase):

  def test_every_other_part_is_a_named_hand_written_analysis(self):
    text = _results()
    for section in sections.generated_sections(text).values():
      text = text.replace(section, "")
    headings = [l for l in text.splitlines() if l.startswith("#")]
    self.assertEqual(headings[0], "# Benchmark results")
    for heading in headings[1:]:
      with self.subTest(heading=heading):
        self.assertTrue(heading.startswith(_HAND_WRITTEN), heading)
        self.assertRegex(heading, "hand-written|written by hand")
    self.assertLen(headings[1:], len(_HAND_WRITTEN))
    head = text.split(headings[1], 1)[0]
    self.assertNotRegex(head.split("\n", 1)[1], r"\d")  # No figure untitled.


class MediansTest(absltest.TestCase):
  """A median a table states is the median of the rounds it lists."""

  _COLUMNS = (  # (section, median column, its rounds' columns)
      ("bench.perf.hook_cost", "ms/step (median)", ("each round",)),
      ("bench.perf.canned", "examples/s (median)", ("each round",)),
      ("bench.perf.first_step", "median (s)", ("run 1", "run 2", "run 3")),
  )

  def test_medians_of_the_rounds(self):
    for name, median_col, round_cols in self._COLUMNS:
      data = _data(f"<!-- {name}: generated section begins -->")
      table = [b["table"] for b in data["blocks"] if "table" in b][0]
      at = table["header"].index(median_col)
      rounds_at = ([at + 1] if round_cols == ("each round",)
                   else [table["header"].index(c) for c in round_cols])
      checked = 0
      for row in table["rows"]:
        if isinstance(row, str) or not row[at]:
          continue
        cells = ", ".join(row[i] for i in rounds_at).split(", ")
        decimals = len(row[at].partition(".")[2])
        with self.subTest(section=name, row=row[0]):
          median = statistics.median(float(c) for c in cells)
          self.assertEqual(row[at], f"{median:.{decimals}f}")
          checked += 1
      self.assertGreater(checked, 1, name)

  def test_each_median_lies_in_its_range(self):
    # "27608 (26479-30502)": a median and the min-max of its rounds.
    cell = re.compile(r"^([\d,.]+)\s*\(([\d,.]+)[-–]([\d,.]+)\)")
    checked = 0
    for path in glob.glob(str(_BENCH / "*" / "results" / "*.json")):
      with open(path, encoding="utf-8") as f:
        tables = [b["table"] for b in json.load(f)["blocks"] if "table" in b]
      for row in (r for t in tables for r in t["rows"] if isinstance(r, list)):
        for m in filter(None, map(cell.match, row)):
          low, median, high = (float(m[i].replace(",", "")) for i in (2, 1, 3))
          with self.subTest(path=os.path.basename(path), cell=m[0]):
            self.assertBetween(median, low, high)
          checked += 1
    self.assertGreater(checked, 20)

  def test_per_round_ratios_and_their_median(self):
    # "per round: 0.701, 1.144, ...; median **1.065**" (bench.perf.canned).
    data = _data("<!-- bench.perf.canned: generated section begins -->")
    lines = [l for b in data["blocks"] if "lines" in b for l in b["lines"]]
    found = [m for l in lines for m in re.finditer(
        r"per round: ([\d., ]+); median \*\*([\d.]+)\*\*", l)]
    self.assertLen(found, 2)
    for m in found:
      rounds = [float(v) for v in m[1].split(", ")]
      self.assertEqual(m[2], f"{statistics.median(rounds):.3f}")


class ReadmeTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.readme = (_BENCH / "README.md").read_text(encoding="utf-8")

  def test_every_script_is_listed_in_its_tenants_section(self):
    parts = re.split(r"^## ", self.readme, flags=re.M)
    by_title = {p.split("\n", 1)[0]: p for p in parts[1:]}
    for path in sorted(glob.glob(str(_BENCH / "*.py")) +
                       glob.glob(str(_BENCH / "*" / "*.py"))):
      rel = os.path.relpath(path, _BENCH)
      if os.path.basename(rel) == "__init__.py":
        continue
      tenant = os.path.dirname(rel) or "The shared base"
      with self.subTest(script=rel):
        titles = [t for t in by_title if t.startswith(f"`{tenant}/`")
                  or (not os.path.dirname(rel) and t.startswith(tenant))]
        self.assertLen(titles, 1, f"no section titled for {tenant}")
        self.assertIn(f"`{rel}`", by_title[titles[0]])

  def test_no_machine_paths(self):
    self.assertNotRegex(self.readme, r"/work/|/home/|/Users/|\bcd /")


if __name__ == "__main__":
  absltest.main()
