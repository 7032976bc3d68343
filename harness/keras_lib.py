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
replaced, on the model, by their legacy counterpart (as 2.15 did). The
model_fn itself is `canned/keras_model_fn.py`; this module checks the model,
writes its first checkpoint and makes the Estimator.
"""

import os

from absl import logging

from harness import _tf
from harness import _tf_private
from harness import errors
from harness import estimator as estimator_lib
from harness import run_config as run_config_lib
from harness import spec as spec_lib
from harness._tf import tf
from harness.canned import keras_model_fn
from harness.canned.keras_model_fn import FormattedKeyError  # 2.15's path.
from harness.canned.keras_model_fn import standardize_sample_weights  # Too.

__all__ = ["FormattedKeyError", "model_to_estimator",
           "standardize_sample_weights"]

_KERAS_CKPT = "keras_model.ckpt"


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
    model = keras_model_fn.clone_and_build_model(
        spec_lib.ModeKeys.TRAIN, keras_model, custom_objects)
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
  model_fn = keras_model_fn.create_model_fn(
      keras_model, custom_objects, save_object_ckpt, metric_names_map,
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
