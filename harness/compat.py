"""Makes legacy `tf.estimator` code run on harness, unchanged.

    import harness.compat  # pylint: disable=unused-import
    import tensorflow as tf

    est = tf.estimator.Estimator(model_fn)            # a harness.Estimator
    from tensorflow_estimator.python.estimator import run_config  # harness's

Importing this module (or running a script under `python -m harness.run`)
puts three kinds of aliases in place, and nothing else:

* `tf.estimator`, `tf.compat.v1.estimator` and `tf.compat.v2.estimator` on
  every TensorFlow API module object (the v1 and v2 namespaces are distinct
  objects in TensorFlow, and so are ours);
* `sys.modules` entries for the module paths of tensorflow_estimator 2.15
  that legacy code and libraries import (`tensorflow_estimator.python.
  estimator.estimator`, `.run_config`, `.export.export_lib`, ...), mirrored
  under `tensorflow.python.estimator`;
* a finder that answers any other `tensorflow_estimator.*` module with
  `NotSupportedError` (also a `ModuleNotFoundError`) naming it.

Every alias module forwards each attribute access to harness's current
object, so nothing is copied and nothing goes stale. A public name that
harness lacks raises `harness.errors.NotSupportedError` naming it. Importing
twice, or calling `install()` again, changes nothing.

Importing harness sets `TF_USE_LEGACY_KERAS=1` before TensorFlow loads; if
Keras 3 was already loaded, the import raises `harness.errors.
LegacyKerasError` unchanged.
"""

import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import types

from harness import _tf_private
from harness import errors
# Loads TensorFlow with TF_USE_LEGACY_KERAS=1, or raises LegacyKerasError.
from harness._tf import tf

__all__ = ["install", "check_keras_2", "register_module",
           "ModuleNotProvidedError", "V1_NAMESPACE", "V2_NAMESPACE"]

V1_NAMESPACE = "tensorflow_estimator.python.estimator.api._v1.estimator"
V2_NAMESPACE = "tensorflow_estimator.python.estimator.api._v2.estimator"
_PACKAGE = "tensorflow_estimator.python.estimator"
_MIRROR = "tensorflow.python.estimator"
_ROOTS = ("tensorflow_estimator", _MIRROR)
_MARKER = "_harness_alias"

_FIX = ("Fix: use the tf.estimator name harness provides (see "
        "`dir(harness)`), express the model as a model_fn, or keep that job "
        "on tf.estimator 2.15.")
_CANNED_WHY = ("harness provides the canned modules dnn, linear, "
               "dnn_linear_combined, baseline, optimizers, metric_keys, "
               "prediction_keys and head.* (the v2 heads), not this one "
               "(BoostedTrees, RNN, KMeans, TimeSeries and the v1 "
               "canned.head module are not provided). Fix: use those "
               "classes, express the model as a model_fn, or keep that "
               "job on tf.estimator 2.15.")
_TPU_WHY = ("harness provides TPUEstimator for CPU/GPU (use_tpu=False) "
            "through the tpu, tpu.tpu_estimator and tpu.tpu_config modules "
            "only. Fix: import TPUEstimator, TPUEstimatorSpec, RunConfig, "
            "TPUConfig from tensorflow_estimator.python.estimator.tpu."
            "tpu_estimator / tpu_config, or keep that job on tf.estimator "
            "2.15.")


class ModuleNotProvidedError(errors.NotSupportedError, ModuleNotFoundError):
  """A tensorflow_estimator module harness does not provide.

  Also a `ModuleNotFoundError`, so `try: import ... except ImportError`
  probes in libraries keep working.
  """


class _AliasModule(types.ModuleType):
  """A module whose public names forward, on each access, to harness.

  Lookup order: real attributes (child alias modules), `names` (explicit
  `{name: "module:attr"}`), `unsupported` (`{name: why}`), then the public
  names (`__all__`, or the module's own `__getattr__`) of each module in
  `sources`. Anything else public raises `NotSupportedError`.
  """

  def __init__(self, name, display, *, names=None, sources=(),
               unsupported=None, why=None, is_package=False):
    super().__init__(name, f"Alias of `{display}`, forwarding to harness.")
    state = self.__dict__
    state[_MARKER] = True
    state["_harness_display"] = display
    state["_harness_names"] = dict(names or {})
    state["_harness_sources"] = tuple(sources)
    state["_harness_unsupported"] = dict(unsupported or {})
    state["_harness_why"] = why
    state["__spec__"] = importlib.machinery.ModuleSpec(
        name, None, is_package=is_package)
    if is_package:
      state["__path__"] = []

  def __getattr__(self, name):
    if name.startswith("_") and name not in self.__dict__["_harness_names"]:
      # Tools probe modules for dunders and private hooks; those must stay
      # ordinary AttributeErrors.
      raise AttributeError(
          f"module {self.__name__!r} has no attribute {name!r}")
    return _lookup(self.__dict__, name)

  def __dir__(self):
    names = set(self.__dict__["_harness_names"])
    for source in self.__dict__["_harness_sources"]:
      names.update(getattr(importlib.import_module(source), "__all__", ()))
    names.update(k for k in self.__dict__ if not k.startswith("_"))
    return sorted(names) + ["__name__", "__doc__"]


def _resolve(target):
  module_name, _, attr = target.partition(":")
  return getattr(importlib.import_module(module_name), attr)


def _lookup(state, name):
  """Returns the harness object `name` of an alias module, or raises."""
  display = state["_harness_display"]
  if name in state["_harness_names"]:
    return _resolve(state["_harness_names"][name])
  if name in state["_harness_unsupported"]:
    raise errors.NotSupportedError(
        f"{display}.{name}: {state['_harness_unsupported'][name]}")
  for source in state["_harness_sources"]:
    module = importlib.import_module(source)
    if name in getattr(module, "__all__", ()):
      return getattr(module, name)
    module_getattr = module.__dict__.get("__getattr__")
    if module_getattr is not None:
      try:
        return module_getattr(name)  # May raise its own NotSupportedError.
      except AttributeError:
        pass
  why = state["_harness_why"] or (
      "harness implements tf.estimator's public Estimator API, not every "
      f"symbol of tensorflow_estimator 2.15. {_FIX}")
  raise errors.NotSupportedError(
      f"{display}.{name} is not provided by harness: {why}")


def _names(module, *attrs):
  return {attr: f"{module}:{attr}" for attr in attrs}


def _canned_names(module, *classes):
  """{2.15 name: harness target} of a canned module: X is v1, XV2 is v2."""
  names = {}
  for cls in classes:
    names[cls] = f"harness.canned.{module}:{cls}V1"
    names[f"{cls}V2"] = f"harness.canned.{module}:{cls}"
  return names


# tf.compat.v1.estimator names whose class differs from tf.estimator's.
_V1_CANNED = {
    **_canned_names("dnn", "DNNClassifier", "DNNRegressor", "DNNEstimator"),
    **_canned_names("linear", "LinearClassifier", "LinearRegressor",
                    "LinearEstimator"),
    **_canned_names("dnn_linear_combined", "DNNLinearCombinedClassifier",
                    "DNNLinearCombinedRegressor",
                    "DNNLinearCombinedEstimator"),
    **_canned_names("baseline", "BaselineClassifier", "BaselineRegressor",
                    "BaselineEstimator"),
}
_V1_CANNED = {k: v for k, v in _V1_CANNED.items() if not k.endswith("V2")}


# The tf.estimator API namespaces: (relative path, sources, unsupported).
_NAMESPACE_PARTS = (
    ("", ("harness",), {}),
    ("export", ("harness.export",), {}),
    ("experimental", ("harness.experimental",), {}),
    ("inputs", ("harness.inputs",), {}),
    ("tpu", ("harness.tpu",), {}),  # TPUEstimator on CPU/GPU.
)

# tensorflow_estimator 2.15's module layout under `_PACKAGE`:
# relative path -> (explicit names, fallback harness modules).
_LAYOUT = {
    "": ({}, ()),
    "estimator": ({
        **_names("harness", "Estimator", "VocabInfo", "WarmStartSettings"),
        "EstimatorV2": "harness:Estimator",
        # Private helpers legacy code is known to call.
        "_write_dict_to_summary": "harness.core.evaluation:write_dict_to_summary",
    }, ("harness.estimator",)),
    "estimator_lib": ({}, ("harness",)),
    "run_config": (_names("harness.run_config", "RunConfig", "TaskType"),
                   ("harness.run_config",)),
    "model_fn": (_names("harness.spec", "EstimatorSpec", "ModeKeys"),
                 ("harness.spec",)),
    "mode_keys": (_names("harness.spec", "ModeKeys"), ()),
    "training": ({}, ("harness.training",)),
    "exporter": ({}, ("harness.export.exporter",)),
    "extenders": ({}, ("harness.extension",)),
    "early_stopping": (_names(
        "harness.early_stopping", "_StopOnPredicateHook",
        "_CheckForStoppingHook"), ("harness.early_stopping",)),
    "util": (_names("harness.spec", "fn_args"), ()),
    "keras_lib": (_names("harness.keras_lib", "model_to_estimator"), ()),
    "keras": (_names("harness.keras_lib", "model_to_estimator"), ()),
    "export": ({}, ("harness.export",)),
    "export.export": ({}, ("harness.export.receivers",)),
    "export.export_output": ({}, ("harness.export.outputs",)),
    "export.export_lib": (_names(
        "harness.export.writer", "get_timestamped_export_dir"), (
            "harness.export.receivers", "harness.export.outputs")),
    "hooks": ({}, ()),
    "hooks.hooks": ({}, ("harness.hooks",)),
    "hooks.basic_session_run_hooks": ({}, ("harness.hooks",)),
    "hooks.session_run_hook": ({}, ("harness.hooks",)),
    "inputs": ({}, ("harness.inputs",)),
    "inputs.inputs": ({}, ("harness.inputs",)),
    "inputs.numpy_io": (_names("harness.inputs", "numpy_input_fn"), ()),
    "inputs.pandas_io": (_names("harness.inputs", "pandas_input_fn"), ()),
    "canned": ({}, ()),
    "canned.parsing_utils": ({}, ("harness.parsing",)),
    # Canned estimators: `X` is the v1 class there, `XV2` the v2 one.
    "canned.dnn": (_canned_names("dnn", "DNNClassifier", "DNNRegressor",
                                 "DNNEstimator"), ("harness.canned.dnn",)),
    "canned.linear": (_canned_names(
        "linear", "LinearClassifier", "LinearRegressor", "LinearEstimator"),
                      ("harness.canned.linear",)),
    "canned.dnn_linear_combined": (_canned_names(
        "dnn_linear_combined", "DNNLinearCombinedClassifier",
        "DNNLinearCombinedRegressor", "DNNLinearCombinedEstimator"),
                                   ("harness.canned.dnn_linear_combined",)),
    "canned.baseline": (_canned_names(
        "baseline", "BaselineClassifier", "BaselineRegressor",
        "BaselineEstimator"), ("harness.canned.baseline",)),
    "canned.optimizers": ({}, ("harness.canned.optimizers",)),
    "canned.metric_keys": ({}, ("harness.canned.head.metric_keys",)),
    "canned.prediction_keys": ({}, ("harness.canned.head.prediction_keys",)),
    "head": ({}, ("harness.canned.head",)),
    "head.head_utils": ({}, ("harness.canned.default_heads",)),
    **{f"head.{module}": ({}, (f"harness.canned.head.{module}",))
       for module in ("base_head", "binary_class_head", "multi_class_head",
                      "multi_label_head", "regression_head", "multi_head")},
    # TPUEstimator on CPU/GPU (use_tpu=False), harness/tpu/.
    "tpu": ({}, ("harness.tpu",)),
    "tpu.tpu_estimator": ({}, ("harness.tpu.tpu_estimator",
                               "harness.tpu.tpu_spec", "harness.tpu")),
    "tpu.tpu_config": ({}, ("harness.tpu.tpu_config",)),
}
# Packages whose unknown names are canned estimators or TPU code.
_WHY_BY_PACKAGE = {"canned": _CANNED_WHY, "head": _CANNED_WHY,
                   "tpu": _TPU_WHY}


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
              _AliasModule(ancestor, ancestor, is_package=True))


def _build_namespace(registry, version):
  """Builds one API version's `estimator` namespace and its submodules."""
  base = V1_NAMESPACE if version == 1 else V2_NAMESPACE
  display = "tf.compat.v1.estimator" if version == 1 else "tf.estimator"
  modules = {}
  for rel, sources, unsupported in _NAMESPACE_PARTS:
    name = f"{base}.{rel}" if rel else base
    names = {}
    if rel == "" and version == 1:
      names = _V1_CANNED  # tf.compat.v1.estimator.DNNClassifier & co.
    modules[rel] = _AliasModule(
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
    for rel, (names, sources) in _LAYOUT.items():
      name = f"{root}.{rel}" if rel else root
      is_package = rel in ("", "export", "hooks", "inputs", "canned",
                           "head", "tpu")
      unsupported = {}
      _ensure_packages(registry, name)
      _register(registry, name, _AliasModule(
          name, name, names=names, sources=sources, is_package=is_package,
          unsupported=unsupported,
          why=_CANNED_WHY if rel.startswith(("canned", "head")) else (
              _TPU_WHY if rel.startswith("tpu") else None)))


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
  _LAYOUT[rel] = (dict(names or {}), tuple(sources))
  registry = _registry()
  if registry is None:
    return  # install() builds it with the rest.
  for root in (_PACKAGE, _MIRROR):
    name = f"{root}.{rel}"
    _ensure_packages(registry, name)
    _register(registry, name, _AliasModule(
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
    why = next((_WHY_BY_PACKAGE[p] for p in parts if p in _WHY_BY_PACKAGE),
               None)
    error = ModuleNotProvidedError(
        f"No module named {fullname!r}: harness aliases tensorflow_estimator "
        "2.15's Estimator modules (estimator, run_config, model_fn, "
        "training, exporter, export, hooks, inputs, early_stopping, "
        f"keras_lib, canned.*, head.*, tpu), not this one. {why or _FIX}")
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

  TensorFlow picks Keras 2 or 3 when `tf.keras` is first touched, so code
  that touched it before harness was imported has Keras 3 for good, even
  though `tf.compat.v1.layers` may still work.

  Raises:
    LegacyKerasError: some `tf.keras` of this process is Keras 3.
  """
  for module, _ in _tensorflow_api_modules():
    name = _tf_private.loaded_keras_name(module)
    if name is not None and not name.startswith("tf_keras"):
      raise errors.LegacyKerasError(
          f"tf.keras was loaded as Keras 3 (module {name!r}) before harness "
          "was imported, so legacy tf.keras code in a model_fn would get "
          "Keras 3, which cannot build TF1 graphs (TF_USE_LEGACY_KERAS is "
          "read only when tf.keras is first touched). Fix: import harness "
          "(or harness.compat) before touching tf.keras, or export "
          "TF_USE_LEGACY_KERAS=1 before starting Python, or run the script "
          "with `python -m harness.run script.py`.")


def _patch_tensorflow(registry, namespaces):
  for module, version in _tensorflow_api_modules():
    if getattr(module, "estimator", None) is not namespaces[version][""]:
      setattr(module, "estimator", namespaces[version][""])
  for name, version in (("tensorflow.estimator", 2),
                        ("tensorflow.compat.v2.estimator", 2),
                        ("tensorflow.compat.v1.estimator", 1)):
    _alias_namespace(registry, namespaces[version], name)


def install():
  """Puts every alias in place; a no-op when they already are.

  Returns:
    `{module name: alias module}` of every registered alias module.

  Raises:
    LegacyKerasError: `tf.keras` is already Keras 3 in this process.
  """
  check_keras_2()
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
  # By marker, not class: a reloaded module has a new class object.
  if not any(getattr(f, _MARKER, False) for f in sys.meta_path):
    sys.meta_path.append(_NotProvidedFinder())
  return dict(registry)


install()
