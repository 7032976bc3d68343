"""harness on a local Ray cluster, as a user writes it: Ray Train's
`TensorflowTrainer` runs a tf.estimator 2.15 program in 2 workers (Ray sets
their TF_CONFIG), a Ray actor runs the same program as the evaluator.

    python -m tests.programs.ray_job --model_dir=D --report=R.json
        [--max_steps=N] [--kill_worker] [--max_failures=1] [--loop=main]

The program (`train_loop`) is 2.15 code: `import harness.compat`, then
`tf.estimator.*` under MultiWorkerMirroredStrategy. No setting is passed
to Ray: harness makes Ray's Keras 3 tf.keras Keras 2 in each worker.
`--kill_worker` SIGKILLs worker 1's Ray actor once the first checkpoint
after step 0 exists; `FailureConfig(max_failures=1)` restarts the group.
Each process writes <model_dir>/ray-<pid>.json (its rank, TF_CONFIG task,
the checkpoint it found and the step its session started at); the report
has the kill, the fit's error and the evaluator's last metrics.
`--loop=main` runs `python -m harness.main` as each worker's (and the
evaluator's) command instead (`main_loop`); those write no records.
"""

import argparse
import glob
import json
import os
import re
import signal
import tempfile
import threading
import time

_CKPT_STEPS = 20
_STEP_SECS = 0.05
_KILL_WAIT_SECS = 300
_RAY_STARTS = 3


def train_loop(config):
  """The user's 2.15 program, run by every Ray worker and the evaluator."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import harness.compat  # pylint: disable=g-import-not-at-top,unused-import
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  model_dir = config["model_dir"]
  record = {"pid": os.getpid(), "rank": config.get("rank"),
            "task": json.loads(os.environ["TF_CONFIG"])["task"],
            "found_checkpoint": tf.train.latest_checkpoint(model_dir)}
  if record["rank"] is None:
    from ray import train  # pylint: disable=g-import-not-at-top
    record["rank"] = train.get_context().get_world_rank()
  path = os.path.join(model_dir, f"ray-{os.getpid()}.json")

  def write_record():  # Whole or not at all: the driver polls it.
    with open(path + ".tmp", "w") as f:
      json.dump(record, f)
    os.replace(path + ".tmp", path)

  class Record(tf.compat.v1.train.SessionRunHook):
    def after_create_session(self, session, coord):
      del coord
      record["start_step"] = int(session.run(
          tf.compat.v1.train.get_global_step()))
      write_record()

    def after_run(self, run_context, run_values):
      time.sleep(_STEP_SECS)  # Long enough a run to kill a worker in.

  def model_fn(features, labels, mode):
    pred = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

  def input_fn():
    x = np.random.RandomState(0).randn(64, 4).astype(np.float32)
    y = x @ np.array([[1.], [-2.], [0.5], [3.]], np.float32)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8)

  strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
  estimator = tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig(
      model_dir=model_dir, train_distribute=strategy,
      save_checkpoints_steps=_CKPT_STEPS, tf_random_seed=1))
  write_record()
  metrics, _ = tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(input_fn, max_steps=config[
          "max_steps"], hooks=[Record()]),
      tf.estimator.EvalSpec(input_fn, steps=2, start_delay_secs=0,
                            throttle_secs=1))
  return {k: float(v) for k, v in (metrics or {}).items()}


def main_loop(config):
  """`python -m harness.main` as the loop's command: Ray's TF_CONFIG (and
  TF_USE_LEGACY_KERAS) reach it through the environment; it dies with the
  Ray worker (PR_SET_PDEATHSIG), so a killed actor leaves no task behind."""
  import ctypes  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top

  def die_with_the_worker():
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PDEATHSIG

  argv = [sys.executable, "-m", "harness.main", "--model_fn=linear",
          "--input_fn=constant", "--strategy=collective",
          f"--max_steps={config['max_steps']}", "--save_checkpoints_steps=20",
          f"--model_dir={config['model_dir']}", "--eval_steps=2"]
  subprocess.run(argv, check=True, preexec_fn=die_with_the_worker,
                 timeout=_KILL_WAIT_SECS * 2)


def _checkpoint_steps(model_dir):
  return sorted(int(m.group(1)) for m in (
      re.search(r"model\.ckpt-(\d+)\.index$", p) for p in glob.glob(
          os.path.join(model_dir, "model.ckpt-*.index"))) if m)


def _records(model_dir):
  result = []
  for path in glob.glob(os.path.join(model_dir, "ray-*.json")):
    with open(path) as f:
      result.append(json.load(f))
  return result


def _is_ray_worker(pid):
  try:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
      return b"RayTrainWorker" in f.read()
  except OSError:  # Gone.
    return False


def _kill_worker_after_checkpoint(model_dir, report):
  """SIGKILLs worker 1's Ray actor once a checkpoint after step 0 exists."""
  deadline = time.monotonic() + _KILL_WAIT_SECS
  while time.monotonic() < deadline:
    # Worker 1 of a group that is training (its session started) and has
    # saved a checkpoint since: a live Ray actor, by its process title.
    for record in _records(model_dir):
      if (record["rank"] != 1 or "start_step" not in record
          or not _is_ray_worker(record["pid"])):
        continue
      steps = _checkpoint_steps(model_dir)
      if steps and max(steps) > max(record["start_step"], 0):
        report["killed_pid"] = record["pid"]
        report["newest_checkpoint_at_kill"] = max(steps)
        os.kill(record["pid"], signal.SIGKILL)
        return
    time.sleep(0.05)
  report["kill_error"] = f"no checkpoint after step 0 in {_KILL_WAIT_SECS} s"


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--report", required=True)
  parser.add_argument("--max_steps", type=int, default=120)
  parser.add_argument("--kill_worker", action="store_true")
  parser.add_argument("--max_failures", type=int, default=1)
  parser.add_argument("--loop", choices=("program", "main"),
                      default="program")
  args = parser.parse_args()
  import ray  # pylint: disable=g-import-not-at-top
  from ray import train  # pylint: disable=g-import-not-at-top
  from ray.train.tensorflow import TensorflowTrainer  # pylint: disable=g-import-not-at-top

  for attempt in range(_RAY_STARTS):
    try:
      ray.init(num_cpus=3, include_dashboard=False,
               _node_ip_address="127.0.0.1")
      break
    except Exception as e:  # pylint: disable=broad-except
      # Ray waits a fixed 30 s for its raylet; a busy machine can miss it.
      if "timed out during startup" not in str(e) or (
          attempt == _RAY_STARTS - 1):
        raise
      print(f"ray_job: Ray start {attempt + 1} timed out; again", flush=True)
      ray.shutdown()
  config = {"model_dir": args.model_dir, "max_steps": args.max_steps}
  # The evaluator: a Ray task running the same program with the
  # evaluator's TF_CONFIG. It reads only model_dir; Ray picks the workers'
  # ports at each (re)start, so theirs are stand-ins harness never dials
  # (TF's MultiWorkerMirroredStrategy() in an evaluator wants the evaluator
  # listed, and its health check logs the stand-ins as down, once).
  evaluator_tf_config = json.dumps({
      "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"],
                  "evaluator": ["127.0.0.1:3"]},
      "task": {"type": "evaluator", "index": 0}})
  loop = train_loop if args.loop == "program" else main_loop
  evaluator = ray.remote(num_cpus=1)(loop).options(
      runtime_env={"env_vars": {"TF_CONFIG": evaluator_tf_config}})
  evaluation = evaluator.remote(dict(config, rank=-1))
  report = {}
  if args.kill_worker:
    threading.Thread(target=_kill_worker_after_checkpoint, daemon=True,
                     args=(args.model_dir, report)).start()
  trainer = TensorflowTrainer(
      loop, train_loop_config=config,
      scaling_config=train.ScalingConfig(num_workers=2,
                                         resources_per_worker={"CPU": 1}),
      run_config=train.RunConfig(
          storage_path=tempfile.mkdtemp(prefix="ray_results_"),
          failure_config=train.FailureConfig(
              max_failures=args.max_failures)))
  try:
    trainer.fit()
    report["fit_error"] = None
  except Exception as e:  # pylint: disable=broad-except
    report["fit_error"] = repr(e)[:2000]
  report["evaluation"] = ray.get(evaluation, timeout=_KILL_WAIT_SECS)
  report["records"] = _records(args.model_dir)
  report["checkpoints"] = _checkpoint_steps(args.model_dir)
  with open(args.report, "w") as f:
    json.dump(report, f)
  ray.shutdown()


if __name__ == "__main__":
  main()
