"""tf_keras internals: seeding, the v1 model clone, compiled losses.

Part of `harness._tf_private` (see its door for the rule).
"""

import importlib
import os
import random
import re
import sys
import types

from harness._tf import tf

# tf_keras's backend (loaded by `harness._tf`'s Keras 2 check already); None
# if a tf_keras release moves it.
try:
  from tf_keras.src import backend as _keras_backend
except ImportError:
  _keras_backend = None

__all__ = [
    "seed_keras_initializers",
    "loaded_keras_name",
    "is_graph_network",
    "keras_loss_and_train_op",
    "keras_compiled_metrics",
    "keras_weight_compiled_loss",
    "keras_restore_subclassed",
    "keras_track",
    "keras_3_holders",
    "reroute_keras_to_tf_keras",
]

def seed_keras_initializers(seed):
  """Makes tf_keras initializers (glorot & co.) follow `tf_random_seed`.

  tf.compat.v1.layers use tf_keras initializers, which in TF 2.21 draw their
  op seed from Python's unseeded `random` unless tf_keras's thread-local
  `_SEED_GENERATOR` holds a generator (what keras.utils.set_random_seed
  sets); so did 2.15's Keras, whose runs therefore differed from each other
  (docs/COMPAT.md). Seeding that generator per graph makes runs repeat under
  `tf_random_seed`, as TensorFlow's own initializers do, without touching
  the process-wide `random`/numpy state. Checked on tf_keras 2.21.0.
  """
  if _keras_backend is None:  # A tf_keras layout change: stay unseeded.
    return
  generator = getattr(_keras_backend, "_SEED_GENERATOR", None)
  if generator is not None:
    generator.generator = None if seed is None else random.Random(seed)


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


def is_graph_network(keras_model):
  """Whether a Keras 2 model is Sequential/functional (not subclassed).

  Why private: tf_keras exposes no public test; `_is_graph_network` is
  what its own cloning checks.
  """
  return getattr(keras_model, "_is_graph_network", False)


def keras_loss_and_train_op(model, training):
  """(total loss, train op or None) of a clone compiled in a v1 graph.

  Why private: tf_keras's v1 (graph) Model builds its train/test function
  in `_make_train_function`/`_make_test_function`; tf.estimator 2.15 did so.
  """
  if not training:
    model._make_test_function()  # pylint: disable=protected-access
    return model.total_loss, None
  model._make_train_function()  # pylint: disable=protected-access
  return model.total_loss, model.train_function.updates_op


def keras_compiled_metrics(model):
  """The compiled (not `add_metric`) metrics of a v1 clone, or None."""
  if not getattr(model, "_compile_metrics", None):
    return None
  return model._compile_metric_functions  # pylint: disable=protected-access


def keras_weight_compiled_loss(model, sample_weights):
  """Recomputes a v1 clone's total loss and metrics with sample weights."""
  # pylint: disable-next=protected-access
  model._compile_weights_loss_and_weighted_metrics(sample_weights)


def keras_restore_subclassed(model):
  """Undoes the in-place reset cloning did to a subclassed model, if any."""
  if getattr(model, "_original_attributes_cache", None) is not None:
    tf.keras.__internal__.models.in_place_subclassed_model_state_restoration(
        model)


def keras_track(model, trackable, name):
  """Adds `trackable` to the model's object graph (checkpoint keys)."""
  model._track_trackable(trackable, name)  # pylint: disable=protected-access


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
