"""`model_to_estimator`: a compiled tf_keras model as a harness `Estimator`.

    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    est = keras_lib.model_to_estimator(keras_model=model, model_dir="/tmp/k")
    est.train(input_fn, steps=100)   # input_fn: (features, labels)

tf_keras's `tf.keras.estimator.model_to_estimator` reaches this function
through the `tensorflow_estimator.python.estimator.keras_lib` alias that
`harness.compat` installs. As tf.estimator 2.15, each mode clones the model
into that mode's graph and trains it with the compiled loss, optimizer and
metrics; training starts from the model's current weights.

Differences from 2.15, by design:
* Checkpoints are name-based (`tf.compat.v1.train.Saver`) whatever
  `checkpoint_format` says (`"checkpoint"` logs a warning); variables are
  named after the Keras layers (`dense/kernel`).
* Keras optimizers are rebuilt as their `tf.keras.optimizers.legacy`
  counterpart with the same hyperparameters (2.15 dropped them); their step
  counter is the global step.
* BatchNorm moving statistics update during training
  (`model.get_updates_for`), see FACTS.md item 8.
* Subclassed models, several outputs and `metric_names_map` for several
  outputs raise `NotSupportedError`.
"""

import inspect

from absl import logging

from harness import _tf_private
from harness import errors
from harness import estimator as estimator_lib
from harness import export as export_lib
from harness import spec as spec_lib
from harness._tf import tf

__all__ = ["model_to_estimator"]

_SAMPLE_WEIGHTS_KEY = "sample_weights"
_OPTIMIZER_KWARGS = frozenset(["clipnorm", "clipvalue", "global_clipnorm"])


def _check_arguments(keras_model, keras_model_path, checkpoint_format):
  if keras_model is None and not keras_model_path:
    raise errors.ConfigError(
        "Either `keras_model` or `keras_model_path` needs to be provided.")
  if keras_model is not None and keras_model_path:
    raise errors.ConfigError(
        "Please specity either `keras_model` or `keras_model_path`, but not "
        "both.")
  if checkpoint_format not in (None, "checkpoint", "saver"):
    raise errors.ConfigError(
        'Checkpoint format must be one of "checkpoint" or "saver". Got '
        f"{checkpoint_format!r}.")
  if checkpoint_format != "saver":
    logging.warning(
        "model_to_estimator | checkpoint_format=%r: harness writes "
        "name-based (Saver) checkpoints; tf.train.Checkpoint readers can "
        "still load them by name.", checkpoint_format)


def _check_model(keras_model):
  """Raises unless `keras_model` is a compiled single-output graph network."""
  if not getattr(keras_model, "optimizer", None):
    raise errors.ConfigError(
        "The given keras model has not been compiled yet. Please compile the "
        "model with `model.compile()` before calling `model_to_estimator()`.")
  if not _tf_private.is_graph_network(keras_model):
    raise errors.NotSupportedError(
        f"model_to_estimator got a subclassed Keras model "
        f"({type(keras_model).__name__}); harness clones Sequential and "
        "functional models only. Fix: build the model with "
        "tf.keras.Sequential or the functional API, or write a model_fn.")
  if len(keras_model.outputs) != 1:
    raise errors.NotSupportedError(
        f"model_to_estimator got a model with {len(keras_model.outputs)} "
        f"outputs ({keras_model.output_names}); harness supports one. Fix: "
        "write a model_fn that calls the model and sums its losses.")


def _compile_config(keras_model):
  config = _tf_private.keras_compile_config(keras_model)
  values = dict(config.config) if config is not None else {}
  values.setdefault("loss", keras_model.loss)
  values.setdefault("metrics", None)
  return values


def _legacy_optimizer_factory(optimizer):
  """Returns a function creating a graph-mode copy of a Keras optimizer."""
  legacy = getattr(tf.keras.optimizers, "legacy", None)
  if isinstance(optimizer, tf.keras.optimizers.legacy.Optimizer):
    cls, config = type(optimizer), optimizer.get_config()
  elif legacy is not None and hasattr(legacy, type(optimizer).__name__):
    cls = getattr(legacy, type(optimizer).__name__)
    accepted = set(inspect.signature(cls.__init__).parameters)
    config = {k: v for k, v in optimizer.get_config().items()
              if (k in accepted or k in _OPTIMIZER_KWARGS) and v is not None}
    if optimizer.get_config().get("weight_decay"):
      raise errors.NotSupportedError(
          f"model_to_estimator: {type(optimizer).__name__}(weight_decay=...) "
          "has no graph-mode (legacy) equivalent. Fix: add an L2 "
          "kernel_regularizer, or use tf.keras.optimizers.AdamW in Keras.")
  else:
    raise errors.NotSupportedError(
        f"model_to_estimator: optimizer {optimizer!r} has no graph-mode "
        "(tf.keras.optimizers.legacy) counterpart. Fix: compile with a "
        "built-in Keras optimizer, or write a model_fn.")

  def make():
    return cls.from_config(dict(config))

  return make


def _as_loss_fn(loss):
  """Returns `fn(labels, outputs, weights) -> scalar` for a compiled loss."""
  if isinstance(loss, (dict, list, tuple)):
    if len(loss) != 1:
      raise errors.NotSupportedError(
          f"model_to_estimator: compiled loss {loss!r} has several entries; "
          "harness supports one output. Fix: write a model_fn.")
    loss = next(iter(loss.values())) if isinstance(loss, dict) else loss[0]
  loss = tf.keras.losses.get(loss)
  if isinstance(loss, tf.keras.losses.Loss):
    return lambda labels, outputs, weights: loss(
        labels, outputs, sample_weight=weights)

  def reduce_mean(labels, outputs, weights):
    per_example = loss(labels, outputs)
    if weights is None:
      return tf.reduce_mean(per_example)
    weights = tf.cast(weights, per_example.dtype)
    weighted = per_example * tf.reshape(
        weights, tf.shape(per_example)[:1])
    return tf.reduce_sum(weighted) / tf.cast(tf.size(per_example),
                                             weighted.dtype)

  return reduce_mean


def _make_metric(spec, loss_name):
  """Returns a fresh Keras Metric object for one compiled metric entry."""
  if isinstance(spec, tf.keras.metrics.Metric):
    return type(spec).from_config(spec.get_config())
  if isinstance(spec, str) and spec in ("accuracy", "acc"):
    if "sparse_categorical" in str(loss_name):
      return tf.keras.metrics.SparseCategoricalAccuracy(name=spec)
    if "binary" in str(loss_name):
      return tf.keras.metrics.BinaryAccuracy(name=spec)
    return tf.keras.metrics.CategoricalAccuracy(name=spec)
  fn = tf.keras.metrics.get(spec)
  if isinstance(fn, tf.keras.metrics.Metric):
    return type(fn).from_config(fn.get_config())
  name = spec if isinstance(spec, str) else getattr(fn, "__name__", "metric")
  return tf.keras.metrics.MeanMetricWrapper(fn, name=name)


def _metric_specs(metrics):
  if metrics is None:
    return []
  if isinstance(metrics, dict):
    if len(metrics) != 1:
      raise errors.NotSupportedError(
          f"model_to_estimator: metrics for several outputs {metrics!r}. "
          "Fix: write a model_fn.")
    metrics = next(iter(metrics.values()))
  return list(metrics) if isinstance(metrics, (list, tuple)) else [metrics]


def _split_sample_weights(features):
  if isinstance(features, dict) and set(features) == {
      "features", _SAMPLE_WEIGHTS_KEY}:
    return features["features"], features[_SAMPLE_WEIGHTS_KEY]
  return features, None


def _model_inputs(model, features):
  """Orders a features dict by the model's input names, as 2.15 did."""
  if not isinstance(features, dict):
    return features
  missing = set(model.input_names) - set(features)
  if missing:
    raise errors.InputFnError(
        "The dictionary passed into features does not cover requested inputs "
        f"keys defined in the keras model.\n\tExpected keys: "
        f"{set(model.input_names)}\n\tfeatures keys: {set(features)}\n\t"
        f"Missed keys: {missing}")
  inputs = [features[name] for name in model.input_names]
  return inputs[0] if len(inputs) == 1 else inputs


def _single_label(labels, output_name):
  if isinstance(labels, dict):
    if output_name in labels:
      return labels[output_name]
    if len(labels) == 1:
      return next(iter(labels.values()))
    raise errors.InputFnError(
        f"labels dict keys {sorted(labels)} do not include the model output "
        f"{output_name!r}.")
  return labels


def _weights_init_fn(model, weights):
  """Returns a Scaffold init_fn that loads `weights` into `model`."""
  if weights is None:
    return None
  placeholders = [tf.compat.v1.placeholder(v.dtype.base_dtype, v.shape)
                  for v in model.weights]
  assign = tf.group(*[v.assign(p) for v, p in zip(model.weights,
                                                  placeholders)])

  def init_fn(scaffold, session):
    del scaffold  # Unused.
    session.run(assign, feed_dict=dict(zip(placeholders, weights)))

  return init_fn


def _create_model_fn(keras_model, custom_objects, metric_names_map,
                     export_outputs):
  """Returns the model_fn that clones and runs `keras_model` in each mode."""
  compiled = _compile_config(keras_model)
  loss_fn = _as_loss_fn(compiled["loss"])
  make_optimizer = _legacy_optimizer_factory(keras_model.optimizer)
  metric_specs = _metric_specs(compiled["metrics"])
  weights = keras_model.get_weights() if keras_model.built else None
  modes = spec_lib.ModeKeys

  def model_fn(features, labels, mode):
    """model_fn for a Keras model (harness.keras_lib)."""
    features, sample_weights = _split_sample_weights(features)
    with tf.keras.utils.custom_object_scope(custom_objects or {}):
      model = tf.keras.models.clone_model(keras_model)
    inputs = _model_inputs(model, features)
    outputs = model(inputs, training=(mode == modes.TRAIN))
    output_name = model.output_names[0]
    predictions = {output_name: outputs}
    final_exports = {"serving_default": export_lib.PredictOutput(predictions)}
    for key, output_cls in (export_outputs or {}).items():
      if key not in predictions:
        raise errors.ConfigError(
            f"export_outputs key {key!r} is not a model output "
            f"({model.output_names}).")
      final_exports[key] = output_cls(predictions[key])
    if mode == modes.PREDICT:
      return spec_lib.EstimatorSpec(mode, predictions=predictions,
                                    export_outputs=final_exports)
    labels = _single_label(labels, output_name)
    if labels.shape.rank is not None and outputs.shape.rank is not None and (
        labels.shape.rank == outputs.shape.rank - 1):
      labels = tf.expand_dims(labels, -1)  # As Keras's compiled loss does.
    loss = loss_fn(labels, outputs, sample_weights)
    if model.losses:
      loss = loss + tf.add_n(model.losses)
    train_op = None
    scaffold = None
    if mode == modes.TRAIN:
      optimizer = make_optimizer()
      optimizer.iterations = tf.compat.v1.train.get_global_step()
      variables = model.trainable_variables
      grads = optimizer.get_gradients(loss, variables)
      apply = optimizer.apply_gradients(zip(grads, variables))
      updates = model.get_updates_for(inputs) + model.get_updates_for(None)
      train_op = tf.group(apply, *updates)
      scaffold = tf.compat.v1.train.Scaffold(
          init_fn=_weights_init_fn(model, weights))
    eval_metric_ops = None
    if mode == modes.EVAL and metric_specs:
      eval_metric_ops = {}
      for spec in metric_specs:
        metric = _make_metric(spec, compiled["loss"])
        metric.update_state(labels, outputs, sample_weight=sample_weights)
        eval_metric_ops[metric.name] = metric
      eval_metric_ops = _renamed(eval_metric_ops, metric_names_map)
    return spec_lib.EstimatorSpec(
        mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=eval_metric_ops, export_outputs=final_exports,
        scaffold=scaffold)

  return model_fn


def _renamed(metrics, metric_names_map):
  if not metric_names_map:
    return metrics
  unknown = set(metrics) - set(metric_names_map)
  if unknown:
    raise errors.ConfigError(
        "Invalid `metric_names_map`. The following keras model metric names:"
        f'"{sorted(unknown)}" do not exist in the `metric_names_map` '
        "dictionary")
  extra = set(metric_names_map) - set(metrics)
  if extra:
    raise errors.ConfigError(
        "Invalid `metric_names_map`. There are unexpected keys in the "
        f"`metric_names_map` dictionary. Expected keys: {sorted(metrics)}, "
        f"Received: {sorted(extra)}")
  return {metric_names_map[k]: v for k, v in metrics.items()}


def model_to_estimator(keras_model=None, keras_model_path=None,
                       custom_objects=None, model_dir=None, config=None,
                       checkpoint_format="saver", metric_names_map=None,
                       export_outputs=None, use_v2_estimator=False):
  """Returns a harness `Estimator` that trains a compiled tf_keras model.

  Args:
    keras_model: a compiled Sequential or functional tf_keras model with one
      output. Exclusive with `keras_model_path`.
    keras_model_path: path of a saved compiled model (`model.save`).
    custom_objects: dict of custom layers/objects for cloning and loading.
    model_dir: the Estimator's model_dir (takes precedence over config's).
    config: a `harness.RunConfig`, or None.
    checkpoint_format: "saver", or "checkpoint"/None (tf.estimator 2.15's
      default); harness always writes name-based checkpoints.
    metric_names_map: dict renaming the compiled metrics' names.
    export_outputs: dict {output name: ExportOutput class} added next to the
      default `serving_default` PredictOutput.
    use_v2_estimator: accepted for tf_keras's call; both give a harness
      Estimator.

  Returns:
    A `harness.Estimator` whose input_fn yields `(features, labels)`;
    features may be `{"features": ..., "sample_weights": ...}`.

  Raises:
    ConfigError (ValueError): bad argument combination, model not compiled,
      bad `checkpoint_format` or `metric_names_map`.
    NotSupportedError: subclassed model, several outputs, an optimizer with
      no graph-mode equivalent.
  """
  del use_v2_estimator  # Both flavours are the same harness Estimator.
  _check_arguments(keras_model, keras_model_path, checkpoint_format)
  if keras_model is None:
    logging.info("model_to_estimator | loading %s", keras_model_path)
    keras_model = tf.keras.models.load_model(
        keras_model_path, custom_objects=custom_objects)
  _check_model(keras_model)
  model_fn = _create_model_fn(keras_model, custom_objects, metric_names_map,
                              export_outputs)
  return estimator_lib.Estimator(model_fn, model_dir=model_dir, config=config)
