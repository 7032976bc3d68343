"""bench.docfigs.mutation_report: docs/MUTATION.md's scores come from
mutmut's files, through the committed bench/docfigs/mutation_results.json,
which re-derives them."""

import copy
import json
import os
import pathlib

from absl.testing import absltest
from absl.testing import parameterized

from bench.docfigs import mutation_report
from bench.docfigs import mutation_triage

_SETUP_CFG = """[mutmut]
only_mutate =
    pkg/a.py
    pkg/b.py
"""

# mutmut's copy of a module holds the original and each mutant as functions.
_MUTATED_A = """
def x__mutmut_orig(n):
  if n > 1:
    return n


def x__mutmut_2(n):
  if n >= 1:
    return n
"""


class MutationReportTest(absltest.TestCase):

  def _repo(self, exit_codes_by_module):
    root = self.create_tempdir().full_path
    with open(os.path.join(root, "setup.cfg"), "w", encoding="utf-8") as f:
      f.write(_SETUP_CFG)
    for module, exit_codes in exit_codes_by_module.items():
      path = os.path.join(root, "mutants", module + ".meta")
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with open(path, "w", encoding="utf-8") as f:
        json.dump({"exit_code_by_key": exit_codes}, f)
    return root

  def test_counts_each_status_and_names_the_mutants_not_killed(self):
    root = self._repo({
        "pkg/a.py": {"a.x__mutmut_1": 1, "a.x__mutmut_2": 0,
                     "a.x__mutmut_3": 36, "a.x__mutmut_4": 3},
        "pkg/b.py": {"b.y__mutmut_1": None, "b.y__mutmut_2": 1}})
    with open(os.path.join(root, "mutants", "pkg", "a.py"), "w",
              encoding="utf-8") as f:
      f.write(_MUTATED_A)
    out = os.path.join(root, "MUTATION.md")
    results = os.path.join(root, "results.json")
    with open(out, "w", encoding="utf-8") as f:
      f.write("# Mutation\n\nhand-written head\n")
    argv = ["--root", root, "--out", out, "--results", results]
    self.assertEqual(mutation_report.main(argv), 0)
    mutation_report.main(argv)  # idempotent
    with open(out, encoding="utf-8") as f:
      text = f.read()
    self.assertIn("hand-written head", text)
    self.assertEqual(text.count(mutation_report.BEGIN), 1)
    self.assertIn("| `pkg/a.py` | 2 | 1 | 1 | 0 | 0 | 0 | 4 | 50 % of 4 run |",
                  text)
    # The score says what it was measured on: b.y__mutmut_1 was not run.
    self.assertIn("| `pkg/b.py` | 1 | 0 | 0 | 0 | 1 | 0 | 2 | 100 % of 1 run "
                  "(1 of 2 not run) |", text)
    with open(results, encoding="utf-8") as f:
      data = json.load(f)
    self.assertEqual(data["modules"]["pkg/a.py"]["exit_codes"],
                     {"x__mutmut_1": 1, "x__mutmut_2": 0, "x__mutmut_3": 36,
                      "x__mutmut_4": 3})
    os.remove(os.path.join(root, "mutants", "pkg", "a.py.meta"))
    with open(out, "w", encoding="utf-8") as f:
      f.write("# Mutation\n")
    self.assertEqual(mutation_report.main(argv + ["--render_only"]), 0)
    with open(out, encoding="utf-8") as f:
      self.assertIn(text.split("hand-written head\n", 1)[1].strip(),
                    f.read())  # The same section, from the JSON alone.
    self.assertIn("- `a.x__mutmut_2` (survived): `if n > 1: -> if n >= 1:`",
                  text)
    self.assertIn("- `a.x__mutmut_3` (timeout)", text)
    self.assertNotIn("b.y__mutmut_1`", text)
    self.assertNotIn("a.x__mutmut_1`", text)

  def test_missing_results_name_the_module_and_the_command(self):
    root = self._repo({"pkg/a.py": {"a.x__mutmut_1": 1}})
    with self.assertRaisesRegex(FileNotFoundError,
                                r"pkg/b\.py.*mutmut run --max-children 1"):
      mutation_report.scores(root)


_ROOT = pathlib.Path(__file__).resolve().parent.parent


class CommittedScoresTest(absltest.TestCase):
  """docs/MUTATION.md's section is what bench/docfigs/mutation_results.json
  renders, and that data agrees with itself: a hand edit of either fails."""

  def setUp(self):
    super().setUp()
    self.results = json.loads(pathlib.Path(
        mutation_report.RESULTS).read_text(encoding="utf-8"))
    self.page = (_ROOT / "docs" / "MUTATION.md").read_text(encoding="utf-8")

  def _section(self, page):
    return (mutation_report.BEGIN + page.split(mutation_report.BEGIN, 1)[1]
            .split(mutation_report.END, 1)[0] + mutation_report.END)

  def test_the_page_is_what_the_results_render(self):
    self.assertEqual(mutation_report.check_results(self.results), [])
    self.assertEqual(self._section(self.page),
                     mutation_report.render(self.results),
                     "docs/MUTATION.md's scores differ from `python -m "
                     "bench.docfigs.mutation_report --render_only`")

  def test_a_hand_edit_of_a_score_or_of_the_data_is_found(self):
    for old, new in (("74 % of 528 run", "75 % of 528 run"),
                     ("(61 of 164 not run)", ""),
                     ("| 391 | 137 |", "| 392 | 136 |")):
      self.assertIn(old, self.page)
      self.assertNotEqual(self._section(self.page.replace(old, new)),
                          mutation_report.render(self.results))
    edited = copy.deepcopy(self.results)
    module = edited["modules"]["harness/cluster/task_facts.py"]
    module["exit_codes"] = {f"x_f__mutmut_{i}": 1 if i < 103 else None
                            for i in range(164)}
    self.assertEqual(mutation_report.check_results(edited), [])
    module["counts"]["killed"] += 61  # "100 %" of all, as if all were run.
    module["counts"]["not checked"] = 0
    self.assertLen(mutation_report.check_results(edited), 1)
    edited = copy.deepcopy(self.results)
    edited["modules"]["harness/cluster/tf_config.py"]["categories"][
        "unexplained"] -= 1
    self.assertLen(mutation_report.check_results(edited), 2)


_ORIGINAL = """def f(n, source):
  if n > 1:
    fail(source, f"n is {n}: too many.", "use one.")
  log.warning("n is %d", n)
  return {"n": n}
"""


class TriageTest(parameterized.TestCase):

  @parameterized.parameters(
      ('f"n is {n}: too many."', 'f"XXn is {n}: too many.XX"'),
      ('"use one."', 'None'),
      ('"n is %d"', '"N IS %D"'))
  def test_a_literal_of_a_raised_or_logged_message_is_message_text(
      self, old, new):
    mutant = _ORIGINAL.replace(old, new)
    self.assertEqual(mutation_triage.classify("m.f", _ORIGINAL, mutant, ""),
                     "message text")

  @parameterized.parameters(
      ("n > 1", "n >= 1"),            # behaviour
      ('{"n": n}', '{"XXnXX": n}'),   # a literal outside any message
      ("{n}: too", "{n + 1}: too"),   # an f-string's expression
      ("fail(source,", "fail(None,"))  # not a literal
  def test_other_changes_are_unexplained(self, old, new):
    mutant = _ORIGINAL.replace(old, new)
    self.assertEqual(mutation_triage.classify("m.f", _ORIGINAL, mutant, ""),
                     "unexplained")

  def test_a_listed_change_is_equivalent(self):
    (key, change), = list(mutation_triage.EQUIVALENT)[:1]
    self.assertEqual(mutation_triage.classify(key, "", "", change),
                     "equivalent")


if __name__ == "__main__":
  absltest.main()
