"""tests/data holds what the tests read, as its READMEs say.

The CRD copies are `tests/_crd_copies.render` of the upstream files their
headers name and the fixtures are byte for byte the reference folder's
(checked against ../shared where one is beside the checkout: CI's; a
clone checks that the fixtures are there); on any checkout, each copy the
tests read is there, names its source and keeps no description, and the
trimming keeps a field that happens to be called "description".
"""

import filecmp
import hashlib
import types

from absl.testing import absltest
import yaml

from tests import _crd_copies
from tests import conftest

_REFERENCE_CRDS = conftest.SHARED_DIR / "k8s" / "crds"
_REFERENCE_FIXTURES = conftest.SHARED_DIR / "fixtures"


def _descriptions(node, field_names=False):
  """How many schema `description`s `node` holds."""
  if isinstance(node, dict):
    return sum(_descriptions(v, k == "properties" and not field_names)
               for k, v in node.items()) + (
                   "description" in node and not field_names)
  if isinstance(node, list):
    return sum(_descriptions(v) for v in node)
  return 0


class CrdCopiesTest(absltest.TestCase):

  def test_every_copy_names_its_source_and_keeps_no_description(self):
    self.assertCountEqual(
        [str(p.relative_to(conftest.K8S_CRDS_DIR))
         for p in conftest.K8S_CRDS_DIR.rglob("*.yaml")],
        _crd_copies.SOURCES)
    for path, (repo, _, tag, commit) in _crd_copies.SOURCES.items():
      text = (conftest.K8S_CRDS_DIR / path).read_text(encoding="utf-8")
      with self.subTest(path=path):
        self.assertIn(f"# {repo} ", text.splitlines()[0])
        self.assertIn(f"at {tag} ({commit})", text.splitlines()[0])
        self.assertLen(_crd_copies.upstream_digest(text), 64)
        crd = yaml.safe_load(text)
        self.assertEqual(crd["kind"], "CustomResourceDefinition")
        self.assertEqual(_descriptions(crd), 0)
        served = [v for v in crd["spec"]["versions"] if v["served"]]
        self.assertLen(served, 1)
        self.assertIn("properties", served[0]["schema"]["openAPIV3Schema"])

  def test_trim_drops_descriptions_but_not_a_field_of_that_name(self):
    schema = {"description": "doc", "type": "object", "properties": {
        "description": {"type": "string", "description": "a field"},
        "spec": {"description": "doc", "type": "object", "properties": {
            "properties": {"type": "object", "description": "doc"}}}}}
    self.assertEqual(_crd_copies.trim(schema), {
        "type": "object", "properties": {
            "description": {"type": "string"},
            "spec": {"type": "object", "properties": {
                "properties": {"type": "object"}}}}})
    self.assertEqual(_descriptions(schema), 4)

  def test_copies_are_the_reference_folders_files(self):
    """The CRDs trimmed from, and the fixtures equal to, ../shared's, where
    a reference folder is beside the checkout (CI's; HARNESS_SHARED_DIR);
    on a clone without one, the fixtures the tests read are there. Not a
    skip: a clone runs as many tests as CI."""
    if not (_REFERENCE_CRDS.is_dir() and _REFERENCE_FIXTURES.is_dir()):
      for name in ("estimator215_dnn/checkpoint",
                   "estimator215_dnn.expected.json",
                   "canned215/data.npz", "canned215/README.md",
                   "canned215/dnn_classifier/checkpoint"):
        self.assertTrue((conftest.FIXTURES_DIR / name).is_file(), name)
      return
    for path in _crd_copies.SOURCES:
      upstream = (_REFERENCE_CRDS / path).read_text(encoding="utf-8")
      copy = (conftest.K8S_CRDS_DIR / path).read_text(encoding="utf-8")
      with self.subTest(path=path):
        self.assertEqual(
            _crd_copies.upstream_digest(copy),
            hashlib.sha256(upstream.encode("utf-8")).hexdigest())
        self.assertEqual(copy, _crd_copies.render(upstream, path),
                         "rewrite it: python -m tests._crd_copies "
                         f"{_REFERENCE_CRDS}")
    compared = filecmp.dircmp(_REFERENCE_FIXTURES, conftest.FIXTURES_DIR)
    differing = []

    def walk(node, prefix=""):
      differing.extend(prefix + n for n in node.left_only + node.right_only
                       + node.diff_files + node.funny_files)
      for name, sub in node.subdirs.items():
        walk(sub, f"{prefix}{name}/")
    walk(compared)
    self.assertEqual(differing, [], "tests/data/fixtures differs from "
                     f"{_REFERENCE_FIXTURES}")


class SkippedLineTest(absltest.TestCase):
  """The run's last line (conftest.skipped_promises) names each skipped
  promise, with its files and the reason that says how to enable it."""

  def test_grouped_by_reason_busiest_first(self):
    def skipped(nodeid, reason):
      return types.SimpleNamespace(nodeid=nodeid, longrepr=(
          nodeid.split("::")[0], 1, f"Skipped: {reason}"))
    line = conftest.skipped_promises([
        skipped("tests/test_a.py::T::test_1", "set X=1 to run"),
        skipped("tests/test_b.py::T::test_2", "pip install y"),
        skipped("tests/test_b.py::T::test_3", "pip install y")])
    self.assertEqual(
        line, "3 tests skipped, not checking what they promise; to run "
        "them: 2 in test_b.py: pip install y | 1 in test_a.py: set X=1 to "
        "run")
    self.assertIsNone(conftest.skipped_promises([]))
    self.assertStartsWith(conftest.skipped_promises(
        [skipped("tests/test_a.py::T::t", "why")]), "1 test skipped, not "
                          "checking what it promises; to run it: 1 in")


if __name__ == "__main__":
  absltest.main()
