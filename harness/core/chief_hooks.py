"""The chief's own hooks, as 2.15's MonitoredTrainingSession added them.

    hooks = (chief_hooks.saver_hooks(worker_hooks, model_dir=..., config=...,
                                     scaffold=..., saving_listeners=[])
             + spec.training_chief_hooks
             + chief_hooks.summary_hooks(model_dir, config, scaffold, 32))

`core/train_loop` puts them first on the chief, in this order, as 2.15's
`Estimator._train_with_estimator_spec` did through MonitoredTrainingSession.
"""

from harness import _tf_private
from harness import errors
from harness._tf import tf
from harness.core import step_loop
from harness.telemetry import step_rate

__all__ = ["saver_hooks", "summary_hooks"]


def saver_hooks(all_hooks, *, model_dir, config, scaffold, saving_listeners,
                first_listeners=()):
  """The chief's CheckpointSaverHook, unless `all_hooks` has one.

  `saving_listeners` go to the new hook, or are added to the given one;
  `first_listeners` (model_dir's check, then: a save is not cut by the stop
  bound) go before any other.
  """
  chief_hooks = []
  if config.save_checkpoints_secs or config.save_checkpoints_steps:
    first = list(first_listeners)
    if not any(isinstance(h, tf.compat.v1.train.CheckpointSaverHook)
               for h in all_hooks):
      chief_hooks.append(tf.compat.v1.train.CheckpointSaverHook(
          model_dir, save_secs=config.save_checkpoints_secs,
          save_steps=config.save_checkpoints_steps, scaffold=scaffold,
          save_graph_def=config.checkpoint_save_graph_def,
          listeners=first + saving_listeners))
    elif saving_listeners or first:
      saver_hook = next(h for h in all_hooks if isinstance(
          h, tf.compat.v1.train.CheckpointSaverHook))
      _tf_private.add_saving_listeners(saver_hook, saving_listeners,
                                       first=first)
  elif saving_listeners:
    raise errors.ConfigError(
        "There should be a CheckpointSaverHook to use saving_listeners. "
        "Please set one of the RunConfig.save_checkpoints_steps or "
        "RunConfig.save_checkpoints_secs.")
  return chief_hooks


def summary_hooks(model_dir, config, scaffold, examples_per_step):
  """The summary and steps/s hooks MonitoredTrainingSession adds on chiefs,
  plus examples/s."""
  hooks = []
  if config.log_step_count_steps and config.log_step_count_steps > 0:
    hooks.append(step_rate.StepRateHook(
        output_dir=model_dir, every_n_steps=config.log_step_count_steps,
        examples_per_step=examples_per_step))
  if config.save_summary_steps and config.save_summary_steps > 0:
    hooks.append(step_loop.SummarySaverHook(
        scaffold=scaffold, save_steps=config.save_summary_steps,
        output_dir=model_dir))
  return hooks
