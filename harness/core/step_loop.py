"""K training steps inside one `session.run`: `RunConfig(steps_per_loop=K)`.

A graph-mode step costs a `session.run` round trip plus every hook's
before/after work, which for small models is most of the step. With
`steps_per_loop=K` the TRAIN graph wraps "read a batch, call model_fn's
train_op" in a `tf.while_loop`, so one `session.run` trains up to K steps:

* `model_fn` is called once, while the loop body is built; its variables
  (layers, optimizer slots, global step) are created outside the loop by
  TensorFlow's init scope, so checkpoints are the same as with K = 1.
* The loop ends early at the step a `StopAtStepHook` asks for (so `steps` /
  `max_steps` land exactly) and at the next checkpoint step (so checkpoint,
  and hence evaluation, cadence is unchanged); every worker of a collective
  job computes the same bound.
* The hooks' global-step read happens before the loop, so hooks see the step
  counter advance by (up to) K per run; harness's own hooks and TF's
  checkpoint/step-counter/summary hooks are told K. Summaries `model_fn`
  writes are those of the loop's last step.
* Tensors inside the loop cannot be fetched from outside: `spec.loss`
  becomes the last step's loss; predictions, eval_metric_ops and
  export_outputs are dropped (unused in TRAIN, as in tf.estimator); a
  Saver model_fn built is rebuilt outside (`loop_spec`). Hooks holding
  model_fn tensors (a `LoggingTensorHook` on a hidden layer) and scaffold
  ops built in model_fn need K = 1: the Estimator then trains with K = 1
  and logs why.

`input_fn` must return a `tf.data.Dataset` (each iteration reads the next
batch); one returning tensors trains one step per run, with a warning.
"""

import dataclasses

from absl import logging
import numpy as np

from harness import _tf_private
from harness import errors
from harness._tf import tf
from harness.core import loop_spec
from harness.state import storage

__all__ = [
    "LoopedStep",
    "build",
    "LoopBoundHook",
    "SummarySaverHook",
    "set_steps_per_run",
    "raise_if_fetched_in_loop",
    "check_input",
]

_SUMMARIES = tf.compat.v1.GraphKeys.SUMMARIES
_NO_BOUND = np.iinfo(np.int64).max
_LOOP_NAME = "steps_per_loop"  # The while loop's name scope.


@dataclasses.dataclass(frozen=True)
class LoopedStep:
  """The loop's graph pieces.

  Attributes:
    spec: model_fn's TRAIN EstimatorSpec, with `train_op` the loop and
      `loss` the last step's loss (float32), both outside the loop.
    stop_at: int64 placeholder: the loop stops at this global step.
    final_step: the global step the loop ended at (read in the loop).
    steps_per_loop: K, the most steps a run makes.
    max_steps: int32 placeholder (default K): the most steps of this run.
    steps_done: int32, the steps this run made (this worker's).
    examples_per_step: the last step's batch (int64, from `examples_fn`),
      or None.
    model_loss_name: model_fn's loss tensor as named in the loop body,
      without the loop's scope (for messages).
    summary_names: op names of the summaries model_fn made in the loop body
      (their merged output replaces them in the SUMMARIES collection).
  """
  spec: object
  stop_at: object
  final_step: object
  steps_per_loop: int
  max_steps: object = None
  steps_done: object = None
  examples_per_step: object = None
  model_loss_name: str = None
  summary_names: tuple = ()


def build(step_fn, *, steps_per_loop, step_read, global_step,
          examples_fn=None):
  """Builds the training loop in the default graph.

  Args:
    step_fn: `fn() -> EstimatorSpec`: reads one batch and calls model_fn;
      called once, inside the loop body.
    steps_per_loop: K > 1, the most steps one run makes.
    step_read: `fn() -> Tensor`, a read of the global step (also callable
      inside the loop; under a strategy, a local read needing no peer).
    global_step: the global step variable (a fetch of it, like the hooks'
      read, is taken before the loop starts).
    examples_fn: optional `fn() -> int64 Tensor or None`, called in the body
      after `step_fn`: the step's batch, carried out of the loop (for
      `examples/sec`).

  Returns:
    A LoopedStep.

  Raises:
    loop_spec.NeedsOneStepPerRun: model_fn's spec needs per-step fetches.
  """
  graph = tf.compat.v1.get_default_graph()
  stop_at = tf.compat.v1.placeholder_with_default(
      tf.constant(_NO_BOUND, tf.int64), shape=[], name="steps_per_loop_stop")
  outer_summaries = list(graph.get_collection(_SUMMARIES))

  # At most K steps a run; `steps_per_loop="auto"` feeds a smaller K.
  max_steps = tf.compat.v1.placeholder_with_default(
      tf.constant(steps_per_loop), shape=[], name="steps_per_loop_max")

  def cond(i, step, loss, summary, examples):
    del loss, summary, examples
    return tf.logical_and(i < max_steps, step < stop_at)

  body = _LoopBody(step_fn, step_read=step_read, examples_fn=examples_fn,
                   graph=graph, outer_summaries=outer_summaries)
  start = _step_before_loop(step_read, global_step)
  steps_done, final_step, loss, summary, examples = tf.while_loop(
      cond, body,
      [tf.constant(0), start, tf.constant(0.0), tf.constant(""),
       tf.constant(0, tf.int64)],
      parallel_iterations=1, name=_LOOP_NAME)
  _replace_body_summaries(graph, outer_summaries,
                          summary if body.summaries else None)
  looped = loop_spec.outer_spec(body.spec, graph, loss=loss,
                                train_op=loss.op)
  return LoopedStep(spec=looped, stop_at=stop_at, final_step=final_step,
                    steps_per_loop=steps_per_loop, max_steps=max_steps,
                    steps_done=steps_done,
                    examples_per_step=examples if body.has_examples
                    else None, model_loss_name=body.loss_name,
                    summary_names=tuple(x.op.name for x in body.summaries))


class _LoopBody:
  """The while loop's body: one step; keeps what model_fn built in it.

  Attributes (set once the body is built):
    spec: model_fn's EstimatorSpec, as built in the body.
    loss_name: model_fn's name for its loss, without the loop's name scope.
    has_examples: whether `examples_fn` gave the step's batch.
    summaries: the summaries model_fn made in the body.
  """

  def __init__(self, step_fn, *, step_read, examples_fn, graph,
               outer_summaries):
    self._step_fn = step_fn
    self._step_read = step_read
    self._examples_fn = examples_fn
    self._graph = graph
    self._outer_summaries = outer_summaries
    self.spec = None
    self.loss_name = None
    self.has_examples = False
    self.summaries = []

  def __call__(self, i, step, loss, summary, examples):
    del step, loss, summary
    spec = self._step_fn()
    self.spec = spec
    # model_fn's name for its loss, without the loop's name scope.
    self.loss_name = spec.loss.name.replace(f"{_LOOP_NAME}/", "", 1)
    batch = self._examples_fn() if self._examples_fn is not None else None
    self.has_examples = batch is not None
    batch = examples if batch is None else tf.cast(batch, tf.int64)
    self.summaries = [
        s for s in self._graph.get_collection(_SUMMARIES)
        if not any(s is o for o in self._outer_summaries)]
    merged = (tf.compat.v1.summary.merge(self.summaries)
              if self.summaries else tf.constant(""))
    with tf.control_dependencies([spec.train_op]):
      return (i + 1, tf.cast(self._step_read(), tf.int64),
              tf.identity(tf.cast(spec.loss, tf.float32)),
              tf.identity(merged), tf.identity(batch))


def _step_before_loop(step_read, global_step):
  """The global step the loop starts from, read after the hooks' reads."""
  # The hooks' global step reads (fetched in the same run) are taken before
  # the loop starts, so what they see is the step before the run.
  read_before = list(
      tf.compat.v1.get_collection(_tf_private.GLOBAL_STEP_READ_KEY))
  read_before.append(_tf_private.variable_fetch_tensor(global_step))
  with tf.control_dependencies(read_before):
    return tf.cast(step_read(), tf.int64)


def _replace_body_summaries(graph, outer_summaries, merged):
  """Puts `merged` (None: nothing) in SUMMARIES in place of the body's."""
  # Summary tensors made inside the loop body cannot be run from outside:
  # replace them by the loop's output, the merged summaries of its last
  # step, so that merge_all (the SummarySaverHook's op) still has them.
  graph.clear_collection(_SUMMARIES)
  for s in outer_summaries:
    graph.add_to_collection(_SUMMARIES, s)
  if merged is not None:
    graph.add_to_collection(_SUMMARIES, merged)


def set_steps_per_run(hooks, steps_per_run):
  """Tells TF's step-driven hooks that one run advances `steps_per_run`.

  TF's CheckpointSaverHook otherwise assumes a huge value and reads the
  global step in an extra `session.run` after every step.
  """
  for hook in hooks:
    if isinstance(hook, (tf.compat.v1.train.CheckpointSaverHook,
                         tf.compat.v1.train.StepCounterHook)):
      _tf_private.set_hook_steps_per_run(hook, steps_per_run)
    elif hasattr(hook, "steps_per_run"):  # harness's own step hooks.
      hook.steps_per_run = steps_per_run


class SummarySaverHook(tf.compat.v1.train.SummarySaverHook):
  """TF's SummarySaverHook, for runs that advance `steps_per_run` steps.

  TF's predicts the step after each run as `read + 1` and the next run's
  as one more, which under a loop of K steps would save summaries only
  every `save_steps` runs (K times too rarely).
  """
  steps_per_run = 1

  def __init__(self, *args, output_dir=None, **kwargs):
    super().__init__(*args, output_dir=output_dir, **kwargs)
    self._events_dir = output_dir
    storage.quiet_event_writer_thread()
    # A failed event write (e.g. a full disk): the loop stops at once (the
    # chief's final save still runs) and `train_loop` raises it after.
    self.write_error = None

  def after_run(self, run_context, run_values):
    extra = self.steps_per_run - 1
    results = dict(run_values.results)
    results["global_step"] = results["global_step"] + extra
    # TF's hook fetched "summary" only for a run whose summary it writes;
    # flushing after every run instead cost ~0.25 ms a step (bench.tf215.vs215).
    wrote = "summary" in results
    super().after_run(run_context, tf.compat.v1.train.SessionRunValues(
        results=results, options=run_values.options,
        run_metadata=run_values.run_metadata))
    if self._next_step is not None:
      self._next_step += extra
    if wrote and self._events_dir and (
        self.write_error is None):  # It wrote: see that it landed.
      try:
        storage.flush_events(self._events_dir)
      except Exception as e:  # pylint: disable=broad-except
        self.write_error = e
        logging.error("train | cannot write event files in %s (%s); "
                      "stopping, with a checkpoint if space allows",
                      self._events_dir, e)
        run_context.request_stop()


class LoopBoundHook(tf.compat.v1.train.SessionRunHook):
  """Feeds the loop the global step it must stop at.

  That is the nearest of: the step a StopAtStepHook stops at, and the next
  checkpoint step, `start + n * save_checkpoints_steps` from the step the
  session started at (where the chief's CheckpointSaverHook saves, as with
  one step per run). Every worker computes the same bound from the same
  global step, so the loops of collective workers run the same number of
  steps (their all-reduces must pair up).
  """

  def __init__(self, looped, stop_hooks, save_checkpoints_steps, *,
               chooser=None, step_hooks=()):
    """Args beyond the bound's: under steps_per_loop="auto", `chooser`
    (an auto_loop.KChooser) gives each run's K, and `step_hooks` are told
    it (`set_steps_per_run`) when it changes."""
    self._looped = looped
    self._stop_hooks = list(stop_hooks)
    self._save_steps = save_checkpoints_steps
    self._chooser = chooser
    self._step_hooks = list(step_hooks)
    self._told = None
    self._start = self._step = None

  def after_create_session(self, session, coord):
    del coord
    read = tf.compat.v1.get_collection(
        _tf_private.GLOBAL_STEP_READ_KEY)[0]
    self._start = self._step = int(session.run(read))

  def before_run(self, run_context):
    del run_context
    bounds = [h.last_step for h in self._stop_hooks
              if h.last_step is not None]
    if self._save_steps:
      done = (self._step - self._start) // self._save_steps
      bounds.append(self._start + (done + 1) * self._save_steps)
    feed = {self._looped.stop_at: int(min(bounds))} if bounds else {}
    if self._chooser is not None:
      steps = self._chooser.next_k()
      feed[self._looped.max_steps] = steps
      if steps != self._told:
        set_steps_per_run(self._step_hooks, steps)
        self._told = steps
    return tf.compat.v1.train.SessionRunArgs(
        (self._looped.final_step, self._looped.steps_done),
        feed_dict=feed or None)

  def after_run(self, run_context, run_values):
    del run_context
    self._step, steps_done = (int(v) for v in run_values.results)
    if self._chooser is not None:
      self._chooser.record(steps_done)


def raise_if_fetched_in_loop(error, steps_per_loop):
  """Re-raises a fetch of an in-loop tensor as a ConfigError with the fix."""
  text = str(error)
  # What TF says when a hook hands it a tensor of the loop body's graph.
  foreign = ("graph attribute that is equal to current graph" in text or
             "is not an element of this graph" in text or
             "does not exist in the graph" in text)
  if steps_per_loop > 1 and foreign:
    raise errors.ConfigError(
        f"With steps_per_loop={steps_per_loop}, model_fn's tensors live inside "
        "the training loop and cannot be fetched by a hook (only the loss "
        f"can): {text[:300]}. Fix: set RunConfig(steps_per_loop=1) (flag "
        "--steps_per_loop=1) to use such hooks.") from error
  raise error


def check_input(input_fn_result_is_dataset, steps_per_loop, *, auto=False):
  """Returns the K to use: 1 (logged) when input is not a Dataset."""
  if steps_per_loop > 1 and not input_fn_result_is_dataset:
    if auto:
      logging.info("train | steps_per_loop=auto -> 1 (one step per "
                   "session.run): input_fn returned tensors, not a "
                   "tf.data.Dataset.")
      return 1
    logging.warning(
        "steps_per_loop=%d needs an input_fn that returns a tf.data.Dataset "
        "(each step of the loop reads the next batch); this one returned "
        "tensors, so training runs one step per session.run.", steps_per_loop)
    return 1
  return steps_per_loop
