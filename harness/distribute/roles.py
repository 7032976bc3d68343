"""What a TF_CONFIG task does inside `train_and_evaluate`'s roles.

`harness.training._TrainingExecutor` runs the roles, in tf.estimator 2.15's
order; this module holds what they share with `Estimator.train`:

* chief / worker: `prepare_task` starts this task's standard server
  in-process (once a process) and makes the strategy (if any) a multi-worker
  one for this task; `train_in_cluster` trains against the server.
  Collective workers all initialise (each holds a copy, kept equal by
  all-reduce); with parameter servers only the chief initialises and the
  others wait. Only the chief writes checkpoints and summaries, and when it
  stops, for whatever reason, it leaves a `training_stopped` marker in
  model_dir for the evaluator and the ps tasks.
* ps: `run_ps` serves variables until the chief's marker says training
  ended. On SIGTERM (or SIGINT) it keeps serving while its trainers stop
  and save (they watch for its `task_stopping` record and stop as if
  preempted), up to `_PS_EXIT_GRACE_SECS`, then exits as preempted.

The evaluator's loop is `harness.distribute.evaluator.run_continuous`.
"""

import collections
import contextlib
import signal
import threading
import time

from absl import logging

from harness import _tf_private
from harness import cluster as cluster_lib
from harness import errors
from harness import plan as plan_lib
from harness.core import train_loop
from harness.core import trainer
from harness.distribute import graph_strategy as graph_strategy_lib
from harness.distribute import strategies
from harness.distribute import task_servers
from harness.guard import preemption
from harness.guard import stop_signal
from harness.state import checkpoints
from harness.state import run_state

__all__ = ["PreparedTask", "prepare_task", "run_ps", "serving", "start_delay",
           "train_in_cluster"]

_PS_POLL_SECS = 1.0
# A ps leaves this long after training ended, or after its SIGTERM, at the
# latest, even if a trainer never says it stopped (it died).
_PS_EXIT_GRACE_SECS = 60.0
_PS_WATCH_SECS = 0.5  # How often a trainer looks for a ps that stops.
_PS_LOST = (", its newest checkpoint: the steps since lived on the lost ps "
            "only (a ps stopped by SIGTERM waits for this save)")
# (key, PreparedTask, server class) of the tasks this process prepared; the
# entries keep their servers alive for the life of the process.
_PREPARED = []


def serving():
  """Whether this process runs a TensorFlow server (it is a cluster task).

  Such a server's gRPC threads keep interpreter shutdown waiting for 10-20 s
  after the job ended (`harness.main` leaves with `os._exit` then).
  """
  return bool(_PREPARED)


def start_delay(config):
  """Seconds a worker waits before it trains (parameter-server setups only).

  tf.estimator 2.15 delayed worker i by 5 * (i + 1) s, up to 60 s, by
  default; harness's workers wait for the chief's initialisation anyway, so
  they wait only when `experimental_max_worker_delay_secs` is set (then
  2.15's rule, up to that). Chief and collective workers never wait.
  """
  kind = config.strategy_kind
  if config.is_chief or (kind is not None and kind.lockstep):
    return 0
  max_delay = config.experimental_max_worker_delay_secs
  if not max_delay:
    return 0  # Workers wait for the chief's init themselves; no need.
  return min(max_delay, (config.task_id + 1) * 5)


class PreparedTask(collections.namedtuple(
    "PreparedTask", ["target", "session_config", "strategy", "server"])):
  """A task's session target, session config, graph strategy and server.

  `server` is the `tf.distribute.Server` harness started, or None where the
  user's strategy already serves the task's port.
  """

  __slots__ = ()


def prepare_task(config):
  """Configures this task's strategy and starts its server, once a process.

  `_TrainingExecutor` calls it before a worker's delay (2.15 started the
  server first, so that peers find it), and `Estimator.train` in a cluster
  task finds the same task prepared: the strategy is configured once and
  one server serves the task's port for the life of the process.

  It trusts the plan's problems that `check_supported_config` raised
  before training, and raises its one-machine one for callers that skip it.

  Returns:
    A `PreparedTask`.

  Raises:
    NotSupportedError: a one-machine strategy in a cluster of several
      trainers.
    ClusterConfigError: the server cannot start (port taken, bad address).
  """
  # A ps only serves: the strategy is the trainers' business.
  strategy = (None if config.plan.role == plan_lib.Role.PS else
              config.train_distribute)
  jobs = _training_jobs(config)
  server_class = _tf_private.server_class()
  # The server class is part of the key: a program that stands a fake
  # server class in (as 2.15's tests do) gets a server of that class.
  key = (config.task_type, config.task_id, id(strategy), id(server_class),
         tuple(sorted((job, tuple(tasks)) for job, tasks in jobs.items())))
  for prepared_key, prepared, _ in _PREPARED:
    if prepared_key == key:
      return prepared
  prepared = _prepare(config, strategy, jobs, server_class)
  # The entry holds the strategy and the server class (in the server), so
  # that their ids are not reused while they are part of a key.
  _PREPARED.append((key, prepared, server_class))
  return prepared


def _training_jobs(config):
  """{job: [address, ...]} of the task's training cluster (RunConfig's
  `cluster_spec` holds no evaluator)."""
  return {job: list(tasks)
          for job, tasks in config.cluster_spec.as_dict().items() if tasks}


def _prepare(config, strategy, jobs, server_class):
  """`prepare_task`'s work: the rule, the strategy, the server."""
  preemption.fail_fast_rpcs()  # Before the first RPC: no hang on dead peers.
  kind = None if strategy is None else config.strategy_kind
  plan_lib.raise_problem(config.plan, plan_lib.Stage.TRAIN,
                         plan_lib.ONE_MACHINE)
  graph_strategy = graph_strategy_lib.v1_of(strategy, kind)
  session_config, num_cpus = None, 1
  if config.plan.role != plan_lib.Role.PS:
    session_config, num_cpus = strategies.configure_checked(
        graph_strategy, kind=kind, jobs=jobs, task_type=config.task_type,
        task_id=config.task_id, session_config=config.session_config)
  # The user's strategy, not its graph twin: a collective strategy built
  # eagerly under TF_CONFIG already serves this task's port.
  target, server = task_servers.serve_task(
      config, strategy, jobs=jobs, session_config=session_config,
      num_cpu_devices=num_cpus, server_class=server_class)
  return PreparedTask(target, session_config, graph_strategy, server)


def train_in_cluster(model, input_fn, *, hooks=None, steps=None,
                     max_steps=None, saving_listeners=None):
  """Trains `model` as this process's TF_CONFIG task (chief or worker).

  `Estimator.train` calls this for a cluster task with its
  `harness.core.trainer.TrainModel`: this module sets up the task (server,
  session target, strategy) and the markers around it, and trains through
  `trainer.train`, the entry local training uses too.

  Returns:
    The last training loss seen by this task, or None.
  """
  config = model.config
  strategy = config.train_distribute
  kind = config.strategy_kind
  if kind is not None and kind.in_graph and not config.is_chief:
    raise errors.ClusterConfigError(
        f"{type(strategy).__name__} is an in-graph, single-process strategy, "
        f"but this task is {config.task_label} of a multi-worker TF_CONFIG "
        "cluster. Fix: use tf.compat.v1.distribute.experimental."
        "MultiWorkerMirroredStrategy (collective) or ParameterServerStrategy "
        "for several workers, or run only the chief.")
  target, session_config, strategy, _ = prepare_task(config)
  context = train_loop.TrainContext(
      master=target, is_chief=config.is_chief,
      should_init=config.is_chief or (kind is not None and kind.lockstep),
      session_config=session_config, task_label=config.task_label)
  # The chief clears an earlier run's end mark once it holds the lease
  # (train_loop); a trainer refused it (or that lost it) writes nothing.
  reason = "failed"
  try:
    with _stop_with_ps(model.model_dir, config):
      loss = trainer.train(model, input_fn, hooks=list(hooks or []),
                           steps=steps, max_steps=max_steps,
                           saving_listeners=saving_listeners,
                           context=context, strategy=strategy)
    reason = "finished"
    return loss
  except KeyboardInterrupt:
    reason = "interrupted"
    raise
  except errors.TrainingPreemptedError:
    reason = preemption.PREEMPTED_REASON  # The evaluator waits for a resume.
    raise
  except errors.ModelDirLeaseError:
    reason = None  # model_dir is another trainer's: no mark of ours there.
    raise
  except BaseException as e:
    reason = f"failed: {type(e).__name__}: {e}"[:500]
    raise
  finally:
    if reason is not None:
      run_state.write_task_done(model.model_dir, config.task_label)
    if config.is_chief and reason is not None:
      step = checkpoints.latest_usable_step(model.model_dir)
      run_state.write_training_stopped(model.model_dir, reason, step)
      logging.info("train | %s | training %s at step %s%s", config.task_label,
                   reason.split(":")[0], step, _PS_LOST if "lost peer ps/" in (
                       reason) else "")


@contextlib.contextmanager
def _stop_with_ps(model_dir, config):
  """While the body trains: a ps that announces its stop (SIGTERM) stops
  this trainer after its current step, the chief saving, as a preemption
  would: the variables on that ps are saved before it goes."""
  cluster = _training_jobs(config)
  ps_labels = [cluster_lib.task_label(cluster_lib.PS, i)
               for i in range(len(cluster.get(cluster_lib.PS, ())))]
  if not ps_labels:
    yield
    return
  since, done = time.time(), threading.Event()

  def watch():
    seen = False
    while not done.wait(_PS_WATCH_SECS):
      stopping = run_state.tasks_stopping_since(model_dir, ps_labels, since)
      if stopping and not seen:
        seen = True
        logging.warning("preempt | %s | %s is stopping (SIGTERM): stopping "
                        "after the current step%s, as for a preemption",
                        config.task_label, ", ".join(sorted(stopping)),
                        " and saving a checkpoint" if config.is_chief else "")
      if seen:  # Again and again: a loop starting meanwhile clears it.
        stop_signal.notify_preemption()

  thread = threading.Thread(target=watch, name="harness-ps-stop-watch",
                            daemon=True)
  thread.start()
  try:
    yield
  finally:
    done.set()
    thread.join(timeout=5)


@contextlib.contextmanager
def _signals_recorded(received):
  """SIGTERM/SIGINT append their name to `received` instead of ending the
  process (main thread only; elsewhere nothing changes)."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  previous = {signum: signal.signal(
      signum, lambda signum, _: received.append(signal.Signals(signum).name))
              for signum in (signal.SIGTERM, signal.SIGINT)}
  try:
    yield
  finally:
    for signum, handler in previous.items():
      signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def run_ps(estimator, *, poll_secs=_PS_POLL_SECS,
           grace_secs=_PS_EXIT_GRACE_SECS, clock=time.time, sleep=time.sleep,
           received=None):
  """A parameter server: serves until every trainer has finished.

  It exits once the chief marked training as ended and every trainer left
  its loop, or `grace_secs` after the chief's mark if one never does (it
  died): a live worker that still needs the variables is never cut off. A
  preempted or failed chief is waited for (its restart restores its last
  checkpoint into this ps) up to HARNESS_RESTART_WAIT_SECS. On SIGTERM or
  SIGINT it records `task_stopping` (its trainers stop after their step,
  the chief saving) and serves until they all stopped, `grace_secs` at
  most; then raises `TrainingPreemptedError` (`received`: the signals' names).
  """
  config = estimator.config
  started = clock()
  prepare_task(config)  # Serves from its own threads from now on.
  cluster = _training_jobs(config)
  trainers = [cluster_lib.task_label(job, i)
              for job in cluster_lib.TRAINER_JOBS
              for i in range(len(cluster.get(job, ())))]
  logging.info("ps | %s | serving until %s finish (model_dir %s)",
               config.task_label, ", ".join(trainers), estimator.model_dir)
  received = [] if received is None else received
  marked_at = signalled_at = None
  # A binary's stop bound does not cut the serving its trainers' saves need.
  with _signals_recorded(received), stop_signal.STOP_SIGNAL.finishing(
      "serving its trainers until they stopped"):
    while True:
      # The end mark first: a stop signal that comes once training finished
      # (harness.launch stopping its ps) ends a finished run, exit 0.
      marker = _training_end(estimator.model_dir, config, started, clock)
      if marker is not None:
        marked_at = marked_at or clock()
        done = run_state.tasks_done_since(estimator.model_dir, trainers,
                                          started)
        if done == set(trainers) or clock() - marked_at > grace_secs:
          _leave(config.task_label, marker, sorted(set(trainers) - done))
          return None, []
      if received:
        signalled_at = signalled_at or _announce_stop(
            estimator.model_dir, config.task_label, received[0], clock,
            grace_secs)
        _exit_once_trainers_stopped(estimator.model_dir, config.task_label,
                                    trainers, received[0],
                                    clock() - signalled_at > grace_secs)
      sleep(poll_secs)


def _training_end(model_dir, config, started, clock):
  """The chief's end mark since `started`, unless it says to wait for the
  chief's restart (preempted or failed, within restart_wait_secs)."""
  marker = run_state.training_stopped_since(model_dir, started)
  if marker is not None and preemption.resumable_reason(
      marker.get("reason")) and (
          clock() - marker.get("written_at", 0) < config.restart_wait_secs):
    # Preempted or failed: keep the variables served; the restarted chief
    # restores its checkpoint into them.
    return None
  return marker


def _leave(task_label, marker, missing):
  """Logs why the ps exits; raises unless training finished."""
  logging.info("ps | %s | training ended (%s)%s; exiting", task_label,
               marker.get("reason"),
               f"; no word from {missing}" if missing else "")
  if marker.get("reason") != "finished":
    # Exit non-zero so that a supervisor (harness.launch, a k8s Job)
    # brings the ps back for the chief's next attempt.
    raise errors.PeerLostError(
        f"ps | {task_label} | the chief ended training without "
        f"finishing ({marker.get('reason')}); this ps exits so that "
        "it is restarted with the job.")


def _announce_stop(model_dir, task_label, name, clock, grace_secs):
  """Records this ps's stop for its trainers; returns when (clock())."""
  logging.warning("ps | %s | %s: serving until the trainers stopped and "
                  "saved (%g s at most), then exiting", task_label, name,
                  grace_secs)
  run_state.write_task_stopping(model_dir, task_label)
  return clock()


def _exit_once_trainers_stopped(model_dir, task_label, trainers, name,
                                grace_over):
  """Raises TrainingPreemptedError once no trainer trains (or the grace is
  over); returns otherwise."""
  missing = sorted(set(trainers) - run_state.tasks_settled(model_dir,
                                                           trainers))
  if missing and not grace_over:
    return
  logging.info("ps | %s | %s; exiting", task_label,
               f"no word from {missing} in the grace period" if missing
               else "every trainer stopped")
  error = errors.TrainingPreemptedError(
      f"ps | {task_label} | stopped by {name} once "
      + (f"the grace ran out ({', '.join(missing)} still training)" if missing
         else "its trainers had stopped (the chief saved its step)")
      + ". Fix: nothing is lost; restart the job (harness.launch "
      "--max_restarts or Kubernetes does) to resume from that checkpoint.")
  error.signal_name = name
  raise error
