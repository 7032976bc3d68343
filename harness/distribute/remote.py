"""Standalone-client training: this process drives a cluster of servers.

The servers run no model code (`python -m harness.server` on each machine);
this process builds the graphs and runs them there::

    config = harness.RunConfig(
        model_dir="/shared/model",  # the SAME path on the servers
        experimental_distribute=harness.DistributeConfig(
            train_distribute=strategy,  # collective or parameter_server
            remote_cluster={"worker": ["h1:2222", "h2:2222"]}))
    harness.Estimator(model_fn, config=config).train(input_fn, max_steps=1000)

`Estimator.train` calls `train_remote` for such a config. It first checks that
every server answers (`check_servers`, bounded by `connect_timeout_secs`),
then runs one thread per training task (chief, master and worker jobs), each
building its own graph with the strategy configured for that task and a
session on "grpc://<that task>". The chief task (chief/0, else master/0,
else worker/0) writes checkpoints and summaries; the user's hooks and saving
listeners run in its thread only. Progress lines of every task are logged by
this process, tagged "remote worker/1" and so on.

Checkpoint data is written by the server that holds the variables, the
`checkpoint` index file by this process: model_dir must name the same
storage for both (trivially so on one machine). A new client resumes from the
latest checkpoint on the same servers:

* One client at a time: before any graph is sent, the client claims every
  server (`harness.distribute.server_claim`) and renews the claim while it trains; a
  second live client gets `RemoteClusterBusyError` naming the first.
* A client killed inside a step can leave that step waiting in an
  all-reduce on a server. Aborting it (`Session.reset`, a collective
  timeout) would leave the server's collective runtime aborted for every
  later client ("collective ops already aborted"), so instead a
  `harness.server` whose client's claim expired restarts itself in place
  (same pid and port), releasing everything that client left. A new client
  on the same host expires a dead client's claim at once and waits for the
  restart (up to `remote_connect_timeout_secs`).
* Each client numbers its collective groups from a fresh random base, so its
  all-reduces never meet buffers a killed client left under the same keys.

When a task fails, the others are asked to stop after their current step,
and the first error is raised here once they did or `_STOP_SECS` passed (a
task waiting in an all-reduce for the failed one cannot be stopped without
an abort, see above: it is left to end with this process).
"""

import copy
import random
import threading
import time

from absl import logging

from harness import _tf_private
from harness import errors
from harness import run_config as run_config_lib
from harness._tf import tf
from harness.core import train_loop
from harness.distribute import graph_strategy as graph_strategy_lib
from harness.distribute import remote_stop
from harness.distribute import remote_tasks
from harness.distribute import server_claim
from harness.distribute import strategies
from harness.distribute import task_devices
from harness.distribute.remote_servers import check_servers
from harness.distribute.remote_servers import chief_task
from harness.distribute.remote_servers import trainer_tasks
from harness.guard import stop_signal
from harness.state import checkpoints

__all__ = ["interrupted_error", "train_remote"]

_STOP_SECS = 30.0  # How long stopping the other tasks after an error takes.
_WAIT_LOG_SECS = 60.0
_CLOSE_LOG_SECS = 5.0  # Say what the client waits for after this long.
_MAX_KEY_BASE = 2**21  # Group keys are int32 on the servers: base * 1000.


def _task_strategy(graph_strategy, kind, cluster, job, index, session_config,
                   key_base):
  """A copy of the strategy configured for one task, and its session config.

  `kind` is the run's `RunConfig.strategy_kind` (the graph strategy is the
  same kind).
  """
  try:
    with tf.Graph().as_default():  # Eager copies would need local devices.
      strategy = copy.deepcopy(graph_strategy)
  except TypeError as e:
    raise errors.ConfigError(
        f"Cannot copy train_distribute {type(graph_strategy).__name__} for "
        f"each remote task: {e}. A strategy built while TF_CONFIG named a "
        "cluster runs threads that cannot be copied. Fix: build it without "
        "TF_CONFIG in the client (e.g. harness.distribute.strategies.make_strategy).") \
        from e
  if kind.lockstep:  # All-reduce: keys apart from other clients'.
    _tf_private.set_collective_key_base(strategy, key_base)
  config = strategies.configure_for_task(
      strategy, cluster=cluster, task_type=job, task_id=index,
      session_config=session_config, kind=kind)
  return strategy, config


def _num_cpu_devices(graph_strategy, kind):
  if not kind.lockstep:
    return 1
  return task_devices.cpu_devices_per_worker(graph_strategy, kind=kind)


def train_remote(model, input_fn, *, hooks=None, steps=None,
                 max_steps=None, saving_listeners=None,
                 connect_timeout_secs=None):
  """Trains `model` on its `config.remote_cluster` from this process.

  Each remote task trains in its own thread through
  `harness.core.trainer.train`, the entry local training uses too.

  Args:
    model: a `harness.core.trainer.TrainModel` (`Estimator.train` makes it)
      whose config has a remote_cluster and a collective or
      parameter_server train_distribute.
    input_fn: the training input_fn (called once per task, in its thread).
    hooks: SessionRunHooks for the chief task only.
    steps: train this many more steps (None: see max_steps).
    max_steps: train up to this global step.
    saving_listeners: CheckpointSaverListeners (the chief task's saver).
    connect_timeout_secs: bound of each start-up check of the servers,
      seconds; None: the config's `remote_connect_timeout_secs`.

  Returns:
    The chief task's last loss, or None.

  Raises:
    RemoteClusterError: a server cannot be reached in time.
    ClusterConfigError: the servers do not fit the cluster or strategy.
    Whatever a task's training raised first (the others are stopped).
  """
  config = model.config
  cluster = dict(config.remote_cluster)
  graph_strategy = graph_strategy_lib.to_graph_strategy(config.train_distribute,
                                                kind=config.strategy_kind)
  chief = chief_task(cluster)
  logging.info("remote | client | checking the servers of %s", cluster)
  if connect_timeout_secs is None:
    connect_timeout_secs = config.remote_connect_timeout_secs
  check_servers(cluster, num_cpu_devices=_num_cpu_devices(
      graph_strategy, config.strategy_kind),
                timeout_secs=connect_timeout_secs)
  # One client at a time: claim every server (or fail naming the holder).
  claims = server_claim.claim_all(
      cluster, timeout_secs=config.remote_claim_timeout_secs,
      wait_secs=connect_timeout_secs)
  clean = False
  try:
    result = _train_claimed(model, input_fn, cluster,
                            graph_strategy, chief, claims, hooks=hooks,
                            steps=steps,
                            max_steps=max_steps,
                            saving_listeners=saving_listeners)
    clean = True
    return result
  finally:
    # A failed run may leave steps blocked on the servers: an expired
    # claim makes them restart at once.
    claims.release(clean=clean)


def _train_claimed(model, input_fn, cluster, graph_strategy, chief, claims, *,
                   hooks, steps, max_steps, saving_listeners):
  """train_remote's work once this client holds the servers."""
  config = model.config
  kind = config.strategy_kind  # to_graph_strategy keeps the kind.
  session_config = (config.session_config or
                    run_config_lib.get_default_session_config())
  # The same for every task of this client, new for each client.
  key_base = random.SystemRandom().randrange(1, _MAX_KEY_BASE) * 1000
  runs, stop = [], threading.Event()
  agreement = remote_stop.StopAgreement(stop, lockstep=kind.lockstep)
  everyone_ready = []  # Each task's `ready` event, filled below.
  for job, index in trainer_tasks(cluster):
    strategy, task_config = _task_strategy(graph_strategy, kind, cluster,
                                           job, index, session_config,
                                           key_base)
    is_chief = (job, index) == chief
    context = train_loop.TrainContext(
        master=f"grpc://{cluster[job][index]}", is_chief=is_chief,
        should_init=is_chief or kind.lockstep,
        session_config=task_config, task_label=f"remote {job}/{index}")
    runs.append(remote_tasks.TaskRun(
        model, input_fn, context, strategy, steps=steps,
        max_steps=max_steps,
        hooks=list(hooks or []) if is_chief else [],
        saving_listeners=list(saving_listeners or []) if is_chief else [],
        agreement=agreement, everyone_ready=everyone_ready,
        start_timeout_secs=config.session_creation_timeout_secs,
        claims=claims))
    everyone_ready.append(runs[-1].ready)
  logging.info("remote | client | training on %d task(s): %s (chief %s/%d)",
               len(runs), ", ".join(r.label for r in runs), *chief)
  try:
    return _run_all(runs, stop, config, claims, model.model_dir)[0]
  except errors.TrainingPreemptedError:  # _run_all's, after the tasks' stop.
    raise
  except KeyboardInterrupt as e:  # The tasks were asked to stop.
    raise interrupted_error(model.model_dir) from e
  except (stop_signal.Terminated, Exception) as e:  # pylint: disable=W0718
    if stop_signal.STOP_SIGNAL.terminated_in is None:
      raise
    # SIGTERM (harness.main's handler), maybe in TensorFlow's clothes.
    raise interrupted_error(model.model_dir, "SIGTERM") from e


def interrupted_error(model_dir, signal_name="SIGINT", still_stopping=()):
  """The error of a client stopped by SIGINT (Ctrl-C) or SIGTERM while
  training (harness.main exits 130 or 143); `still_stopping`: the tasks
  that had not ended their step (and the chief its save) when it gave up
  waiting, so the checkpoint named may not be the last."""
  step = checkpoints.latest_usable_step(model_dir)
  saved = ("no checkpoint yet" if step is None else
           f"the newest checkpoint is at step {step}")
  if still_stopping:
    saved += f" so far ({', '.join(still_stopping)} still stopping)"
  how = "interrupted" if signal_name == "SIGINT" else "preempted"
  error = errors.TrainingPreemptedError(
      f"client: training was {how} ({signal_name}); the tasks were asked to "
      f"stop after their current step and {saved}. Fix: run the same "
      "command again to resume from it.")
  error.signal_name = signal_name
  return error


def _run_all(runs, stop, config, claims, model_dir):
  """Runs every task's thread; stops all on the first error and raises it.

  On Ctrl-C or SIGTERM the tasks are asked to stop after their step and
  waited for up to `config.stop_timeout_secs`; then the error that names the
  newest checkpoint is raised (TrainingPreemptedError).
  """
  session_creation_timeout_secs = config.session_creation_timeout_secs
  for run in runs:
    run.thread.start()
  started = time.monotonic()
  next_log = started + _WAIT_LOG_SECS
  close_logged = False
  try:
    while any(run.running() for run in runs):
      if claims.lost:
        _stop(runs, stop, "claim lost", _STOP_SECS)
        raise errors.RemoteClusterBusyError(
            f"This client lost its claim of the servers ({claims.lost}); it "
            "stopped so that two clients do not interleave steps. Fix: keep "
            "one client per cluster; raise --remote_claim_timeout_secs if "
            "this client was only slow to renew it.")
      failed = _first_failed(runs)
      if failed is not None:
        _stop(runs, stop, f"{failed.label} failed", _STOP_SECS)
        break
      waiting = [r.label for r in runs if not r.ready.is_set()]
      now = time.monotonic()
      if waiting and now - started > session_creation_timeout_secs:
        _stop(runs, stop, "session creation timed out", _STOP_SECS)
        raise errors.PeerLostError(
            f"Sessions of {', '.join(waiting)} were not ready after "
            f"session_creation_timeout_secs={session_creation_timeout_secs}: "
            "a server stopped answering or runs another cluster. Fix: check "
            "the servers' logs, restart the lost ones with the same cluster.")
      if waiting and now > next_log:
        logging.info("remote | client | waiting for the sessions of %s",
                     ", ".join(waiting))
        next_log = now + _WAIT_LOG_SECS
      if (not close_logged and claims.closing_since is not None and
          now - claims.closing_since > _CLOSE_LOG_SECS):
        close_logged = True
        logging.info(
            "remote | client | waiting for %s to end (closing a training "
            "session: tf.data's autotuning can hold it up to 60 s)",
            ", ".join(r.label for r in runs if r.running()))
      runs[0].done.wait(0.2)
  except (KeyboardInterrupt, stop_signal.Terminated) as e:
    sigterm = stop_signal.STOP_SIGNAL.terminated_in is not None
    stuck = _stop(runs, stop, "preempted (SIGTERM)" if sigterm else
                  "interrupted", config.stop_timeout_secs)
    raise interrupted_error(model_dir, "SIGTERM" if sigterm else "SIGINT",
                            stuck) from e
  failed = _first_failed(runs)
  if failed is not None:
    raise failed.error
  return [run.result for run in runs]


def _first_failed(runs):
  """The run that failed first (the others fail because it was stopped)."""
  failed = [r for r in runs if r.error is not None]
  return min(failed, key=lambda r: r.failed_at) if failed else None


def _stop(runs, stop, why, timeout_secs):
  """Asks every task to stop after its current step; waits `timeout_secs`;
  returns the labels of the tasks still running then.

  Nothing is aborted on the servers. A collective task waiting in an
  all-reduce for a failed peer never finishes its step: it is left behind
  and ends with this process (aborting collective ops would break the
  servers for later clients, see the module docstring).
  """
  stop.set()
  alive = [r.label for r in runs if r.running()]
  if not alive:
    return []
  logging.warning("remote | client | %s: stopping %s (waiting up to %g s)",
                  why, ", ".join(alive), timeout_secs)
  deadline = time.monotonic() + timeout_secs
  for run in runs:
    run.done.wait(max(0.0, deadline - time.monotonic()))
  stuck = [r.label for r in runs if r.running()]
  if stuck:
    logging.warning("remote | client | %s did not stop within %g s (in a "
                    "step, a save, or waiting for a peer); leaving them "
                    "behind", ", ".join(stuck), timeout_secs)
  return stuck
