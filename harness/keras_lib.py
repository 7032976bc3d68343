"""`model_to_estimator`: a compiled tf_keras model as a harness `Estimator`.

    inputs = tf.keras.Input((4,), name="x")
    hidden = tf.keras.layers.Dense(8, activation="relu")(inputs)
    y = tf.keras.layers.Dense(1, name="y")(hidden)
    c = tf.keras.layers.Dense(3, activation="softmax", name="c")(hidden)
    model = tf.keras.Model(inputs, [y, c])
    model.compile("sgd", metrics={"c": ["accuracy"]},
                  loss={"y": "mse", "c": "sparse_categorical_crossentropy"})
    est = keras_lib.model_to_estimator(keras_model=model, model_dir="/tmp/k")
    est.train(input_fn, steps=100)  # yields ({"x": ..}, {"y": .., "c": ..})

tf_keras's `tf.keras.estimator.model_to_estimator` reaches this function
through the `tensorflow_estimator.python.estimator.keras_lib` alias that
`harness.compat` installs. As tf.estimator 2.15: every mode rebuilds the
model on the input_fn's feature tensors (tf_keras's
`clone_and_build_model`, so the layers see the features' real shapes) and
compiles the clone with the model's loss, optimizer and metrics (per-output
losses summed, one metric per output and name); the chief first writes the
model's Keras weights to `model_dir/keras/keras_model.ckpt` and the
Estimator warm-starts from it; `checkpoint_format="checkpoint"` (2.15's
default) writes object-based checkpoint keys, `"saver"` variable names.
Keras optimizers that are not `tf.keras.optimizers.legacy` ones are
replaced, on the model, by their legacy counterpart (as 2.15 did).
"""

import collections
import os

from absl import logging

from harness import _tf
from harness import _tf_private
from harness import errors
from harness import estimator as estimator_lib
from harness import export as export_lib
from harness import run_config as run_config_lib
from harness import spec as spec_lib
from harness._tf import tf

__all__ = ["FormattedKeyError", "model_to_estimator",
           "standardize_sample_weights"]

_DEFAULT_SERVING_KEY = "serving_default"
_KERAS_CKPT = "keras_model.ckpt"
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


def _clone_and_build_model(mode, keras_model, custom_objects, features=None,
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


def _create_keras_model_fn(keras_model, custom_objects=None,
                           save_object_ckpt=False, metric_names_map=None,
                           export_outputs=None):
  """Returns the model_fn that rebuilds `keras_model` in each mode."""
  optimizer_config = _optimizer_config(keras_model)
  modes = spec_lib.ModeKeys

  def model_fn(features, labels, mode):
    """model_fn for a Keras model (harness.keras_lib)."""
    model = _clone_and_build_model(mode, keras_model, custom_objects,
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


def _save_first_checkpoint(keras_model, custom_objects, config,
                           save_object_ckpt):
  """Writes the model's weights to model_dir/keras (once); returns the path."""
  keras_dir = os.path.join(config.model_dir, "keras")
  latest = tf.train.latest_checkpoint(keras_dir)
  if latest:
    return latest
  weights = keras_model.get_weights()
  tf.io.gfile.makedirs(keras_dir)
  path = os.path.join(keras_dir, _KERAS_CKPT)
  with tf.Graph().as_default():
    tf.compat.v1.random.set_random_seed(config.tf_random_seed)
    tf.compat.v1.train.create_global_step()
    model = _clone_and_build_model(spec_lib.ModeKeys.TRAIN, keras_model,
                                   custom_objects)
    _tf_private.keras_loss_and_train_op(model, training=True)
    with tf.compat.v1.Session(config=config.session_config) as session:
      if weights:
        model.set_weights(weights)
      tf.keras.__internal__.backend.initialize_variables(session)
      if save_object_ckpt:
        _tf_private.keras_track(model, tf.compat.v1.train.get_global_step(),
                                "estimator_global_step")
        model.save_weights(path)
      else:
        tf.compat.v1.train.Saver().save(session, path)
  logging.info("model_to_estimator | Keras weights written to %s", path)
  return path


def _check_model(keras_model, custom_objects, checkpoint_format):
  """2.15's checks; returns whether checkpoints are object-based."""
  _tf.check_keras_2_model(keras_model)
  graph_network = _tf_private.is_graph_network(keras_model) or isinstance(
      keras_model, tf.keras.models.Sequential)
  if not graph_network:
    try:
      with tf.keras.utils.CustomObjectScope(custom_objects or {}):
        type(keras_model).from_config(keras_model.get_config())
    except NotImplementedError as e:
      raise errors.ConfigError(
          "Subclassed `Model`s passed to `model_to_estimator` must implement "
          "`Model.get_config` and `Model.from_config`.") from e
  if checkpoint_format not in (None, "checkpoint", "saver"):
    raise errors.ConfigError(
        'Checkpoint format must be one of "checkpoint" or "saver". Got '
        f"{checkpoint_format}")
  if checkpoint_format != "saver" and not graph_network:
    raise errors.ConfigError(
        "Object-based checkpoints are currently not supported with "
        "subclassed models.")
  if not getattr(keras_model, "optimizer", None):
    raise errors.ConfigError(
        "The given keras model has not been compiled yet. Please compile the "
        "model with `model.compile()` before calling `model_to_estimator()`.")
  return checkpoint_format != "saver"


def model_to_estimator(keras_model=None, keras_model_path=None,
                       custom_objects=None, model_dir=None, config=None,
                       checkpoint_format=None, use_v2_estimator=False,
                       metric_names_map=None, export_outputs=None):
  """Returns a harness `Estimator` that trains a compiled tf_keras model.

  Args:
    keras_model: a compiled tf_keras model (Sequential, functional with any
      number of inputs and outputs, or subclassed with `get_config`).
      Exclusive with `keras_model_path`.
    keras_model_path: path of a saved compiled model (`model.save`).
    custom_objects: dict of custom layers/objects used when cloning.
    model_dir: the Estimator's model_dir (or config's; else a temp dir).
    config: a `harness.RunConfig`, or None.
    checkpoint_format: "checkpoint" or None (object-based keys, loadable by
      `keras_model.load_weights`), or "saver" (variable names).
    use_v2_estimator: accepted for tf_keras's call; both give a harness
      Estimator.
    metric_names_map: dict renaming the compiled metrics (every one).
    export_outputs: dict {output name: ExportOutput class} exported next to
      the default `serving_default` PredictOutput.

  Returns:
    A `harness.Estimator`. Its input_fn yields (features, labels): a tensor,
    list (model input order) or dict (by input name) each; features may be
    `{"features": ..., "sample_weights": ...}`.

  Raises:
    ValueError (ConfigError): a bad argument or argument combination, an
      uncompiled model, a subclassed model without `get_config`.
    FormattedKeyError (KeyError), when called: a features/labels dict lacks
      one of the model's input/output names.
  """
  del use_v2_estimator  # Both flavours are the same harness Estimator.
  if not (keras_model or keras_model_path):
    raise errors.ConfigError(
        "Either `keras_model` or `keras_model_path` needs to be provided.")
  if keras_model and keras_model_path:
    raise errors.ConfigError(
        "Please specity either `keras_model` or `keras_model_path`, but not "
        "both.")
  model_dir, config = run_config_lib.resolve_model_dir(model_dir, config)
  if keras_model:
    logging.info("Using the Keras model provided.")
  else:
    logging.info("Loading models from %s", keras_model_path)
    keras_model = tf.keras.models.load_model(keras_model_path)
  save_object_ckpt = _check_model(keras_model, custom_objects,
                                  checkpoint_format)
  if not tf.compat.v1.executing_eagerly_outside_functions():
    # In a graph (not eager) the model's weights are still uninitialised.
    tf.compat.v1.keras.backend.set_session(
        tf.compat.v1.Session(config=config.session_config))
  elif config.session_config.HasField("gpu_options"):
    logging.warning("The Keras backend session has already been set. The "
                    "_session_config passed to model_to_estimator will not "
                    "be used.")
  model_fn = _create_keras_model_fn(keras_model, custom_objects,
                                    save_object_ckpt, metric_names_map,
                                    export_outputs)
  warm_start_path = None
  if _tf_private.is_graph_network(keras_model) and config.is_chief:
    warm_start_path = _save_first_checkpoint(keras_model, custom_objects,
                                             config, save_object_ckpt)
  elif keras_model.built:
    logging.warning(
        "model_to_estimator | the subclassed model %s already has weights; "
        "the Estimator starts from freshly initialised ones (as "
        "tf.estimator did).", type(keras_model).__name__)
  return estimator_lib.Estimator(model_fn, config=config,
                                 warm_start_from=warm_start_path)


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
