"""tf_keras internals: seeding, the v1 model clone, compiled losses.

Part of `harness._tf_private` (see its door for the rule).
"""

import random

from harness._tf import tf

# tf_keras's backend (loaded by `harness._tf`'s Keras 2 check already); None
# if a tf_keras release moves it.
try:
  from tf_keras.src import backend as _keras_backend
except ImportError:
  _keras_backend = None

__all__ = [
    "seed_keras_initializers",
    "is_graph_network",
    "keras_loss_and_train_op",
    "keras_compiled_metrics",
    "keras_weight_compiled_loss",
    "keras_restore_subclassed",
    "keras_track",
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
