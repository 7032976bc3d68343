"""Where `Estimator.train` trains: a remote cluster, a TF_CONFIG cluster, or
this process alone.

`Estimator.train` checks its arguments as tf.estimator 2.15 did, then hands
the model to `train`, which picks the way by the RunConfig:
- a `remote_cluster` (standalone client): `remote.train_remote` drives the
  servers from this process;
- a chief / worker / master task of TF_CONFIG (the plan's trainer role):
  `roles.train_in_cluster` joins the cluster;
- otherwise this process trains alone, with the RunConfig's strategy (if
  any) configured for one machine.
"""

import dataclasses

from harness import plan as plan_lib
from harness.core import train_loop
from harness.core import trainer
from harness.distribute import graph_strategy
from harness.distribute import remote
from harness.distribute import roles
from harness.distribute import strategies

__all__ = ["train"]


def train(model, input_fn, *, hooks, steps, max_steps, saving_listeners,
          session_config):
  """Trains `model` (a `trainer.TrainModel`) where its config says.

  Args:
    model: what `harness.core.trainer.train` needs of the Estimator; its
      `config` (a RunConfig) picks the way.
    input_fn, hooks, steps, max_steps, saving_listeners: `Estimator.train`'s.
    session_config: the Estimator's session config, for a local run.
  """
  config = model.config
  if config.remote_cluster is not None:
    # Standalone client: drive the remote cluster's servers from here.
    remote.train_remote(
        model, input_fn, hooks=hooks, steps=steps, max_steps=max_steps,
        saving_listeners=saving_listeners,
        connect_timeout_secs=config.remote_connect_timeout_secs)
    return
  if config.plan.role == plan_lib.Role.TRAINER:
    # A chief/worker of a TF_CONFIG cluster joins it (as 2.15's coordinator).
    roles.train_in_cluster(model, input_fn, hooks=hooks, steps=steps,
                           max_steps=max_steps,
                           saving_listeners=saving_listeners)
    return
  strategy = config.train_distribute
  context = train_loop.TrainContext(
      master=config.master, is_chief=config.is_chief,
      should_init=config.is_chief, session_config=session_config,
      task_label=config.task_label)
  if strategy is not None:
    kind = config.strategy_kind  # Classified once, by RunConfig.
    strategy = graph_strategy.to_graph_strategy(strategy, kind=kind)
    # E.g. device_count CPU=N for N CPU replicas of a MirroredStrategy.
    context = dataclasses.replace(
        context, session_config=strategies.configure_for_task(
            strategy, cluster=None, task_type=None, task_id=0,
            session_config=session_config, kind=kind))
  trainer.train(model, input_fn, hooks=hooks, steps=steps,
                max_steps=max_steps, saving_listeners=saving_listeners,
                context=context, strategy=strategy)
