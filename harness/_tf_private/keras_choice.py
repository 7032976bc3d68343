"""Which Keras TensorFlow's `tf.keras` chose, and pointing it at tf_keras.

Part of `harness._tf_private` (see its door for the rule). It imports
nothing of harness, not even `harness._tf`, which reads it while it loads
TensorFlow (its Keras 2 check): no import circle between the two.
"""

import importlib
import os
import re
import sys
import types

__all__ = ["loaded_keras_name", "keras_3_holders", "reroute_keras_to_tf_keras"]


def loaded_keras_name(api_module):
  """Returns the module name `api_module.keras` already resolved to, or None.

  Reads `__dict__` only: `getattr` would load Keras as a side effect. Why
  private: TensorFlow's module wrapper (`_tfmw_wrapped_module`) and its
  KerasLazyLoader state (`_tfll_*`) are the only record of which Keras
  `tf.keras` chose.
  """
  wrapped = getattr(api_module, "_tfmw_wrapped_module", api_module)
  keras = vars(wrapped).get("keras")
  if keras is None:
    return None
  state = vars(keras)
  if "_tfll_initialized" in state:  # TensorFlow's KerasLazyLoader.
    if not state["_tfll_initialized"]:
      return None
    return "tf_keras" if state.get("_tfll_keras_version") != "keras_3" else (
        "keras")
  return state.get("__name__")


def keras_3_holders(skip_packages):
  """Names of modules (outside `skip_packages`) holding tf.keras as Keras 3.

  Why private: a KerasLazyLoader records its choice only in `_tfll_*`.
  """
  holders = []
  for name, module in list(sys.modules.items()):
    if name.split(".")[0] in skip_packages or module is None:
      continue
    for value in list(getattr(module, "__dict__", {}).values()):
      if isinstance(value, types.ModuleType) and (
          vars(value).get("_tfll_keras_version") == "keras_3"
          or vars(value).get("__name__") == "keras._tf_keras.keras"):
        holders.append(name)
        break
  return holders


def reroute_keras_to_tf_keras(api_modules):
  """Points each API module's Keras 3 `keras` (and TF's import path) at
  tf_keras, as TensorFlow would have with TF_USE_LEGACY_KERAS=1 at import.

  Why private: TensorFlow records the choice in the API modules' `__dict__`
  (`keras`, set by its KerasLazyLoader) and `__path__` (where `import
  tensorflow.keras` looks); checked on TF 2.21.0.

  Args:
    api_modules: TensorFlow API modules (`tf`, `tf.compat.v1`, ...).
  """
  import keras as keras_3  # lazy: loaded already when this is called  # pylint: disable=g-import-not-at-top
  import tf_keras  # lazy: only for the reroute  # pylint: disable=g-import-not-at-top
  old_api = os.path.join(os.path.dirname(keras_3.__file__), "api", "")
  new_api = os.path.join(os.path.dirname(tf_keras.__file__), "api", "")
  for module in api_modules:
    wrapped = getattr(module, "_tfmw_wrapped_module", module)
    name = loaded_keras_name(module)
    if name is not None and not name.startswith("tf_keras"):
      versions = re.findall(r"compat\.v([12])", wrapped.__name__)
      vars(wrapped)["keras"] = importlib.import_module(
          f"tf_keras.api._v{versions[-1] if versions else 2}.keras")
  for name, module in list(sys.modules.items()):
    path = getattr(module, "__path__", None)
    if name.startswith("tensorflow") and isinstance(path, list):
      path[:] = [new_api + p[len(old_api):] if p.startswith(old_api) else p
                 for p in path]
  for name in [n for n in sys.modules if n.startswith("tensorflow.keras")]:
    if not getattr(sys.modules[name], "__name__", "").startswith("tf_keras"):
      del sys.modules[name]  # An `import tensorflow.keras` of Keras 3.
