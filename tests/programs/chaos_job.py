"""A small train_and_evaluate job for reliability tests, run once per task.

    python -m tests.programs.chaos_job --model_dir=D --strategy=collective|ps
        [--max_steps=N] [--ckpt_steps=K] [--step_secs=S] [--input_steps=M]

Steps are slowed by `--step_secs` so that a test can kill or signal tasks
in the middle of training. `--input_steps` makes the input end after that
many batches on worker/1 (an input shorter than its peers'). Written as a
user would (model_fn, input_fn, RunConfig, train_and_evaluate); it prints
nothing itself: the harness's log lines are what the tests read.
"""

import argparse
import os
import sys
import time
import traceback

import numpy as np

from harness._tf import tf
from harness.distribute import strategies
import harness
from tests.programs.cluster_job import SlowStepHook
from tests.programs.cluster_job import model_fn


def make_input_fn(batches=None):
  """Endless data, or `batches` batches then the end of input."""
  def input_fn(input_context=None):
    rng = np.random.RandomState(0)
    x = rng.randn(64, 4).astype(np.float32)
    y = x @ np.array([[1.], [-2.], [0.5], [3.]], np.float32)
    ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    if input_context is not None:
      ds = ds.shard(input_context.num_input_pipelines,
                    input_context.input_pipeline_id)
    ds = ds.repeat().batch(8)
    return ds.take(batches) if batches else ds
  return input_fn


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--strategy", default="collective")
  parser.add_argument("--max_steps", type=int, default=200)
  parser.add_argument("--ckpt_steps", type=int, default=20)
  parser.add_argument("--step_secs", type=float, default=0.05)
  parser.add_argument("--input_steps", type=int, default=0)
  args = parser.parse_args()
  # Test aids: where to signal this task; a restart can be made late.
  os.makedirs(args.model_dir, exist_ok=True)
  task = os.environ.get("HARNESS_TASK", "local").replace("/", "-")
  with open(os.path.join(args.model_dir, f"pid-{task}"), "w") as f:
    f.write(str(os.getpid()))
  time.sleep(float(os.environ.get("CHAOS_START_DELAY_SECS", "0")))
  # make_strategy reads no TF_CONFIG (an evaluator task has no strategy).
  strategy = strategies.make_strategy(
      {"collective": "collective", "ps": "parameter_server"}.get(
          args.strategy, "default"))
  config = harness.RunConfig(
      model_dir=args.model_dir, save_checkpoints_steps=args.ckpt_steps,
      save_checkpoints_secs=None, train_distribute=strategy, tf_random_seed=7,
      save_summary_steps=1000, log_step_count_steps=10)
  short = os.environ.get("HARNESS_TASK") == "worker/1" and args.input_steps
  est = harness.Estimator(model_fn, config=config)
  try:
    harness.train_and_evaluate(
        est,
        harness.TrainSpec(make_input_fn(args.input_steps if short else None),
                          max_steps=args.max_steps,
                          hooks=[SlowStepHook(args.step_secs)]),
        harness.EvalSpec(make_input_fn(), steps=2, start_delay_secs=0,
                         throttle_secs=1))
  except Exception:  # pylint: disable=broad-except
    traceback.print_exc()
    sys.stderr.flush()
    os._exit(1)  # pylint: disable=protected-access
  # A gRPC server can keep the interpreter from exiting; the work is done.
  os._exit(0)  # pylint: disable=protected-access


if __name__ == "__main__":
  main()
