"""A standalone client written as a legacy tf.estimator user would.

    python -m tests.programs.remote_client --model_dir=D \\
        --remote_cluster='{"worker": ["h:p", "h:p"], "ps": ["h:p"]}' \\
        --strategy=ps|collective [--devices=N] [--max_steps=N] \\
        [--connect_timeout_secs=S] [--fail_at_step=N]

It trains on the remote cluster through `RunConfig(experimental_distribute=
DistributeConfig(remote_cluster=...))` and `train_and_evaluate`, evaluating
and exporting in this process, and writes <model_dir>/result-client.json
(final metrics and export paths). A harness error is one line on stderr and
exit status 1. `--fail_at_step` makes a training hook (run by the chief task
only) raise ValueError once the global step reaches N.
"""

import argparse
import json
import os
import sys

from harness import run_config
from harness._tf import tf
from harness.distribute import strategies
import harness
from tests.programs.cluster_job import input_fn
from tests.programs.cluster_job import model_fn
from tests.programs.cluster_job import serving_input_fn


class _FailAtStepHook(tf.compat.v1.train.SessionRunHook):

  def __init__(self, step):
    self._step = step

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._global_step)

  def after_run(self, run_context, run_values):
    if run_values.results >= self._step:
      raise ValueError(f"hook failed at step {run_values.results}")


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--remote_cluster", required=True)
  parser.add_argument("--strategy", choices=["ps", "collective"],
                      required=True)
  parser.add_argument("--devices", type=int, default=1)
  parser.add_argument("--max_steps", type=int, default=60)
  parser.add_argument(
      "--connect_timeout_secs", type=float,
      default=run_config.DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS)
  parser.add_argument("--fail_at_step", type=int, default=None)
  args = parser.parse_args()
  kind = "parameter_server" if args.strategy == "ps" else "collective"
  strategy = strategies.make_strategy(
      kind, num_devices_per_worker=args.devices)
  try:
    config = harness.RunConfig(
        model_dir=args.model_dir, save_checkpoints_steps=20,
        log_step_count_steps=10,
        remote_connect_timeout_secs=args.connect_timeout_secs,
        experimental_distribute=harness.DistributeConfig(
            train_distribute=strategy,
            remote_cluster=json.loads(args.remote_cluster)))
    estimator = harness.Estimator(model_fn, config=config)
    metrics, exports = harness.train_and_evaluate(
        estimator,
        harness.TrainSpec(input_fn, max_steps=args.max_steps, hooks=[
            _FailAtStepHook(args.fail_at_step)] if args.fail_at_step else []),
        harness.EvalSpec(input_fn, steps=2, throttle_secs=0, exporters=[
            harness.LatestExporter("latest", serving_input_fn)]))
  except harness.errors.HarnessError as e:
    print(f"remote_client: {type(e).__name__}: {e}", file=sys.stderr,
          flush=True)
    return 1
  result = {"metrics": {k: float(v) for k, v in metrics.items()},
            "exports": [os.fsdecode(p) for p in exports]}
  with open(os.path.join(args.model_dir, "result-client.json"), "w") as f:
    json.dump(result, f)
  return 0


if __name__ == "__main__":
  sys.exit(main())
