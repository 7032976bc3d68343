"""tf.estimator aliases for the binaries, installed when user code needs them.

`python -m harness.run script.py` imports `harness.compat` before the
script, so `tf.estimator.*` and `tensorflow_estimator.*` resolve to harness.
`harness.main` (and every task `harness.launch` starts, which runs
harness.main) gives a `--model_fn=my_pkg.model:model_fn` module the same::

    legacy_imports.install_on_first_import()  # before flags resolve modules
    ...
    legacy_imports.install()                  # before the job runs

The first call puts a finder first on `sys.meta_path` that waits for the
first import of `tensorflow` or `tensorflow_estimator` (the user's module
importing it while the flags are resolved) and then imports
`harness.compat` in its place: TensorFlow loads the way harness loads it
(Keras 2, quietly) and the aliases are there before the module's next line.
Until then nothing is imported, so a command line with a bad flag is still
answered in milliseconds. The second call installs the aliases for code that
reads `tf.estimator` only when called (it imports TensorFlow).
This module imports no TensorFlow itself.
"""

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install_on_first_import", "install"]

_TRIGGERS = ("tensorflow", "tensorflow_estimator")


def install():
  """Imports harness.compat (and so TensorFlow), which installs the aliases."""
  compat = importlib.import_module("harness.compat")
  compat.install()


def install_on_first_import():
  """Installs the aliases when `tensorflow(_estimator)` is first imported.

  At once when TensorFlow is already loaded; a no-op when the finder is
  already in place.
  """
  if "tensorflow" in sys.modules:
    install()
    return
  if not any(isinstance(f, _FirstImportFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _FirstImportFinder())


class _FirstImportFinder(importlib.abc.MetaPathFinder):
  """Answers the first `import tensorflow(_estimator)` with harness.compat."""

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname not in _TRIGGERS:
      return None
    if self in sys.meta_path:  # One use: the imports below are ordinary.
      sys.meta_path.remove(self)
    return importlib.util.spec_from_loader(
        fullname, _CompatLoader(), is_package=True)


class _CompatLoader(importlib.abc.Loader):
  """Loads harness.compat, then hands back the module it put in place."""

  def create_module(self, spec):
    harness_tf = sys.modules.get("harness._tf")
    if harness_tf is not None and not hasattr(harness_tf, "tf"):
      # harness itself is importing TensorFlow (a module that imports
      # harness._tf first): compat cannot load half way through that;
      # harness.main installs it before the job runs.
      return importlib.import_module(spec.name)
    install()
    return sys.modules[spec.name]

  def exec_module(self, module):
    del module  # Loaded in create_module.
