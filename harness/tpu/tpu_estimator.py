"""`TPUEstimator` off-TPU: tf.estimator 2.15's `use_tpu=False` semantics.

Usage (BERT's run_classifier, unchanged)::

    run_config = tf.compat.v1.estimator.tpu.RunConfig(
        model_dir=FLAGS.output_dir,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(
            iterations_per_loop=FLAGS.iterations_per_loop))
    estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
        use_tpu=False, model_fn=model_fn, config=run_config,
        train_batch_size=32, eval_batch_size=8, predict_batch_size=8)

What it does, as 2.15 on CPU/GPU did:

* `input_fn` and `model_fn` must take `params`; they get
  `params["batch_size"]`: `train_batch_size`, `eval_batch_size` or
  `predict_batch_size` by mode (absent when that one is None, and in
  export); `model_fn` also gets `params["use_tpu"] = False`.
* A returned `TPUEstimatorSpec` becomes an `EstimatorSpec`
  (`tpu_spec.TPUEstimatorSpec.as_estimator_spec`); an `EstimatorSpec` is
  used as it is.
* Checkpoints hold model_fn's variables and `global_step` only, like 2.15's
  on CPU: either side restores the other's model_dir.

And one thing 2.15 did only on a TPU: `iterations_per_loop` training steps
run inside one `session.run` (harness's `steps_per_loop`, with checkpoint
and stop steps kept exact). Training falls back to one step per run, with
a log line saying why, when that cannot work: a `host_call` (it runs on
the host every step), or a model_fn that calls `init_from_checkpoint`
itself (its initialisers would live inside the loop; in `scaffold_fn` it
keeps the loop). `use_tpu=True` raises `NotSupportedError`: harness runs
no TPU programs.
"""

import contextlib
import enum

from absl import logging

from harness import _tf_private
from harness import errors
from harness import estimator as estimator_lib
from harness import spec as spec_lib
from harness._tf import tf
from harness.tpu import tpu_config
from harness.tpu import tpu_spec

__all__ = ["TPUEstimator", "ExportSavedModelApiVersion",
           "InitFromCheckpointInModelFn", "RESERVED_PARAMS_KEYS"]

_BATCH_SIZE_KEY = "batch_size"
_CTX_KEY = "context"
_USE_TPU_KEY = "use_tpu"
RESERVED_PARAMS_KEYS = [_BATCH_SIZE_KEY, _CTX_KEY]

ModeKeys = spec_lib.ModeKeys

_USE_TPU_WHY = (
    "TPUEstimator(use_tpu=True) needs a TPU system, and harness runs "
    "TPUEstimator programs on CPU/GPU only (no TPU was looked for, and none "
    "would be used: starting one here would hang waiting for a TPU master). "
    "Fix: pass use_tpu=False (BERT-style scripts: --use_tpu=false) to train "
    "on this machine's CPU/GPU with the same model_fn and input_fn, or run "
    "the job on a TPU host with tf.distribute.TPUStrategy (Keras/TF2) or "
    "tf.estimator 2.15.")


class ExportSavedModelApiVersion(enum.Enum):
  V1 = 1
  V2 = 2


def _in_function_graph():
  """True inside a function/loop body (steps_per_loop's while loop)."""
  return bool(getattr(tf.compat.v1.get_default_graph(), "building_function",
                      False))


def _initialiser_in_loop():
  """A variable initialiser built in the current (loop body) graph, or None.

  `tf.compat.v1.train.init_from_checkpoint` called in model_fn inside the
  loop body replaces variables' initialisers with restore ops of the body,
  which the session cannot run (in `scaffold_fn` it runs outside the loop).
  """
  body = tf.compat.v1.get_default_graph()
  for variable in tf.compat.v1.global_variables():
    for initializer in _tf_private.initializer_ops(variable):
      if initializer is not None and initializer.graph is body:
        logging.warning(
            "train | model_fn called tf.compat.v1.train.init_from_checkpoint "
            "(the initializer of %s is built inside the steps_per_loop "
            "loop): training runs one step per session.run. Fix: call it in "
            "TPUEstimatorSpec.scaffold_fn to keep iterations_per_loop.",
            variable.name)
        return initializer
  return None


class TPUEstimator(estimator_lib.Estimator):
  """tf.estimator 2.15's `TPUEstimator`, for `use_tpu=False`.

  Args (2.15's; the TPU-only ones are accepted and ignored off-TPU, as
  2.15 ignored them):
    model_fn: `fn(features, labels, mode, params[, config])` returning a
      `TPUEstimatorSpec` or `EstimatorSpec`; must take `params`.
    model_dir, params, warm_start_from: as `Estimator`'s.
    config: a `tf.compat.v1.estimator.tpu.RunConfig` (required).
    use_tpu: must be False here (True raises NotSupportedError).
    train_batch_size, eval_batch_size, predict_batch_size: global batch
      sizes given as `params["batch_size"]` by mode (unchecked, as 2.15
      checked them only with use_tpu=True).
    batch_axis, eval_on_tpu, export_to_tpu, export_to_cpu,
      export_saved_model_api_version: TPU settings, unused off-TPU.
    embedding_config_spec: TPU embeddings; must be None here.
  """

  def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
               use_tpu=True, train_batch_size=None, eval_batch_size=None,
               predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
               export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
               embedding_config_spec=None,
               export_saved_model_api_version=ExportSavedModelApiVersion.V1):
    if config is None or not isinstance(config, tpu_config.RunConfig):
      raise errors.ConfigError(
          "`config` must be provided with type `tpu_config.RunConfig`. Fix: "
          "pass config=tf.compat.v1.estimator.tpu.RunConfig(...), given: "
          f"{config!r:.200}.")
    if params is not None and any(k in params for k in RESERVED_PARAMS_KEYS):
      raise errors.ConfigError(
          f"{RESERVED_PARAMS_KEYS} are reserved keys but existed in params "
          f"{params}. Fix: drop them from params: TPUEstimator sets "
          "params['batch_size'] from train/eval/predict_batch_size.")
    if use_tpu:
      raise errors.NotSupportedError(_USE_TPU_WHY)
    if embedding_config_spec is not None:
      raise errors.NotSupportedError(
          "TPUEstimator(embedding_config_spec=...) configures TPU embedding "
          "tables, which exist only on a TPU. Fix: pass "
          "embedding_config_spec=None and use tf.compat.v1.feature_column "
          "embeddings (or tf.nn.embedding_lookup) in model_fn off-TPU.")
    if export_saved_model_api_version not in (
        ExportSavedModelApiVersion.V1, ExportSavedModelApiVersion.V2, 1, 2):
      raise errors.ConfigError(
          "export_saved_model_api_version should be 1 or 2; got "
          f"{export_saved_model_api_version!r}.")
    # As 2.15: the batch sizes are checked only with use_tpu=True (refused
    # above); off TPU each reaches input_fn as given (AdaNet passes 0).
    if model_fn is not None and "params" not in spec_lib.fn_args(model_fn):
      raise errors.ModelFnError(
          f"model_fn ({model_fn}) does not include params argument, required "
          "by TPUEstimator to pass batch size as params['batch_size']. Fix: "
          "add `params` to model_fn's arguments.")
    steps_per_loop = tpu_config.steps_per_loop_for(config)
    if steps_per_loop != config.steps_per_loop:
      config = config.replace(steps_per_loop=steps_per_loop)
    logging.info(
        "TPUEstimator | use_tpu=False: running on CPU/GPU | "
        "iterations_per_loop=%s -> steps_per_loop=%s (training steps per "
        "session.run) | batch sizes train=%s eval=%s predict=%s",
        config.tpu_config.iterations_per_loop, config.steps_per_loop,
        train_batch_size, eval_batch_size, predict_batch_size)
    if export_to_tpu:
      logging.info("TPUEstimator | export_to_tpu=True has no effect with "
                   "use_tpu=False: exports hold the CPU/GPU MetaGraph only.")
    del batch_axis, eval_on_tpu, export_to_cpu  # TPU-only settings.
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     params=params or {}, warm_start_from=warm_start_from)
    self._use_tpu = False
    self._batch_sizes = {ModeKeys.TRAIN: train_batch_size,
                         ModeKeys.EVAL: eval_batch_size,
                         ModeKeys.PREDICT: predict_batch_size}
    self._exporting = False

  # --- input_fn: params["batch_size"] by mode --------------------------------

  def _with_batch_size(self, input_fn, mode):
    """`input_fn` called with `params["batch_size"]` for `mode`."""
    if not callable(input_fn):
      return input_fn  # Estimator reports it, with its fix.
    if "params" not in spec_lib.fn_args(input_fn):
      raise errors.InputFnError(
          f"input_fn ({input_fn}) does not include params argument, required "
          'by TPUEstimator to pass batch size as params["batch_size"]. Fix: '
          "add `params` to input_fn's arguments and batch with "
          'params["batch_size"].')
    batch_size = self._batch_sizes[mode]

    def input_fn_with_batch_size(params, config, input_context=None):
      params = dict(params)
      if batch_size is not None:
        params[_BATCH_SIZE_KEY] = batch_size
      return spec_lib.call_input_fn(input_fn, mode, params, config,
                                    input_context=input_context)

    return input_fn_with_batch_size

  def train(self, input_fn, hooks=None, steps=None, max_steps=None,
            saving_listeners=None):
    return super().train(self._with_batch_size(input_fn, ModeKeys.TRAIN),
                         hooks=hooks, steps=steps, max_steps=max_steps,
                         saving_listeners=saving_listeners)

  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    return super().evaluate(self._with_batch_size(input_fn, ModeKeys.EVAL),
                            steps=steps, hooks=hooks,
                            checkpoint_path=checkpoint_path, name=name)

  def predict(self, input_fn, predict_keys=None, hooks=None,
              checkpoint_path=None, yield_single_examples=True):
    return super().predict(
        self._with_batch_size(input_fn, ModeKeys.PREDICT),
        predict_keys=predict_keys, hooks=hooks,
        checkpoint_path=checkpoint_path,
        yield_single_examples=yield_single_examples)

  # --- model_fn: params, TPUEstimatorSpec -> EstimatorSpec -------------------

  def _export_all_saved_models(self, *args, **kwargs):
    with self._export_mode():
      return super()._export_all_saved_models(*args, **kwargs)

  @contextlib.contextmanager
  def _export_mode(self):
    self._exporting = True  # model_fn gets no params["batch_size"] then.
    try:
      yield
    finally:
      self._exporting = False

  def _call_model_fn(self, features, labels, mode, config):
    params = self.params
    batch_size = None if self._exporting else self._batch_sizes.get(mode)
    if batch_size is not None:
      params[_BATCH_SIZE_KEY] = batch_size
    params[_USE_TPU_KEY] = False
    kwargs = spec_lib.model_fn_kwargs(self._model_fn, labels, mode, params,
                                      config)
    kwargs["params"] = params  # TPUEstimator's model_fn always takes params.
    # Inside steps_per_loop's while loop (K > 1): model_fn's tensors live in
    # the loop body.
    in_loop = (mode == ModeKeys.TRAIN and config.steps_per_loop != 1 and
               _in_function_graph())
    result = self._model_fn(features=features, **kwargs)
    if isinstance(result, tpu_spec.TPUEstimatorSpec):
      # A host_call's hook fetches body tensors every step: loop_spec sees
      # that after the loop is built and training falls back to K = 1.
      result = result.to_estimator_spec(lift_host_fns=in_loop)
    elif not isinstance(result, spec_lib.EstimatorSpec):
      raise errors.ModelFnError(
          "model_fn should return a TPUEstimatorSpec or EstimatorSpec, it "
          f"returned {type(result).__name__}: {result!r:.200}.")
    if in_loop:
      initializer = _initialiser_in_loop()
      if initializer is not None:
        # Raising here would be wrapped by autograph under a strategy; a
        # hook holding the body op makes loop_spec fall back to K = 1.
        result = result._replace(training_hooks=tuple(
            result.training_hooks) + (InitFromCheckpointInModelFn(
                initializer),))
    return result


class InitFromCheckpointInModelFn(tf.compat.v1.train.SessionRunHook):
  """Marks a model_fn that called init_from_checkpoint inside the loop.

  It holds the initialiser op built in the loop body; harness's loop
  (loop_spec) then trains one step per session.run, naming this class in
  its log line. Running it does nothing.
  """

  def __init__(self, initializer):
    self.initializer = initializer
