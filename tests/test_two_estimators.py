"""harness's aliases win over a real tensorflow-estimator 2.15 beside it.

TFMA 0.52 and TFX 1.21 still require `tensorflow-estimator>=2.10`, so their
users get the 2.15 package beside harness. The slow tests install the real
2.15 wheel with `--no-deps` into a scratch folder (`pip install --target`),
put it on the path of a child Python after this checkout, and check, in
both import orders and under `python -m harness.run`, that every
`tf.estimator` path and every aliased `tensorflow_estimator` module path
resolves to harness, and that nothing of the 2.15 package is left loaded.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

from absl.testing import absltest
import pytest

from tests import conftest

_WHEEL = "tensorflow-estimator==2.15.0"
# pip's words when the index cannot be reached or has no such release.
_UNREACHABLE = ("NewConnectionError", "Network is unreachable",
                "Temporary failure in name resolution", "No matching "
                "distribution found", "Could not find a version")

# Checks every path; prints "all paths resolve to harness" at the end.
_CHECK = r'''
import importlib, sys
import harness
from harness._tf import tf
from harness.compat import aliases, installer
roots = ("tensorflow_estimator", "tensorflow.python.estimator")
for api, namespace in (("tf.estimator", tf.estimator),
                       ("tf.compat.v2.estimator", tf.compat.v2.estimator),
                       ("tf.compat.v1.estimator", tf.compat.v1.estimator)):
  for name in harness.__all__:
    if api.endswith("v1.estimator") and name in aliases.V1_CANNED:
      found = getattr(namespace, name)
      assert found.__module__.startswith("harness."), (api, name, found)
      continue
    found = getattr(namespace, name)
    if getattr(found, aliases.MARKER, False):
      continue  # A child namespace (tf.estimator.export, ...): an alias.
    assert found is getattr(harness, name), (api, name, found)
for root in ("tensorflow_estimator.python.estimator",
             "tensorflow.python.estimator"):
  for rel in aliases.LAYOUT:
    path = f"{root}.{rel}" if rel else root
    module = importlib.import_module(path)
    assert getattr(module, aliases.MARKER, False), (path, module)
for path in ("tensorflow_estimator", "tensorflow_estimator.estimator",
             installer.V1_NAMESPACE, installer.V2_NAMESPACE):
  assert getattr(importlib.import_module(path), aliases.MARKER, False), path
from tensorflow_estimator.python.estimator import estimator, run_config
from tensorflow_estimator.python.estimator.hooks import basic_session_run_hooks
assert estimator.Estimator is harness.Estimator
assert run_config.RunConfig is harness.RunConfig
assert basic_session_run_hooks.SummarySaverHook is harness.SummarySaverHook
import tensorflow_estimator as te
assert te.estimator.Estimator is harness.Estimator
try:
  import tensorflow_estimator.python.estimator.canned.boosted_trees
except installer.ModuleNotProvidedError:
  pass  # harness's answer, not the 2.15 file on disk.
else:
  raise AssertionError("the 2.15 boosted_trees module was imported")
real = [n for n, m in sys.modules.items()
        if n.startswith(roots) and not getattr(m, aliases.MARKER, False)]
assert not real, real
print("all paths resolve to harness")
'''

_HARNESS_FIRST = "import harness.compat\nimport tensorflow_estimator\n"
_ESTIMATOR_FIRST = r'''
try:
  import tensorflow_estimator
except ImportError as e:
  print("2.15's own import failed:", type(e).__name__)
import harness.compat
'''


def _env(*paths):
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(
      [str(conftest.REPO_ROOT), *map(str, paths)])
  return env


def _run(argv, env, cwd=None):
  return subprocess.run(argv, env=env, cwd=cwd, capture_output=True,
                        text=True, timeout=600, check=False)


class EstimatorImportedFirstTest(absltest.TestCase):
  """The guard, without the wheel: a 2.15 module that imported whole."""

  def test_a_whole_215_module_names_the_package_to_uninstall(self):
    site = pathlib.Path(self.create_tempdir().full_path)
    package = site / "tensorflow_estimator"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "whole.py").write_text("Estimator = object\n")
    result = _run([sys.executable, "-c",
                   "import tensorflow_estimator.whole\nimport harness.compat"],
                  _env(site))
    self.assertNotEqual(result.returncode, 0)
    last = result.stderr.strip().splitlines()[-1]
    self.assertIn("EstimatorImportedFirstError: tensorflow_estimator.whole (",
                  last)
    self.assertIn("`pip uninstall tensorflow-estimator`", last)

  def test_package_shells_are_dropped_and_aliases_win(self):
    site = pathlib.Path(self.create_tempdir().full_path)
    package = site / "tensorflow_estimator"
    (package / "python").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "python" / "__init__.py").write_text("")
    result = _run([sys.executable, "-c",
                   "import tensorflow_estimator.python\n" + _CHECK], _env(site))
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("all paths resolve to harness", result.stdout)


@pytest.mark.slow  # Installs the 2.15 wheel from the package index.
class RealEstimatorBesideTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls._scratch = tempfile.TemporaryDirectory(prefix="two_estimators_")
    cls.site = pathlib.Path(cls._scratch.name) / "site"
    result = _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                   f"--target={cls.site}", _WHEEL], dict(os.environ))
    if result.returncode != 0:
      cls._scratch.cleanup()
      output = result.stdout + result.stderr
      if any(words in output for words in _UNREACHABLE):
        raise absltest.SkipTest(f"{_WHEEL} could not be downloaded (the "
                                f"package index is unreachable; run it with "
                                f"network access to PyPI): "
                                f"{output.strip().splitlines()[-1]}")
      raise AssertionError(f"pip install {_WHEEL} failed: {output[-2000:]}")

  @classmethod
  def tearDownClass(cls):
    cls._scratch.cleanup()
    super().tearDownClass()

  def _check(self, prelude):
    result = _run([sys.executable, "-c", prelude + _CHECK], _env(self.site))
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("all paths resolve to harness", result.stdout)
    return result.stdout

  def test_the_real_package_is_there(self):
    self.assertTrue((self.site / "tensorflow_estimator" / "python" /
                     "estimator" / "estimator.py").exists())

  def test_harness_compat_first(self):
    self._check(_HARNESS_FIRST)

  def test_tensorflow_estimator_first(self):
    # On TF 2.16+ the 2.15 package fails inside itself (TF dropped modules
    # it imports); what it left is replaced by the aliases.
    self.assertIn("2.15's own import failed: ImportError",
                  self._check(_ESTIMATOR_FIRST))

  def test_harness_run(self):
    program = pathlib.Path(self.create_tempdir().full_path) / "prog.py"
    program.write_text(_CHECK)
    result = _run([sys.executable, "-m", "harness.run", str(program)],
                  _env(self.site))
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("all paths resolve to harness", result.stdout)


if __name__ == "__main__":
  absltest.main()
