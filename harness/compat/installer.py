"""Installs the aliases of `harness.compat` (its door runs `install()`).

The table of module paths and names, and the alias module type, are
`harness/compat/aliases.py`; this module puts them in place.
"""

import importlib.abc
import re
import sys
import types

from harness import _tf
from harness import _tf_private
from harness import errors
# Loads TensorFlow with TF_USE_LEGACY_KERAS=1, or raises LegacyKerasError.
from harness._tf import tf
from harness.compat import aliases as compat_aliases

__all__ = ["install", "check_keras_2", "register_module",
           "ModuleNotProvidedError", "EstimatorImportedFirstError",
           "V1_NAMESPACE", "V2_NAMESPACE"]

V1_NAMESPACE = "tensorflow_estimator.python.estimator.api._v1.estimator"
V2_NAMESPACE = "tensorflow_estimator.python.estimator.api._v2.estimator"
_PACKAGE = "tensorflow_estimator.python.estimator"
_MIRROR = "tensorflow.python.estimator"
_ROOTS = ("tensorflow_estimator", _MIRROR)


class EstimatorImportedFirstError(errors.HarnessError, ImportError):
  """tensorflow_estimator's own code ran before harness.compat.

  Its classes may be bound already, where harness's aliases cannot reach
  them. (On TensorFlow 2.16+ the 2.15 package fails to import, so only its
  empty package shells are ever left, which the aliases replace.)
  """


class ModuleNotProvidedError(errors.NotSupportedError, ModuleNotFoundError):
  """A tensorflow_estimator module harness does not provide.

  Also a `ModuleNotFoundError`, so `try: import ... except ImportError`
  probes in libraries keep working.
  """


def _register(registry, name, module):
  """Puts `module` at `name` in sys.modules and as its parent's attribute."""
  registry[name] = module
  sys.modules[name] = module
  parent, _, child = name.rpartition(".")
  if parent in registry:
    registry[parent].__dict__[child] = module
  elif parent in sys.modules and not parent.startswith(_ROOTS):
    setattr(sys.modules[parent], child, module)


def _ensure_packages(registry, name):
  """Registers empty alias packages for every missing ancestor of `name`."""
  parts = name.split(".")
  for i in range(1, len(parts)):
    ancestor = ".".join(parts[:i])
    if ancestor in registry:
      continue
    if not ancestor.startswith(_ROOTS):
      continue  # TensorFlow's own packages (`tensorflow.compat`) stay real.
    _register(registry, ancestor,
              compat_aliases.AliasModule(ancestor, ancestor, is_package=True))


def _build_namespace(registry, version):
  """Builds one API version's `estimator` namespace and its submodules."""
  base = V1_NAMESPACE if version == 1 else V2_NAMESPACE
  display = "tf.compat.v1.estimator" if version == 1 else "tf.estimator"
  modules = {}
  for rel, sources, unsupported in compat_aliases.NAMESPACE_PARTS:
    name = f"{base}.{rel}" if rel else base
    names = {}
    if rel == "" and version == 1:
      # tf.compat.v1.estimator.DNNClassifier & co.
      names = compat_aliases.V1_CANNED
    modules[rel] = compat_aliases.AliasModule(
        name, f"{display}.{rel}" if rel else display, names=names,
        sources=sources, unsupported=unsupported, is_package=(rel == ""))
  _alias_namespace(registry, modules, base)
  return modules


def _alias_namespace(registry, modules, name):
  """Registers an already-built namespace under one more module path."""
  _ensure_packages(registry, name)
  _register(registry, name, modules[""])
  for rel, module in modules.items():
    if rel:
      _register(registry, f"{name}.{rel}", module)


def _build_layout(registry):
  for root in (_PACKAGE, _MIRROR):
    for rel, (names, sources) in compat_aliases.LAYOUT.items():
      name = f"{root}.{rel}" if rel else root
      is_package = rel in ("", "export", "hooks", "inputs", "canned",
                           "head", "tpu")
      unsupported = {}
      why = (compat_aliases.CANNED_WHY if rel.startswith(("canned", "head"))
             else compat_aliases.TPU_WHY if rel.startswith("tpu") else None)
      _ensure_packages(registry, name)
      _register(registry, name, compat_aliases.AliasModule(
          name, name, names=names, sources=sources, is_package=is_package,
          unsupported=unsupported, why=why))


def register_module(rel, *, names=None, sources=(), is_package=False):
  """Adds (or replaces) the alias of one tensorflow_estimator 2.15 module.

  The hook for modules harness adds later (the canned estimators, e.g.
  `register_module("canned.dnn", sources=("harness.canned.dnn",))`): the
  module appears under `tensorflow_estimator.python.estimator.<rel>` and
  `tensorflow.python.estimator.<rel>`, now and on every later `install()`.

  Args:
    rel: the path under `tensorflow_estimator.python.estimator`.
    names: `{name: "harness.module:attr"}` (underscore names allowed).
    sources: harness modules whose `__all__` names it forwards.
    is_package: whether it has submodules.
  """
  compat_aliases.LAYOUT[rel] = (dict(names or {}), tuple(sources))
  registry = _registry()
  if registry is None:
    return  # install() builds it with the rest.
  for root in (_PACKAGE, _MIRROR):
    name = f"{root}.{rel}"
    _ensure_packages(registry, name)
    _register(registry, name, compat_aliases.AliasModule(
        name, name, names=names, sources=sources, is_package=is_package))


def _registry():
  root = sys.modules.get("tensorflow_estimator")
  return getattr(root, "__dict__", {}).get("_harness_registry")


class _NotProvidedFinder(importlib.abc.MetaPathFinder):
  """Answers unknown `tensorflow_estimator.*` modules with a clear error."""

  _harness_alias = True

  def find_spec(self, fullname, path=None, target=None):
    del path, target  # Unused.
    if not fullname.startswith(tuple(r + "." for r in _ROOTS)):
      return None
    parts = fullname.split(".")
    why_by_package = compat_aliases.WHY_BY_PACKAGE
    why = next((why_by_package[p] for p in parts if p in why_by_package),
               None)
    error = ModuleNotProvidedError(
        f"No module named {fullname!r}: harness aliases tensorflow_estimator "
        "2.15's Estimator modules (estimator, run_config, model_fn, "
        "training, exporter, export, hooks, inputs, early_stopping, "
        "keras_lib, canned.*, head.*, tpu), not this one. "
        f"{why or compat_aliases.FIX}")
    error.name = fullname
    raise error


_API_MODULE = re.compile(r"^tensorflow(\._api\.v2)?(\.compat\.v[12])*$")


def _api_version(name):
  """Returns 1 or 2: the API version of a TensorFlow namespace module."""
  found = re.findall(r"compat\.v([12])", name)
  return int(found[-1]) if found else 2


def _tensorflow_api_modules():
  """Yields (object, api version) for every TensorFlow API module object."""
  seen = set()
  chains = [("tensorflow", tf)]
  for first in ("v1", "v2"):
    module = getattr(tf.compat, first)
    chains.append((f"tensorflow.compat.{first}", module))
    for second in ("v1", "v2"):
      chains.append((f"tensorflow.compat.{first}.compat.{second}",
                     getattr(module.compat, second)))
  chains.extend((n, m) for n, m in list(sys.modules.items())
                if _API_MODULE.match(n))
  for name, module in chains:
    if id(module) not in seen:
      seen.add(id(module))
      yield module, _api_version(name)


def check_keras_2():
  """Raises `LegacyKerasError` if `tf.keras` already resolved to Keras 3.

  Every TensorFlow API module's `keras` (`harness._tf.check_keras_2`).
  """
  _tf.check_keras_2(module for module, _ in _tensorflow_api_modules())


def _patch_tensorflow(registry, namespaces):
  for module, version in _tensorflow_api_modules():
    if getattr(module, "estimator", None) is not namespaces[version][""]:
      setattr(module, "estimator", namespaces[version][""])
  for name, version in (("tensorflow.estimator", 2),
                        ("tensorflow.compat.v2.estimator", 2),
                        ("tensorflow.compat.v1.estimator", 1)):
    _alias_namespace(registry, namespaces[version], name)


def _alias_moved_tensorflow_modules():
  """Puts TF modules back at the paths 2.15-era libraries import them from
  (`_tf_private.moved_modules`), with empty packages for missing parents."""
  for old, module in _tf_private.moved_modules().items():
    if old in sys.modules:
      continue
    parts = old.split(".")
    for i in range(2, len(parts)):
      name = ".".join(parts[:i])
      if name not in sys.modules:
        package = types.ModuleType(name, f"{name}: moved modules of TF, "
                                   "aliased by harness.compat.")
        package.__path__ = []
        sys.modules[name] = package
        setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], package)
    sys.modules[old] = module
    setattr(sys.modules[".".join(parts[:-1])], parts[-1], module)


def _drop_real_estimator_modules():
  """Removes tensorflow_estimator's own modules from `sys.modules`.

  With the 2.15 package installed beside harness, an `import
  tensorflow_estimator` before harness.compat fails inside it on TF 2.16+
  and leaves its package modules (`__init__.py` only) behind; dropped, so
  that each of their paths meets an alias. A module of its own that ran to
  the end (any other file) means its classes may be in use: that raises.
  """
  for name, module in list(sys.modules.items()):
    if not any(name == root or name.startswith(root + ".")
               for root in _ROOTS) or getattr(
                   module, compat_aliases.MARKER, False):
      continue  # By name first: other modules' __getattr__ stays untouched.
    path = getattr(module, "__file__", None) or ""
    if path and not path.endswith("__init__.py"):
      raise EstimatorImportedFirstError(
          f"{name} ({path}) was imported before harness.compat, so "
          "tensorflow_estimator's classes may compete with harness's. Fix: "
          "`pip uninstall tensorflow-estimator` (harness provides "
          "tf.estimator), or import harness.compat before anything imports "
          "tensorflow_estimator (`python -m harness.run` does).")
    del sys.modules[name]


def install():
  """Puts every alias in place; a no-op when they already are.

  Returns:
    `{module name: alias module}` of every registered alias module.

  Raises:
    LegacyKerasError: `tf.keras` is already Keras 3 in this process.
    EstimatorImportedFirstError: a tensorflow_estimator module of its own
      was imported whole before (`_drop_real_estimator_modules`).
  """
  check_keras_2()
  _drop_real_estimator_modules()
  root = sys.modules.get("tensorflow_estimator")
  registry = getattr(root, "__dict__", {}).get("_harness_registry")
  if registry is None:
    registry = {}
    namespaces = {1: _build_namespace(registry, 1),
                  2: _build_namespace(registry, 2)}
    _alias_namespace(registry, namespaces[1], "tensorflow_estimator.estimator")
    for version in (1, 2):
      _alias_namespace(registry, namespaces[version],
                       f"tensorflow_estimator._api.v{version}.estimator")
    _build_layout(registry)
    registry["tensorflow_estimator"].__dict__["_harness_registry"] = registry
    registry["tensorflow_estimator"].__dict__["_harness_namespaces"] = (
        namespaces)
  namespaces = registry["tensorflow_estimator"].__dict__["_harness_namespaces"]
  for name, module in registry.items():
    sys.modules[name] = module  # Restores entries someone removed.
  _patch_tensorflow(registry, namespaces)
  _alias_moved_tensorflow_modules()
  # By marker, not class: a reloaded module has a new class object.
  if not any(getattr(f, compat_aliases.MARKER, False) for f in sys.meta_path):
    sys.meta_path.append(_NotProvidedFinder())
  return dict(registry)
