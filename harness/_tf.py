"""Imports TensorFlow the way harness needs it: Keras 2 and no noise.

Every harness module that needs TensorFlow writes::

    from harness._tf import tf

so that the first import of TensorFlow in the process happens here, with

* ``TF_USE_LEGACY_KERAS=1`` in the environment, without which
  ``tf.compat.v1.layers`` (and tf.keras as Keras 2) do not exist on TF >= 2.16;
* TensorFlow's import-time C++ log block and deprecation spam hidden unless
  the user asks for them (``HARNESS_VERBOSITY=debug`` or ``--verbosity``).

If TensorFlow was imported before harness without the variable, the legacy
layers are unavailable for the life of the process; `ensure_legacy_keras`
raises `LegacyKerasError` saying so and how to fix it. If `tf.keras` was
already touched then, it is Keras 3 for good (models built with it cannot
join a TF1 graph); `check_keras_2` raises `LegacyKerasError` for that too,
when harness first needs TensorFlow.
"""

import logging
import os
import sys
import tempfile
import warnings

from absl import flags as absl_flags
from absl import logging as absl_logging

from harness import errors
from harness import tf_env
# Imports nothing of harness (the door is lazy): no circle back to here.
from harness._tf_private import keras_choice

__all__ = ["tf", "ensure_legacy_keras", "check_keras_2", "check_keras_2_model",
           "quiet_tensorflow"]

_LEGACY_KERAS_ENV = "TF_USE_LEGACY_KERAS"


def _import_tensorflow_quietly(environ):
  """Imports tensorflow with fd 2 sent to a file; replays it on failure."""
  if "tensorflow" in sys.modules or tf_env.verbose_requested(environ):
    import tensorflow  # lazy: the one quiet TensorFlow import  # pylint: disable=g-import-not-at-top
    return tensorflow
  tf_env.quiet_cpp_logs(environ)
  try:
    saved_fd = os.dup(2)
  except OSError:  # No usable fd 2 (some embedded interpreters).
    import tensorflow  # lazy: the one quiet TensorFlow import  # pylint: disable=g-import-not-at-top
    return tensorflow
  with tempfile.TemporaryFile() as sink:
    sys.stderr.flush()
    os.dup2(sink.fileno(), 2)
    try:
      import tensorflow  # lazy: the one quiet TensorFlow import  # pylint: disable=g-import-not-at-top
    except Exception:  # Not a signal's: its own line says it.
      os.dup2(saved_fd, 2)
      sink.seek(0)
      sys.stderr.write(sink.read().decode("utf-8", "replace"))
      raise
    finally:
      os.dup2(saved_fd, 2)
      os.close(saved_fd)
  return tensorflow


def quiet_tensorflow(verbose=False):
  """Silences TensorFlow's Python-side warnings and deprecation logging.

  Args:
    verbose: if True, restores TensorFlow's own INFO logging instead.
  """
  tf_logger = logging.getLogger("tensorflow")
  if verbose:
    tf_logger.setLevel(logging.INFO)
    return
  tf_logger.setLevel(logging.ERROR)
  # Deprecation notices of tf.compat.v1 layers & co. are attributed to the
  # caller's file, so a module filter misses them: match the text.
  warnings.filterwarnings("ignore", message=r".*is deprecated and will be "
                          r"removed")
  warnings.filterwarnings("ignore", message=r".*deprecated.*",
                          category=DeprecationWarning)
  for module in ("tensorflow", "tf_keras", "keras", "tensorflow_datasets"):
    warnings.filterwarnings("ignore", category=UserWarning, module=module)
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=module)
    warnings.filterwarnings("ignore", category=FutureWarning, module=module)


def ensure_legacy_keras(tf_module):
  """Raises `LegacyKerasError` unless `tf.compat.v1.layers` is usable."""
  try:
    tf_module.compat.v1.layers.Dense  # pylint: disable=pointless-statement
  except (AttributeError, ImportError) as e:
    raise errors.LegacyKerasError(
        "TensorFlow was imported before harness without "
        f"{_LEGACY_KERAS_ENV}=1 (it is {os.environ.get(_LEGACY_KERAS_ENV)!r}), "
        "so tf.compat.v1.layers and Keras 2 are unavailable in this process "
        f"({e}). Fix: import harness (or harness.compat) before tensorflow, "
        f"or export {_LEGACY_KERAS_ENV}=1 before starting Python, or run the "
        "script with `python -m harness.run script.py`.") from e


class _UnlessRootPrints(logging.Filter):
  """Drops a TensorFlow record that the root logger's handlers print too.

  TensorFlow gives its logger a handler of its own when the root logger has
  none at its first log call (so tf.estimator 2.15 scripts printed each
  line once). absl's first log call outside an absl app then adds a root
  handler (`logging.basicConfig()`), through which every TensorFlow line
  would print a second time. Set on TensorFlow's own handler, this filter
  lets that handler print only while nothing else would.
  """

  def filter(self, record):
    tf_logger = logging.getLogger("tensorflow")
    return not (tf_logger.propagate and logging.getLogger().handlers)


def _print_tensorflow_lines_once(tf_module):
  """Each TensorFlow log line once, whoever configures logging later."""
  for handler in tf_module.get_logger().handlers:
    if not any(isinstance(f, _UnlessRootPrints) for f in handler.filters):
      handler.addFilter(_UnlessRootPrints())


def check_keras_2(api_modules):
  """Raises `LegacyKerasError` if `keras` of any of `api_modules` is Keras 3.

  TensorFlow picks Keras 2 or 3 when `tf.keras` is first touched, so code
  that touched it before harness was imported has Keras 3 for good, even
  though `tf.compat.v1.layers` may still work.

  Args:
    api_modules: TensorFlow API modules (`tf`, `tf.compat.v1`, ...); their
      `keras` is read without being loaded.
  """
  api_modules = list(api_modules)
  for module in api_modules:
    name = keras_choice.loaded_keras_name(module)
    if name is not None and not name.startswith("tf_keras"):
      if _rerouted_after_ray(api_modules):
        return
      raise errors.LegacyKerasError(
          f"tf.keras was loaded as Keras 3 (module {name!r}) before harness "
          "was imported, so legacy tf.keras code in a model_fn would get "
          "Keras 3, which cannot build TF1 graphs (TF_USE_LEGACY_KERAS is "
          "read only when tf.keras is first touched). Fix: "
          + (_RAY_FIX if _RAY_TF_MODULE in sys.modules else "") +
          "import harness (or harness.compat) before touching tf.keras, or "
          "export TF_USE_LEGACY_KERAS=1 before starting Python, or run the "
          "script with `python -m harness.run script.py`.")


# Ray Train's TensorFlow module loads tf.keras (Keras 3 unless the variable
# is set) in every Ray worker before the training function runs.
_RAY_TF_MODULE = "ray.train.tensorflow"
_RAY_FIX = ("start Ray with `ray.init(runtime_env={\"env_vars\": "
            "{\"TF_USE_LEGACY_KERAS\": \"1\"}})`, or ")
# Packages whose own references to Keras 3 a reroute leaves harmless.
_RAY_SKIPPED = ("ray", "keras", "tensorflow", "tf_keras", "harness")


def _rerouted_after_ray(api_modules):
  """Whether tf.keras, loaded as Keras 3 by Ray alone, now is tf_keras.

  Ray Train imports `ray.train.tensorflow` (which touches tf.keras) in each
  worker before the user's function runs; when no other module holds that
  Keras 3 tf.keras, harness points tf.keras at tf_keras, as
  TF_USE_LEGACY_KERAS=1 at TensorFlow's import would have.
  """
  if _RAY_TF_MODULE not in sys.modules:
    return False
  holders = keras_choice.keras_3_holders(_RAY_SKIPPED)
  if holders:
    logging.getLogger("harness").warning(
        "tf.keras was loaded as Keras 3 by Ray Train and is held by %s: "
        "harness cannot point it at Keras 2.", ", ".join(holders[:5]))
    return False
  keras_choice.reroute_keras_to_tf_keras(api_modules)
  absl_logging.info(
      "harness: Ray Train (%s) had loaded tf.keras as Keras 3 before harness "
      "was imported; nothing else held it, so tf.keras is now Keras 2 "
      "(tf_keras), as with TF_USE_LEGACY_KERAS=1.", _RAY_TF_MODULE)
  return True


def check_keras_2_model(keras_model):
  """Raises `ConfigError` naming a Keras 3 model (`import keras`).

  tf.estimator 2.15's checks would call it subclassed: it is no tf_keras
  graph network.
  """
  kind = type(keras_model)
  if (not isinstance(keras_model, tf.keras.Model)
      and kind.__module__.split(".")[0] == "keras"):
    raise errors.ConfigError(
        f"model_to_estimator: keras_model is a Keras 3 model "
        f"({kind.__module__}.{kind.__name__}); like tf.estimator 2.15 it "
        "takes Keras 2 (tf_keras) models, which can join a TF1 graph. Fix: "
        "build the model with tf.keras after `import harness` (tf.keras is "
        "then tf_keras) or with `import tf_keras`, not `import keras`.")


def _show_progress_lines():
  """harness logs progress with absl at INFO; show it unless set otherwise."""
  flag = absl_flags.FLAGS["verbosity"] if "verbosity" in absl_flags.FLAGS else None
  if flag is None or not flag.present:
    absl_logging.set_verbosity(absl_logging.INFO)


def _bootstrap():
  environ = os.environ
  # Keras 2 is what tf.estimator code was written against. TensorFlow reads
  # the variable when tf.keras / tf.compat.v1.layers are first touched, so
  # setting it still helps when tensorflow itself was imported earlier;
  # ensure_legacy_keras below catches the case where Keras 3 already loaded.
  environ[_LEGACY_KERAS_ENV] = "1"
  imported_before = "tensorflow" in sys.modules
  tf_module = _import_tensorflow_quietly(environ)
  quiet_tensorflow(verbose=tf_env.verbose_requested(environ))
  _print_tensorflow_lines_once(tf_module)
  _show_progress_lines()
  ensure_legacy_keras(tf_module)
  return tf_module, imported_before


tf, _IMPORTED_BEFORE_HARNESS = _bootstrap()
if _IMPORTED_BEFORE_HARNESS:
  check_keras_2((tf, tf.compat.v1, tf.compat.v2))
