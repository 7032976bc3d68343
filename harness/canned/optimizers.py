"""Optimizers of the canned estimators: names, defaults, instances.

As tf.estimator 2.15 (`canned/optimizers.py`): the v2 classes
(`tf.estimator.DNNClassifier`, ...) train with Keras `OptimizerV2`
optimizers (`tf_keras.optimizers.legacy.*`, whose slots are saved as
`training/Adagrad/<variable>/accumulator`), the v1 classes
(`tf.compat.v1.estimator.*`) with `tf.compat.v1.train` optimizers (slots
`<variable>/Adagrad`)::

    opt = optimizers.get_optimizer_instance_v2("Adagrad")  # lr 0.001
    opt = optimizers.get_optimizer_instance("Ftrl", learning_rate=0.2)
"""

import inspect

import tf_keras

from harness._tf import tf

__all__ = [
    "OPTIMIZER_NAMES",
    "get_optimizer_instance",
    "get_optimizer_instance_v2",
]

# The string names 2.15 accepted for `optimizer=` (same names, v1 and v2).
OPTIMIZER_NAMES = ("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD")

_V1_CLASSES = {
    "Adagrad": tf.compat.v1.train.AdagradOptimizer,
    "Adam": tf.compat.v1.train.AdamOptimizer,
    "Ftrl": tf.compat.v1.train.FtrlOptimizer,
    "RMSProp": tf.compat.v1.train.RMSPropOptimizer,
    "SGD": tf.compat.v1.train.GradientDescentOptimizer,
}

_V2_CLASSES = {
    "Adagrad": tf_keras.optimizers.legacy.Adagrad,
    "Adam": tf_keras.optimizers.legacy.Adam,
    "Ftrl": tf_keras.optimizers.legacy.Ftrl,
    "RMSProp": tf_keras.optimizers.legacy.RMSprop,
    "SGD": tf_keras.optimizers.legacy.SGD,
}

# Used for a v2 string name whose class has no default learning rate
# (2.15's historical 0.05).
_FALLBACK_LEARNING_RATE = 0.05


def _unknown_name(opt):
  return ValueError(
      f"Unsupported optimizer name: {opt}. Supported names are: "
      f"{tuple(sorted(OPTIMIZER_NAMES))}. Fix: pass one of these names, an "
      "optimizer instance, or a callable that returns one.")


def get_optimizer_instance(opt, learning_rate=None):
  """Returns a `tf.compat.v1.train.Optimizer` (the v1 canned estimators').

  Args:
    opt: an optimizer name (see `OPTIMIZER_NAMES`), a
      `tf.compat.v1.train.Optimizer`, or a callable returning one.
    learning_rate: float; required (and only used) when `opt` is a name.

  Returns:
    A `tf.compat.v1.train.Optimizer`.

  Raises:
    ValueError: unknown name, a name without `learning_rate`, or an object
      that is not a v1 optimizer.
  """
  if isinstance(opt, str):
    if opt not in _V1_CLASSES:
      raise _unknown_name(opt)
    if not learning_rate:
      raise ValueError("learning_rate must be specified when opt is string.")
    return _V1_CLASSES[opt](learning_rate=learning_rate)
  if callable(opt) and not isinstance(opt, tf.compat.v1.train.Optimizer):
    opt = opt()
  if not isinstance(opt, tf.compat.v1.train.Optimizer):
    raise ValueError(
        f"The given object is not an Optimizer instance. Given: {opt!r}. "
        "The tf.compat.v1.estimator canned estimators train with "
        "tf.compat.v1.train optimizers. Fix: pass e.g. "
        "tf.compat.v1.train.AdagradOptimizer(0.05), or use the v2 class "
        "(tf.estimator.*) for a Keras optimizer.")
  return opt


def _has_default_learning_rate(cls):
  parameter = inspect.signature(cls.__init__).parameters.get("learning_rate")
  return parameter is not None and parameter.default is not (
      inspect.Parameter.empty)


def get_optimizer_instance_v2(opt, learning_rate=None):
  """Returns a Keras `OptimizerV2` (the v2 canned estimators').

  Args:
    opt: an optimizer name (see `OPTIMIZER_NAMES`), a
      `tf_keras.optimizers.legacy.Optimizer`, or a callable returning one.
    learning_rate: float used when `opt` is a name; None takes the Keras
      class's own default (Adagrad 0.001, Ftrl 0.001, ...).

  Returns:
    A `tf_keras.optimizers.legacy.Optimizer`.

  Raises:
    ValueError: unknown name, or an object that is not a legacy Keras
      optimizer (the new Keras optimizers cannot build a graph-mode train
      op).
  """
  if isinstance(opt, str):
    if opt not in _V2_CLASSES:
      raise _unknown_name(opt)
    cls = _V2_CLASSES[opt]
    if learning_rate:
      return cls(learning_rate=learning_rate)
    if _has_default_learning_rate(cls):
      return cls()
    return cls(learning_rate=_FALLBACK_LEARNING_RATE)
  if callable(opt) and not isinstance(opt, _optimizer_classes()):
    opt = opt()
  if isinstance(opt, tf_keras.optimizers.Optimizer) and not isinstance(
      opt, tf_keras.optimizers.legacy.Optimizer):
    raise ValueError(
        "Please set your optimizer as an instance of "
        "`tf.keras.optimizers.legacy.Optimizer`, e.g., "
        f"`tf.keras.optimizers.legacy.{type(opt).__name__}`. Received "
        f"optimizer type: {type(opt)}.")
  if not isinstance(opt, tf_keras.optimizers.legacy.Optimizer):
    v1_hint = (" The tf.compat.v1.estimator.* classes take tf.compat.v1.train "
               "optimizers; these (tf.estimator.*) take Keras ones." if
               isinstance(opt, tf.compat.v1.train.Optimizer) else "")
    raise ValueError(
        "The given object is not a tf.keras.optimizers.Optimizer instance. "
        f"Given: {opt!r}.{v1_hint} Fix: pass an optimizer name, a "
        "tf.keras.optimizers.legacy optimizer, or a callable returning one.")
  return opt


def _optimizer_classes():
  return (tf_keras.optimizers.Optimizer, tf_keras.optimizers.legacy.Optimizer)
