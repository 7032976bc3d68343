"""Example input pipelines, one contract for all of them.

Every module here exposes a factory and its defaults::

    DEFAULT_PARAMS = {...}   # name -> default; types drive --params coercion

    def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
      ...
      return input_fn        # input_fn(input_context=None) -> tf.data.Dataset

* `mode` is a `harness.spec.ModeKeys` value: TRAIN shuffles and repeats
  forever (stop training with steps/max_steps); EVAL and PREDICT make one
  ordered pass over the data.
* `batch_size` is the GLOBAL batch size (None: the module's
  ``DEFAULT_BATCH_SIZE``). Under a distribution strategy the Estimator calls
  ``input_fn(input_context=...)`` once per input pipeline; the pipeline then
  batches ``input_context.get_per_replica_batch_size(batch_size)`` examples
  and reads only shard ``input_pipeline_id`` of ``num_input_pipelines``.
* `params` overrides ``DEFAULT_PARAMS``; keys a module does not know are
  ignored, so the binary may pass one dict holding model and input params.
* The factory checks what it can up front (files present, sizes valid) and
  raises `harness.errors.InputFnError` with the fix; the returned input_fn
  only builds ops, so it works in any graph the Estimator creates.
* Datasets yield ``(features, labels)``: MNIST-shaped ones
  ``({"image": float32 [b, 28, 28, 1] in [0, 1]}, int64 [b])``, `constant`
  ``({"x": float32 [b, 1]}, float32 [b, 1])``.

Use::

    from input_fns import mnist_idx
    train_input_fn = mnist_idx.make_input_fn(
        ModeKeys.TRAIN, batch_size=64)  # the MNIST split shipped with it
    estimator.train(train_input_fn, max_steps=1000)

This module itself imports no TensorFlow; the harness core never imports this
package (`harness.cli.registry` resolves it by name).
"""

from harness import errors

__all__ = [
    "TRAIN", "EVAL", "PREDICT", "check_mode", "merge_params",
    "check_batch_size", "distribute",
]

# The ModeKeys values (harness.spec.ModeKeys), repeated to keep this module
# free of TensorFlow.
TRAIN = "train"
EVAL = "eval"
PREDICT = "infer"


def check_mode(mode, source):
  """Returns `mode` if it is a ModeKeys value, else raises InputFnError."""
  if mode not in (TRAIN, EVAL, PREDICT):
    raise errors.InputFnError(
        f"{source}: mode={mode!r} is not a ModeKeys value; use "
        "ModeKeys.TRAIN ('train'), ModeKeys.EVAL ('eval') or "
        "ModeKeys.PREDICT ('infer').")
  return mode


def merge_params(defaults, params):
  """Returns `defaults` updated with the keys of `params` it knows."""
  merged = dict(defaults)
  for key, value in (params or {}).items():
    if key in defaults:
      merged[key] = value
  return merged


def check_batch_size(batch_size, default, source):
  """Returns the global batch size: `batch_size`, or `default` when None.

  Raises:
    InputFnError: the value is not a positive int.
  """
  if batch_size is None:
    batch_size = default
  if isinstance(batch_size, bool) or not isinstance(batch_size, int) or (
      batch_size <= 0):
    raise errors.InputFnError(
        f"{source}: batch_size={batch_size!r} must be a positive int (the "
        "global batch size, split across replicas).")
  return batch_size


def distribute(dataset, global_batch_size, input_context):
  """Shards `dataset` for `input_context`; returns it and the batch to use.

  Args:
    dataset: an unbatched `tf.data.Dataset`.
    global_batch_size: examples per step over all replicas.
    input_context: a `tf.distribute.InputContext`, or None (one pipeline
      feeding one replica: the global batch).

  Returns:
    `(dataset, batch_size)`: the dataset restricted to this pipeline's
    shard, and the per-replica batch size.

  Raises:
    InputFnError: `global_batch_size` does not divide by the replica count.
  """
  if input_context is None:
    return dataset, global_batch_size
  try:
    batch_size = input_context.get_per_replica_batch_size(global_batch_size)
  except ValueError as e:
    raise errors.InputFnError(
        f"batch_size={global_batch_size} (global) does not divide evenly "
        f"over {input_context.num_replicas_in_sync} replicas. Fix: use a "
        "multiple of the replica count.") from e
  if input_context.num_input_pipelines > 1:
    dataset = dataset.shard(
        input_context.num_input_pipelines, input_context.input_pipeline_id)
  return dataset, batch_size
