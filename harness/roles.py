"""What each TF_CONFIG task does inside `train_and_evaluate`.

* chief / worker: start this task's standard server in-process, make the
  strategy (if any) a multi-worker one for this task, and train against the
  server. Collective workers all initialise (each holds a copy, kept equal by
  all-reduce); with parameter servers only the chief initialises and the
  others wait. Only the chief writes checkpoints and summaries, and when it
  stops, for whatever reason, it leaves a `training_stopped` marker in
  model_dir for the evaluator and the ps tasks.
* master (legacy): a chief that also evaluates after its checkpoints.
* ps: serve variables until the chief's marker says training ended.

The evaluator's loop is `harness.evaluator.run_continuous`.
"""

import copy
import time

from absl import logging

from harness import errors
from harness import evaluator as evaluator_lib
from harness import run_config as run_config_lib
from harness import run_state
from harness import train_loop
from harness._tf import tf

__all__ = ["run_chief", "run_master", "run_worker", "run_ps",
           "train_in_cluster"]

_MULTI_WORKER_KINDS = ("collective", "parameter_server")
_IN_GRAPH_KINDS = ("mirrored", "central_storage", "one_device", "default")
_PS_POLL_SECS = 2.0


def _label(config):
  return f"{config.task_type}/{config.task_id}"


def _training_cluster(config):
  return {job: list(addresses) for job, addresses in
          config.cluster_spec.as_dict().items() if job != "evaluator"}


def _start_delay(config, kind):
  """Seconds a non-chief waits before starting (ps setups only)."""
  if config.is_chief or kind == "collective":
    return 0
  max_delay = config.experimental_max_worker_delay_secs
  if not max_delay:
    return 0  # Workers wait for the chief's init themselves; no need.
  return min(max_delay, (config.task_id + 1) * 5)


def _prepare_task(config, strategy, kind):
  """Configures the strategy for this task and starts its server.

  Returns:
    (server, session_config, strategy)
  """
  cluster = _training_cluster(config)
  session_config = copy.deepcopy(
      config.session_config or run_config_lib.get_default_session_config())
  num_cpu = 1
  if kind in _MULTI_WORKER_KINDS:
    from harness import strategies  # pylint: disable=g-import-not-at-top
    strategy = strategies.to_graph_strategy(strategy)
    session_config = strategies.configure_for_task(
        strategy, cluster=cluster, task_type=config.task_type,
        task_id=config.task_id, session_config=session_config)
    num_cpu = strategies.cpu_devices_per_worker(strategy)
  server_config = copy.deepcopy(session_config)
  server_config.device_count["CPU"] = max(
      num_cpu, server_config.device_count.get("CPU", 1))
  address = cluster[config.task_type][config.task_id]
  try:
    server = tf.distribute.Server(
        tf.train.ClusterSpec(cluster), job_name=config.task_type,
        task_index=config.task_id, protocol=config.protocol or "grpc",
        config=server_config, start=True)
  except (tf.errors.OpError, ValueError) as e:
    raise errors.ClusterConfigError(
        f"Cannot start the server of {_label(config)} on {address!r}: {e}. "
        "Fix: free the port, or give this task another address in "
        "TF_CONFIG.") from e
  logging.info("server | %s | listening on %s", _label(config), address)
  return server, session_config, strategy


def train_in_cluster(estimator, input_fn, *, hooks=None, steps=None,
                     max_steps=None, saving_listeners=None):
  """Trains as this process's TF_CONFIG task (chief or worker).

  Returns:
    The last training loss seen by this task, or None.
  """
  config = estimator.config
  strategy = config.train_distribute
  kind = run_config_lib.strategy_kind(strategy)
  if kind in _IN_GRAPH_KINDS and not config.is_chief:
    raise errors.ClusterConfigError(
        f"{type(strategy).__name__} is an in-graph, single-process strategy, "
        f"but this task is {_label(config)} of a multi-worker TF_CONFIG "
        "cluster. Fix: use tf.compat.v1.distribute.experimental."
        "MultiWorkerMirroredStrategy (collective) or ParameterServerStrategy "
        "for several workers, or run only the chief.")
  delay = _start_delay(config, kind)
  if delay:
    logging.info("train | %s | waiting %d s before starting", _label(config),
                 delay)
    time.sleep(delay)
  server, session_config, strategy = _prepare_task(config, strategy, kind)
  context = train_loop.TrainContext(
      master=server.target, is_chief=config.is_chief,
      should_init=config.is_chief or kind == "collective",
      session_config=session_config, task_label=_label(config))
  if config.is_chief:
    run_state.clear_training_stopped(estimator.model_dir)
  reason = "failed"
  try:
    loss = estimator._train_with_context(  # pylint: disable=protected-access
        input_fn, list(hooks or []), steps, max_steps, saving_listeners,
        context, strategy=strategy)
    reason = "finished"
    return loss
  except KeyboardInterrupt:
    reason = "interrupted"
    raise
  except BaseException as e:
    reason = f"failed: {type(e).__name__}: {e}"[:500]
    raise
  finally:
    if config.is_chief:
      step = estimator._checkpoint_step()  # pylint: disable=protected-access
      run_state.write_training_stopped(estimator.model_dir, reason, step)
      logging.info("train | %s | training %s at step %s", _label(config),
                   reason.split(":")[0], step)


def run_chief(estimator, train_spec, eval_spec):
  """The chief: trains, saves checkpoints, marks the end of training."""
  del eval_spec  # The evaluator task evaluates.
  train_in_cluster(estimator, train_spec.input_fn, hooks=train_spec.hooks,
                   max_steps=train_spec.max_steps,
                   saving_listeners=train_spec.saving_listeners)
  return None, []


run_worker = run_chief  # Same code; RunConfig.is_chief tells them apart.


def run_master(estimator, train_spec, eval_spec):
  """Legacy `master` job: the chief, also evaluating after checkpoints."""
  evaluator = evaluator_lib.CheckpointEvaluator(
      estimator, eval_spec, train_spec.max_steps)
  listener = evaluator_lib.NewCheckpointListener(
      evaluator, eval_spec.throttle_secs)
  train_in_cluster(
      estimator, train_spec.input_fn, hooks=train_spec.hooks,
      max_steps=train_spec.max_steps,
      saving_listeners=list(train_spec.saving_listeners) + [listener])
  return listener.eval_result, listener.export_results


def run_ps(estimator, train_spec, eval_spec, *, poll_secs=_PS_POLL_SECS,
           clock=time.time, sleep=time.sleep):
  """A parameter server: serves until the chief marks training as ended."""
  del train_spec, eval_spec
  config = estimator.config
  started = clock()
  server, _, _ = _prepare_task(config, None, None)
  del server  # Serves from its own threads while this one waits.
  logging.info("ps | %s | serving; exits when the chief marks training as "
               "ended in %s", _label(config), estimator.model_dir)
  while True:
    marker = run_state.training_stopped_since(estimator.model_dir, started)
    if marker is not None:
      logging.info("ps | %s | training ended (%s); exiting", _label(config),
                   marker.get("reason"))
      return None, []
    sleep(poll_secs)
