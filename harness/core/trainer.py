"""The one training entry: `train(model, input_fn, ...)`.

`Estimator.train` (local training), `distribute/roles.train_in_cluster`
(a TF_CONFIG chief or worker) and `distribute/remote.train_remote` (one
thread per remote task) all call `train` with a `TrainModel`, the part of
an Estimator that training needs, and a `train_loop.TrainContext` that says
where and as whom to train. `train` checks steps / max_steps, skips a run
whose max_steps is already saved, adds the stop hook, builds the TRAIN graph
(`core/train_graph`) under the model's device function, warm-starts, and
runs `core/train_loop.run`; when the graph turns out to need one step per
session.run (`loop_spec.NeedsOneStepPerRun`) it builds again with
`steps_per_loop=1`.
"""

import dataclasses
from typing import Any, Callable, Optional

from absl import logging

from harness import errors
from harness import spec as spec_lib
from harness._tf import tf
from harness.core import loop_spec
from harness.core import train_graph
from harness.core import train_loop
from harness.state import checkpoints
from harness.telemetry import tf_notes

__all__ = ["TrainModel", "train", "check_positive"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainModel:
  """What training needs from an Estimator.

  Attributes:
    call_model_fn: `fn(features, labels, mode, config)` returning the
      `EstimatorSpec` (params already bound).
    params: dict handed to `input_fn`.
    model_dir: where checkpoints and summaries go.
    config: the `RunConfig`.
    device_fn: device function over the whole TRAIN graph (ps placement),
      or None.
    warm_start: `fn()` that warm-starts the variables of the default graph
      (called after the graph is built, before the session), or None.
  """
  call_model_fn: Callable[..., spec_lib.EstimatorSpec]
  params: dict
  model_dir: str
  config: Any  # A harness.run_config.RunConfig (core/ does not import it).
  device_fn: Optional[Callable[..., Any]] = None
  warm_start: Optional[Callable[[], None]] = None


def check_positive(value, name):
  """Raises ConfigError unless `value` (a step count) is None or > 0."""
  if value is not None and value <= 0:
    raise errors.ConfigError(
        f"Must specify {name} > 0, given: {value}. Fix: pass a positive "
        f"number of steps, or None.")


def train(model, input_fn, *, hooks, steps, max_steps, saving_listeners,
          context, strategy=None):
  """Trains `model` as `context` says; returns the last loss, or None.

  Args:
    model: a `TrainModel`.
    input_fn: the training input_fn.
    hooks: SessionRunHooks (None: none).
    steps: train this many more steps (None: see max_steps).
    max_steps: train up to this global step (None: until the input ends or
      a hook stops).
    saving_listeners: CheckpointSaverListeners of the chief's saver.
    context: a `train_loop.TrainContext`.
    strategy: the graph-mode distribution strategy, or None for
      `model.config.train_distribute`.

  Returns:
    The last training loss, or None (nothing ran, or max_steps was already
    reached).
  """
  if steps is not None and max_steps is not None:
    raise errors.ConfigError(
        "Can not provide both steps and max_steps. Fix: pass steps (train "
        "this many more steps) or max_steps (train up to this global step).")
  check_positive(steps, "steps")
  check_positive(max_steps, "max_steps")
  if max_steps is not None:
    start = checkpoints.latest_usable_step(model.model_dir)
    if start is not None and max_steps <= start:
      logging.info("Skipping training since max_steps has already saved "
                   "(global step %d >= max_steps %d).", start, max_steps)
      return None
  hooks = spec_lib.check_hooks(hooks, "hooks")
  if steps is not None or max_steps is not None:
    hooks.append(train_loop.StopAtStepHook(steps, max_steps))
  strategy = strategy or model.config.train_distribute
  config = model.config
  try:
    return _build_and_run(model, input_fn, hooks, saving_listeners,
                          max_steps, context, strategy, config)
  except loop_spec.NeedsOneStepPerRun as e:
    # Raised while building, before any session: nothing ran yet.
    log = (logging.info if config.steps_per_loop == "auto"
           else logging.warning)
    log("train | %s | steps_per_loop=%s -> 1 (one step per session.run): "
        "%s.", context.task_label, config.steps_per_loop, e.reason)
    return _build_and_run(model, input_fn, hooks, saving_listeners,
                          max_steps, context, strategy,
                          config.replace(steps_per_loop=1))


def _build_and_run(model, input_fn, hooks, saving_listeners, max_steps,
                   context, strategy, config):
  """Builds the TRAIN graph (as `config` says) and runs its loop."""
  # The device function (ps placement) covers the whole training graph,
  # global step included, as in tf.estimator.
  with tf.Graph().as_default() as graph, graph.device(model.device_fn):
    if strategy is not None:
      built = train_graph.build_distributed(
          strategy, model.call_model_fn, input_fn, model.params, config)
    else:
      built = train_graph.build_local(
          model.call_model_fn, input_fn, model.params, config)
    if built.auto_bound is not None:
      reason = loop_spec.hooks_needing_each_step(hooks, graph)
      if reason:
        raise loop_spec.NeedsOneStepPerRun(reason)
    if model.warm_start is not None:
      model.warm_start()
    tf_notes.note_sparse_updates(graph, context.task_label)
    loss = train_loop.run(
        built, model_dir=model.model_dir, config=config, hooks=hooks,
        saving_listeners=saving_listeners, context=context,
        max_steps=max_steps)
  # tf.estimator 2.15's closing line of every train() (TensorFlow's logger).
  tf.compat.v1.logging.info("Loss for final step: %s.", loss)
  return loss
