"""The model_fn `model_to_estimator` builds: the Keras model rebuilt in each
mode.

As tf.estimator 2.15's keras_lib: every mode rebuilds the model on the
input_fn's feature tensors (tf_keras's `clone_and_build_model`, so the layers
see the features' real shapes) and compiles the clone with the model's loss,
optimizer and metrics; features and labels are a tensor, a list (the model's
input / output order) or a dict (by name), features possibly
`{"features": ..., "sample_weights": ...}`. `harness.keras_lib` checks the
model and makes the Estimator.
"""

import collections

from absl import logging

from harness import _tf_private
from harness import errors
from harness import export as export_lib
from harness import spec as spec_lib
from harness._tf import tf

__all__ = ["FormattedKeyError", "create_model_fn", "clone_and_build_model",
           "standardize_sample_weights"]

_DEFAULT_SERVING_KEY = "serving_default"
_MISSED_KEYS = ("The {what} passed into {obj_name} does not cover requested "
                "{order_name} keys defined in the keras model.\n\tExpected "
                "keys: {expected}\n\t{obj_name} keys: {got}\n\tMissed keys: "
                "{missed}")


class FormattedKeyError(KeyError, errors.HarnessError):
  """A KeyError whose message keeps its newlines (2.15's keras_lib type)."""

  def __init__(self, message):
    super().__init__(message)
    self.message = message

  def __str__(self):
    return self.message


def _convert_tensor(x):
  if tf.is_tensor(x):
    return x
  return tf.compat.v1.convert_to_tensor_or_sparse_tensor(x)


def _ordered(obj, key_order, obj_name, order_name):
  """`obj` (None, list, dict or tensor) as a list of tensors in key_order."""
  if obj is None:
    return None
  if isinstance(obj, (list, tuple)):
    return [_convert_tensor(x) for x in obj]
  if not isinstance(obj, dict):
    return [_convert_tensor(obj)]
  missed = set(key_order) - set(obj)
  if missed:
    raise FormattedKeyError(_MISSED_KEYS.format(
        what="dictionary", obj_name=obj_name, order_name=order_name,
        expected=set(key_order), got=set(obj), missed=missed))
  return [_convert_tensor(obj[key]) for key in key_order]


def _split_sample_weights(features):
  if isinstance(features, dict) and set(features) == {
      "features", "sample_weights"}:
    return features["features"], features["sample_weights"]
  return features, None


def _keras_io(keras_model, features, labels):
  """(input tensors, target tensors, sample weights) in the model's order."""
  features, sample_weights = _split_sample_weights(features)
  graph_network = _tf_private.is_graph_network(keras_model)
  input_names = output_names = None
  if isinstance(features, dict):
    input_names = (keras_model.input_names if graph_network else
                   [f"input_{i}" for i in range(1, len(features) + 1)])
  if isinstance(labels, dict):
    output_names = (keras_model.output_names if graph_network else
                    [f"output_{i}" for i in range(1, len(labels) + 1)])
  if isinstance(keras_model.inputs, dict):
    inputs = {k: _convert_tensor(features[k]) for k in keras_model.inputs}
  elif keras_model.inputs is None and isinstance(features, dict):
    inputs = {k: _convert_tensor(v) for k, v in features.items()}
  else:
    inputs = _ordered(features, input_names, "features", "inputs")
  targets = _ordered(labels, output_names, "labels", "outputs")
  return inputs, targets, sample_weights


def clone_and_build_model(mode, keras_model, custom_objects, features=None,
                           labels=None, optimizer_config=None):
  """The model rebuilt on `features`, compiled unless `mode` is PREDICT."""
  tf.keras.backend.set_learning_phase(mode == spec_lib.ModeKeys.TRAIN)
  inputs, targets, sample_weights = _keras_io(keras_model, features, labels)
  compile_clone = mode != spec_lib.ModeKeys.PREDICT
  global_step = None
  if compile_clone:
    global_step = tf.compat.v1.train.get_or_create_global_step()
    tf.keras.__internal__.backend.track_variable(global_step)
  clone = tf.keras.__internal__.models.clone_and_build_model(
      keras_model, inputs, targets, custom_objects,
      compile_clone=compile_clone,
      in_place_reset=not _tf_private.is_graph_network(keras_model),
      optimizer_iterations=global_step, optimizer_config=optimizer_config)
  if sample_weights is not None:
    _tf_private.keras_weight_compiled_loss(
        clone, standardize_sample_weights(sample_weights, clone.output_names))
  return clone


def _compiled_metrics(model, metric_names_map):
  """{name: Keras metric} of the clone's compiled metrics, or None."""
  metrics = _tf_private.keras_compiled_metrics(model)
  if metrics is None:
    return None
  if not metric_names_map:
    return {m.name: m for m in metrics}
  expected = {m.name for m in metrics}
  unknown = expected - set(metric_names_map)
  if unknown:
    raise errors.ConfigError(
        "Invalid `metric_names_map`. The following keras model metric names:"
        f'"{list(unknown)}" do not exist in the `metric_names_map` dictionary')
  extra = set(metric_names_map) - expected
  if extra:
    raise errors.ConfigError(
        "Invalid `metric_names_map`. There are unexpected keys in the "
        "`metric_names_map` dictionary. Expected keys: "
        f"{list(expected)}, Received: {list(extra)}")
  return {metric_names_map[m.name]: m for m in metrics}


def _export_outputs(model, predictions, export_outputs):
  final = {_DEFAULT_SERVING_KEY: export_lib.PredictOutput(predictions)}
  if export_outputs is None:
    return final
  missed = set(export_outputs) - set(model.output_names)
  if missed:
    raise FormattedKeyError(_MISSED_KEYS.format(
        what="list", obj_name=model.output_names, order_name=export_outputs,
        expected=set(export_outputs), got=set(model.output_names),
        missed=missed))
  for key, output_cls in export_outputs.items():
    final[key] = output_cls(predictions[key])
  return final


def _object_checkpoint_scaffold(model):
  """A Scaffold whose Saver writes the model's object-based keys."""
  _tf_private.keras_track(model, tf.compat.v1.train.get_global_step(),
                          "estimator_global_step")
  graph = tf.__internal__.tracking.ObjectGraphView(model)
  saver = tf.compat.v1.train.Saver(
      var_list=graph.frozen_saveable_objects(), sharded=True)
  return tf.compat.v1.train.Scaffold(saver=saver)


def _optimizer_config(keras_model):
  """The optimizer's config, read now (model_fn runs in another graph)."""
  optimizer = keras_model.optimizer
  if isinstance(optimizer, tf.keras.optimizers.experimental.Optimizer):
    logging.warning(
        "model_to_estimator | %s is not a tf.keras.optimizers.legacy "
        "optimizer; using its legacy counterpart, as tf.estimator did.",
        type(optimizer).__name__)
    keras_model.optimizer = (
        tf.keras.__internal__.optimizers.convert_to_legacy_optimizer(
            optimizer))
  try:
    if isinstance(keras_model.optimizer, (list, tuple)):
      return [opt.get_config() for opt in keras_model.optimizer]
    return keras_model.optimizer.get_config()
  except (NotImplementedError, AttributeError):
    return None  # tf.compat.v1 and custom optimizers have no config.


def create_model_fn(keras_model, custom_objects=None,
                           save_object_ckpt=False, metric_names_map=None,
                           export_outputs=None):
  """Returns the model_fn that rebuilds `keras_model` in each mode."""
  optimizer_config = _optimizer_config(keras_model)
  modes = spec_lib.ModeKeys

  def model_fn(features, labels, mode):
    """model_fn for a Keras model (harness.keras_lib)."""
    model = clone_and_build_model(mode, keras_model, custom_objects,
                                   features, labels, optimizer_config)
    output_names = model.output_names
    if tf.distribute.has_strategy():  # Replicas' clones name them _1, _2...
      output_names = [_strip_clone_suffix(n) for n in output_names]
    predictions = dict(zip(output_names, model.outputs))
    loss = train_op = eval_metric_ops = None
    if mode != modes.PREDICT:
      loss, train_op = _tf_private.keras_loss_and_train_op(
          model, training=(mode == modes.TRAIN))
      eval_metric_ops = _compiled_metrics(model, metric_names_map)
    if not _tf_private.is_graph_network(model):
      # model_fn must leave the caller's subclassed model as it was.
      _tf_private.keras_restore_subclassed(keras_model)
    scaffold = _object_checkpoint_scaffold(model) if save_object_ckpt else None
    return spec_lib.EstimatorSpec(
        mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=eval_metric_ops, scaffold=scaffold,
        export_outputs=_export_outputs(model, predictions, export_outputs))

  return model_fn


def _strip_clone_suffix(name):
  head, sep, tail = name.rpartition("_")
  return head if sep and len(tail) == 1 and tail.isdigit() else name


def standardize_sample_weights(x_weight, output_names):
  """`x_weight` (None, one, list or dict) as a list: one entry per output."""
  if x_weight is None or (isinstance(x_weight, (list, tuple))
                          and not x_weight):
    return [None for _ in output_names]
  if len(output_names) == 1:
    if isinstance(x_weight, (list, tuple)) and len(x_weight) == 1:
      return x_weight
    if isinstance(x_weight, dict) and output_names[0] in x_weight:
      return [x_weight[output_names[0]]]
    return [x_weight]
  if isinstance(x_weight, (list, tuple)):
    if len(x_weight) != len(output_names):
      raise errors.ConfigError(
          f"Provided `sample_weights` was a list of {len(x_weight)} elements, "
          f"but the model has {len(output_names)} outputs. You should "
          "provide one `sample_weights`array per model output.")
    return x_weight
  if isinstance(x_weight, collections.abc.Mapping):
    unknown = set(x_weight) - set(output_names)
    if unknown:
      raise errors.ConfigError(
          f"Unknown entries in sample_weights dictionary: {list(unknown)}. "
          f"Only expected following keys: {output_names}")
    return [x_weight.get(name) for name in output_names]
  raise errors.ConfigTypeError(
      "The model has multiple outputs, so `sample_weights` should be either "
      "a list or a dict. Provided `sample_weights` type not understood: "
      f"{x_weight}")
