"""A tf.estimator-style job for cluster tests: run once per TF_CONFIG task.

    python -m tests.programs.cluster_job --model_dir=D --strategy=ps|collective|none
        [--max_steps=N] [--devices=K] [--steps_per_loop=K] [--step_secs=S]

Written as a legacy user would (model_fn, input_fn, RunConfig,
train_and_evaluate). Each task writes what it saw to
<model_dir>/result-<task>.json: its task, final global step, variables.
"""

import argparse
import json
import os
import time

import numpy as np

from harness._tf import tf
import harness
from tests import _support


def model_fn(features, labels, mode, params):
  pred = tf.compat.v1.layers.dense(features["x"], 1, name="dense")
  if mode == harness.ModeKeys.PREDICT:
    return harness.EstimatorSpec(mode, predictions={"y": pred})
  loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return harness.EstimatorSpec(
      mode, loss=loss, train_op=train_op,
      eval_metric_ops={"mae": tf.compat.v1.metrics.mean_absolute_error(
          labels, pred)})


def input_fn(input_context=None):
  rng = np.random.RandomState(0)
  x = rng.randn(256, 4).astype(np.float32)
  y = (x @ np.array([[1.], [-2.], [0.5], [3.]], np.float32)).astype(np.float32)
  ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
  if input_context is not None:
    ds = ds.shard(input_context.num_input_pipelines,
                  input_context.input_pipeline_id)
  return ds.repeat().batch(16)


def serving_input_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
  return harness.export.ServingInputReceiver({"x": x}, {"x": x})


class _SyncStartHook(tf.compat.v1.train.SessionRunHook):
  """Test aid: the chief starts stepping only once every worker is up.

  Async ps training has no start barrier (as in tf.estimator), so on a
  loaded 2-core machine the chief could finish before a slow worker's first
  step; tests that check "both trainers stepped" use this to be
  deterministic. Bounded: after `timeout_secs` the chief goes on anyway.
  """

  def __init__(self, model_dir, is_chief, timeout_secs=60):
    self._flag = os.path.join(model_dir, "worker-ready")
    self._is_chief = is_chief
    self._timeout_secs = timeout_secs

  def after_create_session(self, session, coord):
    del session, coord
    if not self._is_chief:
      open(self._flag, "w").close()
      return
    _support.poll_until(lambda: os.path.exists(self._flag),
                        self._timeout_secs, interval_secs=0.1)


class SlowStepHook(tf.compat.v1.train.SessionRunHook):
  """Sleeps after each step, so a run lasts long enough to be disturbed."""

  def __init__(self, secs):
    self._secs = secs

  def after_run(self, run_context, run_values):
    del run_context, run_values
    time.sleep(self._secs)


class _DevicesHook(tf.compat.v1.train.SessionRunHook):
  """Writes where each global variable of the TRAIN graph was placed
  (devices-<task>.json in model_dir)."""

  def __init__(self, model_dir):
    self._path = os.path.join(model_dir, "devices-" + os.environ.get(
        "HARNESS_TASK", "local").replace("/", "-") + ".json")

  def begin(self):
    with open(self._path, "w", encoding="utf-8") as f:
      json.dump({v.op.name: v.device
                 for v in tf.compat.v1.global_variables()}, f)


def make_strategy(name, devices):
  if name == "collective":
    if devices > 1:
      from harness.distribute import strategies  # pylint: disable=g-import-not-at-top
      return strategies.make_strategy(
          "collective", num_devices_per_worker=devices, device_type="CPU")
    return tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy()
  if name == "ps":
    return tf.compat.v1.distribute.experimental.ParameterServerStrategy()
  return None


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--strategy", default="none")
  parser.add_argument("--max_steps", type=int, default=60)
  parser.add_argument("--devices", type=int, default=1)
  parser.add_argument("--summary_steps", type=int, default=100)
  parser.add_argument("--log_steps", type=int, default=10)
  parser.add_argument("--ckpt_steps", type=int, default=20)
  parser.add_argument("--sync_start", action="store_true")
  parser.add_argument("--steps_per_loop", type=int, default=1)
  # Sleep after each session.run: training outlasts the evaluator's polls.
  parser.add_argument("--step_secs", type=float, default=0.0)
  parser.add_argument("--ps_placement", default="round_robin")
  args = parser.parse_args()
  strategy = make_strategy(args.strategy, args.devices)
  config = harness.RunConfig(
      model_dir=args.model_dir, save_checkpoints_steps=args.ckpt_steps or None,
      save_checkpoints_secs=None,
      train_distribute=strategy, tf_random_seed=7,
      save_summary_steps=args.summary_steps,
      log_step_count_steps=args.log_steps or None,
      steps_per_loop=args.steps_per_loop, ps_placement=args.ps_placement)
  est = harness.Estimator(model_fn, config=config)
  metrics, exports = harness.train_and_evaluate(
      est, harness.TrainSpec(input_fn, max_steps=args.max_steps, hooks=(
          [_SyncStartHook(args.model_dir, config.is_chief)]
          if args.sync_start else []) + (
              [SlowStepHook(args.step_secs)] if args.step_secs else []) + [
                  _DevicesHook(args.model_dir)]),
      harness.EvalSpec(input_fn, steps=4, start_delay_secs=0, throttle_secs=1,
                       exporters=[harness.FinalExporter("final",
                                                        serving_input_fn)]))
  task = os.environ.get("HARNESS_TASK", "local").replace("/", "-")
  result = {"task": task, "metrics": None, "exports": []}
  if metrics is not None:
    result["metrics"] = {k: float(v) for k, v in metrics.items()}
    result["exports"] = [os.fsdecode(e) for e in exports if e]
  if config.task_type in ("chief", "worker", "master"):
    result["kernel"] = None
  with open(os.path.join(args.model_dir, f"result-{task}.json"), "w") as f:
    json.dump(result, f)


if __name__ == "__main__":
  main()
