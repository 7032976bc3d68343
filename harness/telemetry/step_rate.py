"""Training speed summaries: `global_step/sec` and `examples/sec`.

    hook = step_rate.StepRateHook(every_n_steps=100, output_dir=model_dir,
                                  examples_per_step=step_rate.examples_in(features))

tf.estimator's chief wrote `global_step/sec` (TF's `StepCounterHook`) every
`log_step_count_steps`; `StepRateHook` writes the same and, beside it at the
same step, `examples/sec`: the examples of one global step (the global batch:
every replica's batch of that step, times the workers that train in sync)
times the steps per second. The examples are read from the step's features
on the steps the hook writes (a scalar fetch, no extra `session.run`; under
`steps_per_loop`, the loop's last step), so a short last batch counts as
what it is. `examples_per_step` may also be a
plain int, or None to write `global_step/sec` alone.
"""

from absl import logging

from harness._tf import tf
from harness.telemetry import live_metrics

__all__ = ["EXAMPLES_PER_SEC_TAG", "StepRateHook", "examples_in",
           "replicated_examples_in"]

EXAMPLES_PER_SEC_TAG = "examples/sec"


def _first_tensor(*structures):
  for structure in structures:
    for item in tf.nest.flatten(structure):
      if item is not None:
        return item
  return None


def _batch_of(tensor):
  """int64 scalar: the first dimension of `tensor` (None if it has none).

  A summary must never stop training: odd feature types (a composite whose
  shape cannot be read) give None, and `examples/sec` is left out.
  """
  try:
    return tf.cast(tf.shape(tensor, out_type=tf.int64)[0], tf.int64)
  except (TypeError, ValueError) as e:
    logging.debug("step rate | no batch size from %r: %s", tensor, e)
    return None


def examples_in(features, labels=None):
  """Scalar int64 Tensor: the batch size of one local step, or None.

  The first dimension of the first feature (or label) tensor; None when
  there is none to read it from (a hook then writes `global_step/sec` only).
  """
  first = _first_tensor(features, labels)
  # Python / numpy values (passed to model_fn unchanged, as 2.15) give none.
  if not tf.is_tensor(first) or first.shape.rank == 0:
    return None
  return _batch_of(first)


def replicated_examples_in(strategy, features, labels=None):
  """`examples_in` under `strategy`: this worker's replicas, times the
  workers in sync (num_replicas_in_sync / local replicas: 1 for mirrored and
  parameter-server training, the number of workers for collective)."""
  first = _first_tensor(features, labels)
  if first is None:
    return None
  local = [t for t in strategy.experimental_local_results(first)
           if t is not None and t.shape.rank]
  if not local:
    return None
  batches = [_batch_of(t) for t in local]
  if any(b is None for b in batches):
    return None
  total = tf.add_n(batches)
  workers = max(1, strategy.num_replicas_in_sync // len(local))
  return total * workers if workers > 1 else total


class StepRateHook(tf.compat.v1.train.StepCounterHook):
  """TF's StepCounterHook that also writes `examples/sec` at the same steps.

  Still a `StepCounterHook` (isinstance checks, steps_per_run handling); the
  rate is logged at DEBUG only, as the progress line already shows it.
  """

  def __init__(self, *, every_n_steps, output_dir, examples_per_step=None,
               summary_writer=None):
    """Creates the hook.

    Args:
      every_n_steps: global steps between two writes.
      output_dir: where the events go (the model_dir).
      examples_per_step: scalar Tensor (read on the steps written), int, or
        None (no `examples/sec`).
      summary_writer: optional writer instead of one for `output_dir`.
    """
    super().__init__(every_n_steps=every_n_steps, output_dir=output_dir,
                     summary_writer=summary_writer)
    self._examples_per_step = examples_per_step
    self._examples = (examples_per_step if isinstance(examples_per_step, int)
                      else None)

  def _wants_examples(self):
    if not tf.is_tensor(self._examples_per_step):
      return False
    if self._examples is None or self._last_global_step is None:
      return True
    # The step the coming run's after_run checks, one run ahead.
    ahead = self._last_global_step + 2 * self._steps_per_run
    return self._timer.should_trigger_for_step(ahead)

  def before_run(self, run_context):
    del run_context
    if self._wants_examples():
      return tf.compat.v1.train.SessionRunArgs(
          [self._global_step_tensor, self._examples_per_step])
    return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context, run_values):
    results = run_values.results
    if isinstance(results, list):
      results, self._examples = results[0], int(results[1])
    super().after_run(run_context, tf.compat.v1.train.SessionRunValues(
        results=results, options=run_values.options,
        run_metadata=run_values.run_metadata))

  # TF calls this protected method with each measured rate; overriding it
  # is how TF's own examples-per-second hooks extended the counter.
  def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
    steps_per_sec = elapsed_steps / elapsed_time
    values = [tf.compat.v1.Summary.Value(tag=self._summary_tag,
                                         simple_value=steps_per_sec)]
    if self._examples is not None:
      values.append(tf.compat.v1.Summary.Value(
          tag=EXAMPLES_PER_SEC_TAG,
          simple_value=steps_per_sec * self._examples))
      # The same number on the live endpoint (the progress line's hook
      # knows the batch only when its caller passes it).
      live_metrics.record_examples_rate(steps_per_sec * self._examples)
    if self._summary_writer is not None:
      self._summary_writer.add_summary(tf.compat.v1.Summary(value=values),
                                       global_step)
    # tf.estimator 2.15's line, `global_step/sec: 628.46` (TensorFlow's
    # logger, INFO), as TensorFlow's own StepCounterHook writes it.
    tf.compat.v1.logging.info("%s: %g", self._summary_tag, steps_per_sec)
    logging.debug("step rate | step %d | %s", global_step, " | ".join(
        f"{v.tag}={v.simple_value:.4g}" for v in values))
