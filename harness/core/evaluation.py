"""One evaluation pass: metric ops, the eval session, and eval summaries.

`Estimator.evaluate` builds the graph and calls `evaluate_once`, which
restores a checkpoint (or initialises, when there is none), runs the metric
update ops `steps` times or until the input ends, reads the metric values and
returns them. `write_dict_to_summary` then writes them to `eval/` (or
`eval_<name>/`) with their own names as tags, which TensorBoard reads.
"""

import os
import time

import numpy as np
from absl import logging

from harness import errors
from harness._tf import tf
from harness.guard import stop_signal
from harness.state import checkpoint_reader
from harness.state import storage
from harness.telemetry import live_metrics
from harness.telemetry import trainer_status

__all__ = [
    "LOSS_METRIC_KEY",
    "GLOBAL_STEP_KEY",
    "eval_dict_from_spec",
    "with_metric_init",
    "evaluate_once",
    "write_dict_to_summary",
    "write_checkpoint_path_to_summary",
]

LOSS_METRIC_KEY = "loss"
GLOBAL_STEP_KEY = "global_step"


def _metric_value_and_update(value, strategy):
  """A spec's `(value, update_op)` pair; under `strategy`, the pair of the
  spec `call_for_each_replica` regrouped: one value (the first replica's,
  Keras and v1 metrics read every replica's variables) and the replicas'
  updates grouped."""
  if strategy is None:
    return value[0], value[1]
  result = strategy.experimental_local_results(value[0])[0]
  return result, strategy.group(value[1])


def eval_dict_from_spec(spec, global_step_tensor, strategy=None):
  """Returns (final_ops dict, grouped update op) for an EVAL spec.

  The dict holds each metric's value op, the mean of the loss under
  `loss`, and the global step under `global_step`, as tf.estimator did.
  `EstimatorSpec` made each Keras metric a `(result, update_op)` pair; with
  `strategy`, `spec` is the per-replica spec regrouped by
  `strategy.extended.call_for_each_replica` (2.15's distributed evaluation).
  """
  final_ops = {}
  updates = []
  for name, value in spec.eval_metric_ops.items():
    result, update = _metric_value_and_update(value, strategy)
    final_ops[name] = result
    updates.append(update)
  if LOSS_METRIC_KEY in final_ops:
    raise errors.ModelFnError(
        'Metric with name "loss" is not allowed, because Estimator already '
        "defines a default metric with the same name. Fix: rename the "
        "metric in eval_metric_ops.")
  if GLOBAL_STEP_KEY in final_ops:
    raise errors.ModelFnError(
        "Metric with name `global_step` is not allowed, because Estimator "
        "already defines a default metric with the same name. Fix: rename "
        "the metric in eval_metric_ops.")
  if strategy is None:
    loss_pair = tf.compat.v1.metrics.mean(spec.loss)
  else:  # The mean of every replica's loss, as 2.15.
    loss_pair = strategy.extended.call_for_each_replica(
        tf.compat.v1.metrics.mean, args=(spec.loss,))
  loss_value, loss_update = _metric_value_and_update(loss_pair, strategy)
  final_ops[LOSS_METRIC_KEY] = loss_value
  updates.append(loss_update)
  final_ops[GLOBAL_STEP_KEY] = global_step_tensor
  return final_ops, tf.group(*updates)


def with_metric_init(scaffold):
  """`scaffold`, its own `local_init_op` grouped with the default one.

  As 2.15's evaluation: a model_fn's Scaffold with a `local_init_op` would
  leave the local variables made after model_fn (the loss mean of
  `eval_dict_from_spec`) uninitialised; without one, the default runs.
  """
  if scaffold.local_init_op is None:
    return scaffold
  return tf.compat.v1.train.Scaffold(
      local_init_op=tf.group(
          scaffold.local_init_op,
          tf.compat.v1.train.Scaffold.default_local_init_op()),
      copy_from_scaffold=scaffold)


class _StopAfterNEvalsHook(tf.compat.v1.train.SessionRunHook):
  """Requests a stop after `num_evals` runs; logs progress every 10 %."""

  def __init__(self, num_evals):
    self._num_evals = num_evals
    self._done = 0
    self._log_every = max(1, num_evals // 10) if num_evals else 0

  def after_create_session(self, session, coord):
    del session, coord
    self._done = 0

  def after_run(self, run_context, run_values):
    del run_values
    self._done += 1
    if self._num_evals is None:
      return
    if self._done % self._log_every == 0 or self._done >= self._num_evals:
      logging.info("eval | step %d/%d", self._done, self._num_evals)
      # tf.estimator 2.15's line (TensorFlow's logger).
      tf.compat.v1.logging.info("Evaluation [%d/%d]", self._done,
                                self._num_evals)
    if self._done >= self._num_evals:
      run_context.request_stop()

  def end(self, session):
    del session
    if self._num_evals is not None and self._done < self._num_evals:
      logging.info("eval | step %d/%d: the input ended (evaluated %d "
                   "batches, not %d)", self._done, self._num_evals,
                   self._done, self._num_evals)

  @property
  def evals_done(self):
    return self._done


class _StopSignalHook(tf.compat.v1.train.SessionRunHook):
  """Ends an evaluation run inside a training loop that a stop signal
  stops (a local train_and_evaluate's): `stop_signal.Terminated`."""

  def after_run(self, run_context, run_values):
    del run_context, run_values
    if stop_signal.STOP_SIGNAL.stopping():
      raise stop_signal.Terminated(stop_signal.STOP_SIGNAL.stage)


def evaluate_once(*, checkpoint_path, master, scaffold, eval_op, final_ops,
                  hooks, session_config, steps):
  """Runs one evaluation pass and returns the final metric values.

  Args:
    checkpoint_path: checkpoint to restore, or None to initialise variables.
    master: session target ("" for in-process).
    scaffold: the spec's Scaffold.
    eval_op: op run once per evaluation step (the grouped metric updates).
    final_ops: dict of tensors read once at the end.
    hooks: SessionRunHooks (input initialisers, user and spec hooks).
    session_config: ConfigProto or None.
    steps: number of evaluation steps, or None to run until input ends.

  Returns:
    dict from final_ops' keys to numpy values.
  """
  stop_hook = _StopAfterNEvalsHook(steps)
  final_hook = tf.compat.v1.train.FinalOpsHook(final_ops)
  all_hooks = list(hooks) + [stop_hook, final_hook, _StopSignalHook()]
  checkpoint_reader.check_fits(checkpoint_path, scaffold)
  # tf.estimator 2.15's lines around an evaluation (TensorFlow's logger).
  tf.compat.v1.logging.info("Starting evaluation at %s", time.strftime(
      "%Y-%m-%dT%H:%M:%S", time.localtime()))
  started = time.time()
  creator = tf.compat.v1.train.ChiefSessionCreator(
      scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path,
      master=master, config=session_config)
  with tf.compat.v1.train.MonitoredSession(
      session_creator=creator, hooks=all_hooks) as session:
    while not session.should_stop():
      session.run(eval_op)
  tf.compat.v1.logging.info("Inference Time : %.5fs", time.time() - started)
  tf.compat.v1.logging.info("Finished evaluation at %s", time.strftime(
      "%Y-%m-%d-%H:%M:%S", time.localtime()))
  if stop_hook.evals_done == 0:
    logging.warning(
        "eval | input_fn produced no data: metrics are computed over zero "
        "examples. Check the evaluation input_fn.")
  return final_hook.final_ops_values


def _summary_values(tag, value):
  """The Summary.Values of one result; [] when it has no summary meaning.

  A serialized `Summary` (an image summary's value, say) gives each of its
  values, tagged `<tag>/<i>` as 2.15 tagged them.
  """
  if isinstance(value, (bool, np.bool_)):
    value = float(value)
  if isinstance(value, (int, float, np.integer, np.floating)):
    return [tf.compat.v1.Summary.Value(tag=tag, simple_value=float(value))]
  if isinstance(value, np.ndarray) and value.size == 1:
    return [tf.compat.v1.Summary.Value(
        tag=tag, simple_value=float(value.reshape(())))]
  if isinstance(value, bytes):
    summary = tf.compat.v1.Summary()
    try:
      summary.ParseFromString(value)
    except Exception:  # pylint: disable=broad-except
      return []
    for i, item in enumerate(summary.value):
      item.tag = f"{tag}/{i}"
    return list(summary.value)
  if isinstance(value, np.ndarray):
    return [tf.compat.v1.Summary.Value(
        tag=tag, tensor=tf.compat.v1.make_tensor_proto(value))]
  return []


def write_dict_to_summary(output_dir, dictionary, current_global_step):
  """Writes eval results to `output_dir` as one Summary at the given step."""
  # tf.estimator 2.15's line: `Saving dict for global step 250: global_step
  # = 250, loss = 7.6e-08` (TensorFlow's logger; bytes values left out).
  tf.compat.v1.logging.info(
      "Saving dict for global step %d: %s", current_global_step,
      ", ".join("%s = %s" % item for item in sorted(dictionary.items())
                if not isinstance(item[1], bytes)))  # str(): numpy's form.
  summary = tf.compat.v1.Summary()
  for key, value in sorted(dictionary.items()):
    if key == GLOBAL_STEP_KEY:
      continue
    items = _summary_values(key, value)
    if not items:
      logging.warning(
          "eval | skipping summary for %s: %s values cannot be written as a "
          "scalar, image or tensor summary", key, type(value).__name__)
      continue
    summary.value.extend(items)
  _write_summary(output_dir, summary, current_global_step)
  # Every evaluation's results pass here: the live endpoint shows the last,
  # and the TrainJob's status when this process reports it.
  live_metrics.record_eval(dictionary, current_global_step)
  trainer_status.record_eval(dictionary)


def _write_summary(output_dir, summary, step):
  # v1 FileWriters refuse eager mode; callers may be outside any graph.
  with tf.Graph().as_default():
    writer = tf.compat.v1.summary.FileWriterCache.get(output_dir)
    writer.add_summary(summary, int(step))
  storage.flush_events(output_dir)  # A full disk: ResourceExhaustedError.


def write_checkpoint_path_to_summary(output_dir, checkpoint_path,
                                     current_global_step):
  """Records which checkpoint an evaluation used (tag `checkpoint_path`)."""
  tf.compat.v1.logging.info(
      "Saving 'checkpoint_path' summary for global step %d: %s",
      current_global_step, checkpoint_path)
  proto = tf.compat.v1.make_tensor_proto(
      os.fsencode(checkpoint_path), dtype=tf.string)
  summary = tf.compat.v1.Summary(value=[
      tf.compat.v1.Summary.Value(tag="checkpoint_path", tensor=proto)])
  _write_summary(output_dir, summary, current_global_step)
