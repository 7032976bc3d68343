"""`Estimator`: tf.estimator 2.15's facade over model_fn / input_fn.

Usage::

    est = harness.Estimator(model_fn, model_dir="/tmp/m", params={"lr": .1})
    est.train(train_input_fn, max_steps=1000)
    metrics = est.evaluate(eval_input_fn, steps=10)
    for pred in est.predict(predict_input_fn):
      ...
    est.export_saved_model("/tmp/m/export", serving_input_receiver_fn)

Each call builds a fresh graph for its mode, calls `model_fn` there and runs
it in a session that restores the latest checkpoint of `model_dir`. The
checkpoints are name-based (tf.compat.v1 Saver), so a model_dir written by
tf.estimator 2.15 resumes here and the other way round.
"""

import copy
import os

import numpy as np
from absl import logging

from harness import errors
from harness import run_config as run_config_lib
from harness import spec as spec_lib
from harness import warm_start as warm_start_lib
from harness._tf import tf
from harness.cluster import jobs
from harness.core import evaluation
from harness.core import input_pipeline
from harness.core import prediction
from harness.core import train_graph
from harness.core import trainer
from harness.distribute import train_dispatch
from harness.export import writer
from harness.run_config import using_config
from harness.state import checkpoint_reader
from harness.state import checkpoints
from harness.state import storage

__all__ = ["Estimator"]

ModeKeys = spec_lib.ModeKeys


class Estimator:
  """Trains, evaluates, predicts with and exports a `model_fn`.

  Args:
    model_fn: `fn(features, labels, mode, params, config)` returning an
      `EstimatorSpec`; it may declare any subset of those arguments
      (`features` is required).
    model_dir: where checkpoints and summaries go. None: `config.model_dir`,
      else a new temporary directory (logged).
    config: a `RunConfig`, or None for the defaults; logged (INFO, TF's
      logger) as 2.15 did: `Using config: {...}`.
    params: dict passed to `model_fn` and `input_fn` (deep-copied).
    warm_start_from: checkpoint path, model_dir, SavedModel dir or
      `WarmStartSettings` to initialise variables from before training.
  """

  def __init__(self, model_fn, model_dir=None, config=None, params=None,
               warm_start_from=None):
    model_dir, config = run_config_lib.resolve_model_dir(model_dir, config)
    using_config.log(config)
    self._config = config
    self._model_dir = model_dir
    self._session_config = config.session_config
    if model_fn is None:
      raise errors.ConfigError("model_fn must be provided to Estimator.")
    spec_lib.verify_model_fn_args(model_fn, params)
    if params is None and "params" in spec_lib.fn_args(model_fn):
      logging.warning(
          "Estimator's model_fn (%s) includes params argument, but params "
          "are not passed to Estimator.", model_fn)
    self._model_fn = model_fn
    self._params = copy.deepcopy(params or {})
    self._warm_start_settings = (
        warm_start_lib.get_default_warm_start_settings(warm_start_from)
        if warm_start_from is not None else None)
    self._device_fn = (config.device_fn or
                       train_graph.replica_device_setter(config))

  # --- properties ----------------------------------------------------------

  @property
  def model_dir(self):
    return self._model_dir

  @property
  def config(self):
    return copy.deepcopy(self._config) if _deepcopyable(self._config) else (
        self._config)

  @property
  def params(self):
    return copy.deepcopy(self._params)

  @property
  def model_fn(self):
    """The model_fn bound to this Estimator's params and config."""
    def public_model_fn(features, labels, mode, config):
      return self._call_model_fn(features, labels, mode, config)
    return public_model_fn

  # --- checkpoints ---------------------------------------------------------

  def latest_checkpoint(self):
    """The checkpoint of model_dir that restores, or None.

    As in tf.estimator, the one the `checkpoint` state file names. Unlike
    tf.estimator, if that one is missing, truncated or corrupt (a save
    killed half way), or the state file is missing or unreadable, the
    newest usable checkpoint on disk is returned, with a warning saying
    why (`harness.state.checkpoints.latest_usable_checkpoint`).
    """
    return checkpoints.latest_usable_checkpoint(self._model_dir)

  def get_variable_names(self):
    """Names of the variables in the latest checkpoint."""
    reader = checkpoint_reader.open_reader(self._require_checkpoint())
    return sorted(reader.get_variable_to_shape_map())

  def get_variable_value(self, name):
    """The value of variable `name` in the latest checkpoint (numpy)."""
    name = name[:-2] if name.endswith(":0") else name  # As TF's load_variable.
    return checkpoint_reader.open_reader(self._require_checkpoint()).get_tensor(
        name)

  def _require_checkpoint(self):
    path = self.latest_checkpoint()
    if not path:
      raise errors.NotTrainedError(
          f"Could not find trained model in model_dir: {self._model_dir}. "
          "Fix: call train() first, or point model_dir at a directory that "
          "holds checkpoints.")
    return path

  def eval_dir(self, name=None):
    """Where evaluate(name=...) writes its summaries."""
    return os.path.join(self._model_dir,
                        "eval" if not name else "eval_" + name)

  # --- model_fn ------------------------------------------------------------

  def _call_model_fn(self, features, labels, mode, config):
    # tf.estimator 2.15's two lines around each call (TensorFlow's logger).
    tf.compat.v1.logging.info("Calling model_fn.")
    spec = spec_lib.call_model_fn(self._model_fn, features, labels, mode,
                                  self.params, config)
    tf.compat.v1.logging.info("Done calling model_fn.")
    return spec

  def _create_and_assert_global_step(self, graph):
    """2.15's private step creation, which subclasses (AdaNet) call."""
    return train_graph.create_global_step(graph)

  # --- train ---------------------------------------------------------------

  def train(self, input_fn, hooks=None, steps=None, max_steps=None,
            saving_listeners=None):
    """Trains for `steps` more steps or up to global step `max_steps`.

    Stops earlier when input_fn's data ends (OutOfRange) or a hook asks.

    Returns:
      self, for chaining.
    """
    if self._config.task_type in (jobs.EVALUATOR, jobs.PS):
      # As 2.15: such a task has no training loop (a ps only serves).
      raise errors.ConfigError(
          "Train has been called wrong configuration. Please use "
          "tf.estimator.train_and_evaluate which calls proper API according "
          "to given configuration. Current configuration: task "
          f"{self._config.task_label}.\nFix: call train_and_evaluate in "
          "every task (a ps serves the trainers' variables until they "
          "finish), or call train() only in chief/worker tasks.")
    run_config_lib.check_supported_config(self._config)
    # The trainer holding model_dir's lease clears an old end-of-training
    # mark (harness.core.train_loop); a refused one deletes nothing.
    train_dispatch.train(
        self._train_model(), input_fn, hooks=hooks, steps=steps,
        max_steps=max_steps, saving_listeners=saving_listeners,
        session_config=self._session_config)
    return self

  def _train_model(self):
    """What `harness.core.trainer.train` needs of this Estimator."""
    return trainer.TrainModel(
        call_model_fn=self._call_model_fn, params=self._params,
        model_dir=self._model_dir, config=self._config,
        device_fn=self._device_fn,
        warm_start=_warm_starter(self._warm_start_settings))

  # --- evaluate ------------------------------------------------------------

  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    """Evaluates the model on `steps` batches (None: until input ends).

    Returns:
      dict of metric name -> value, with `loss` and `global_step`.
    """
    trainer.check_positive(steps, "steps")
    checkpoint_path = self._checkpoint_for("evaluate", checkpoint_path)
    # Before the evaluation: the event writer would drop its results silently.
    storage.check_writable(self.eval_dir(name))
    with tf.Graph().as_default():
      train_graph.set_graph_seed(self._config.tf_random_seed)
      global_step = train_graph.create_global_step(
          tf.compat.v1.get_default_graph())
      features, labels, input_hooks = input_pipeline.features_and_labels(
          input_fn, ModeKeys.EVAL, self._params, self._config)
      spec = self._call_model_fn(features, labels, ModeKeys.EVAL,
                                 self._config)
      warm_start_lib.unless_restoring(self._warm_start_settings, checkpoint_path)
      final_ops, eval_op = evaluation.eval_dict_from_spec(spec, global_step)
      all_hooks = (input_hooks + spec_lib.check_hooks(hooks, "hooks") +
                   list(spec.evaluation_hooks))
      results = evaluation.evaluate_once(
          checkpoint_path=checkpoint_path,
          master=self._config.evaluation_master,
          scaffold=evaluation.with_metric_init(spec.scaffold),
          eval_op=eval_op, final_ops=final_ops, hooks=all_hooks,
          session_config=self._session_config, steps=steps)
    step = results[evaluation.GLOBAL_STEP_KEY]
    output_dir = self.eval_dir(name)
    evaluation.write_dict_to_summary(output_dir, results, step)
    if checkpoint_path:
      evaluation.write_checkpoint_path_to_summary(
          output_dir, checkpoint_path, step)
    logging.info("eval | %s | step %d | %s", self._config.task_label, step,
                 " | ".join(f"{k}={_fmt(v)}" for k, v in sorted(
                     results.items()) if k != evaluation.GLOBAL_STEP_KEY))
    return results

  def _checkpoint_for(self, what, checkpoint_path):
    if checkpoint_path:
      return checkpoint_path
    path = self.latest_checkpoint()
    if path:
      return path
    logging.info("Could not find trained model in model_dir: %s, running "
                 "initialization to %s.", self._model_dir, what)
    return None

  # --- predict -------------------------------------------------------------

  def predict(self, input_fn, predict_keys=None, hooks=None,
              checkpoint_path=None, yield_single_examples=True):
    """Yields predictions for every element input_fn produces."""
    hooks = spec_lib.check_hooks(hooks, "hooks")  # First, as 2.15.
    checkpoint_path = self._checkpoint_for("predict", checkpoint_path)
    with tf.Graph().as_default():
      train_graph.set_graph_seed(self._config.tf_random_seed)
      train_graph.create_global_step(tf.compat.v1.get_default_graph())
      result = spec_lib.call_input_fn(input_fn, ModeKeys.PREDICT,
                                      self._params, self._config)
      features, _, input_hooks = input_pipeline.parse_input_fn_result(
          result, self._config.input_pipeline, ModeKeys.PREDICT)
      prediction.warn_if_endless(result, features)
      spec = self._call_model_fn(features, None, ModeKeys.PREDICT,
                                 self._config)
      warm_start_lib.unless_restoring(self._warm_start_settings, checkpoint_path)
      predictions = prediction.select_keys(spec.predictions, predict_keys)
      all_hooks = input_hooks + hooks + list(spec.prediction_hooks)
      checkpoint_reader.check_fits(checkpoint_path, spec.scaffold)
      creator = tf.compat.v1.train.ChiefSessionCreator(
          checkpoint_filename_with_path=checkpoint_path,
          master=self._config.master, scaffold=spec.scaffold,
          config=self._session_config)
      yield from prediction.yield_predictions(
          creator, all_hooks, predictions, yield_single_examples)

  # --- export --------------------------------------------------------------

  def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                         assets_extra=None, as_text=False,
                         checkpoint_path=None,
                         experimental_mode=ModeKeys.PREDICT):
    """Writes a SavedModel for one mode; returns its directory (bytes)."""
    if not serving_input_receiver_fn:
      raise errors.ConfigError(
          "An input_receiver_fn must be defined. Fix: pass e.g. "
          "harness.export.build_raw_serving_input_receiver_fn(...).")
    return self._export_all_saved_models(
        export_dir_base, {experimental_mode: serving_input_receiver_fn},
        assets_extra=assets_extra, as_text=as_text,
        checkpoint_path=checkpoint_path)

  def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                        assets_extra=None, as_text=False,
                        checkpoint_path=None, strip_default_attrs=False):
    """Deprecated alias of `export_saved_model` (tf.estimator 1.x name)."""
    del strip_default_attrs  # Always stripped, as in tf.estimator 2.x.
    return self.export_saved_model(
        export_dir_base, serving_input_receiver_fn, assets_extra=assets_extra,
        as_text=as_text, checkpoint_path=checkpoint_path)

  def experimental_export_all_saved_models(self, export_dir_base,
                                           input_receiver_fn_map,
                                           assets_extra=None, as_text=False,
                                           checkpoint_path=None):
    """Writes one SavedModel with a MetaGraph per mode in the map."""
    return self._export_all_saved_models(
        export_dir_base, input_receiver_fn_map, assets_extra=assets_extra,
        as_text=as_text, checkpoint_path=checkpoint_path)

  def _export_all_saved_models(self, export_dir_base, input_receiver_fn_map,
                               assets_extra, as_text, checkpoint_path):
    if not checkpoint_path:
      checkpoint_path = self.latest_checkpoint()
    if not checkpoint_path and self._warm_start_settings is not None:
      given = self._warm_start_settings.ckpt_to_initialize_from
      prefix, is_directory = checkpoints.resolve_prefix(given)
      checkpoint_path = prefix if prefix or is_directory else given
    if not checkpoint_path:
      raise errors.CheckpointError(
          f"Couldn't find trained model at {self._model_dir}. Fix: train "
          "first, or pass checkpoint_path.")

    def build_spec(features, labels, mode):
      return self._call_model_fn(features, labels, mode, self._config)

    return writer.export_all_saved_models(
        export_dir_base, input_receiver_fn_map, build_spec, checkpoint_path,
        assets_extra=assets_extra, as_text=as_text,
        random_seed=self._config.tf_random_seed,
        session_config=self._session_config)


# --- helpers ---------------------------------------------------------------


def _deepcopyable(config):
  # A collective strategy's health-check thread holds locks that cannot be
  # deep-copied (TF 2.21: copy.deepcopy raises on its lock); hand out the
  # object itself then.
  return config.train_distribute is None and config.eval_distribute is None


def _warm_starter(settings):
  """`fn()` warm-starting the default graph per `settings` (None: None)."""
  if settings is None:
    return None

  def warm_start():
    logging.info("Warm-starting from %s", settings.ckpt_to_initialize_from)
    warm_start_lib.warm_start(settings)

  return warm_start


def _fmt(value):
  if isinstance(value, (float, np.floating)):
    return f"{float(value):.4g}"
  return str(value)
