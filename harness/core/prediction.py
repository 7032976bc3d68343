"""`Estimator.predict`'s session loop: selected keys, batches or examples.

`predict` builds the PREDICT graph; `yield_predictions` runs it in a
`MonitoredSession` until the input ends and yields what 2.15 yielded: whole
batches, or one example at a time (a dict per example when predictions are a
dict, which then must share one batch dimension).
"""

import numpy as np

from harness import errors
from harness._tf import tf

__all__ = ["select_keys", "batch_length", "yield_predictions",
           "warn_if_endless"]


def warn_if_endless(result, features):
  """Warns, as 2.15 did, when nothing will ever end the predict loop.

  Predictions stop when the input ends: a `tf.data.Dataset` (or an
  iterator's `get_next`) or a QueueRunner. Plain tensors never end, so
  `predict` would yield forever. The warning goes through `tf.logging`,
  where 2.15 wrote it (and where code watching for it looks).

  Args:
    result: what input_fn returned.
    features: the features parsed from it.
  """
  if isinstance(result, tf.data.Dataset):
    return
  if any(isinstance(t, tf.Tensor) and t.op.type == "IteratorGetNext"
         for t in tf.nest.flatten(features)):
    return
  if tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS):
    return
  tf.compat.v1.logging.warning(
      "Input graph does not use tf.data.Dataset or contain a QueueRunner. "
      "That means predict yields forever. This is probably a mistake. Fix: "
      "return a tf.data.Dataset (e.g. tf.data.Dataset.from_tensor_slices("
      "features).batch(n)) from the predict input_fn, or stop iterating "
      "yourself.")


def yield_predictions(session_creator, hooks, predictions,
                      yield_single_examples):
  """Runs `predictions` until the session stops; yields batches or examples."""
  with tf.compat.v1.train.MonitoredSession(
      session_creator=session_creator, hooks=hooks) as session:
    while not session.should_stop():
      values = session.run(predictions)
      if not yield_single_examples:
        yield values
      elif not isinstance(values, dict):
        yield from values
      else:
        for i in range(batch_length(values)):
          yield {key: value[i] for key, value in values.items()}


def select_keys(predictions, predict_keys):
  """The `predict_keys` entries of a predictions dict (all when None)."""
  if not predict_keys:
    return predictions
  if not isinstance(predictions, dict):
    raise errors.ConfigError(
        "predict_keys argument is not valid in case of non-dict "
        "predictions.")
  if isinstance(predict_keys, str):
    predict_keys = [predict_keys]
  selected = {k: v for k, v in predictions.items() if k in predict_keys}
  if not selected:
    raise errors.ConfigError(
        f"Expected to run at least one output from {sorted(predictions)}, "
        f"provided {list(predict_keys)}.")
  return selected


def batch_length(values):
  """The batch size every value of a predictions dict shares."""
  length = None
  for key, value in values.items():
    value_len = np.shape(value)[0] if np.ndim(value) else None
    if value_len is None:
      raise errors.ConfigError(
          "In order to use yield_single_examples=True, all predictions "
          f"should have a batch dimension; {key!r} has shape "
          f"{np.shape(value)}. Fix: predict with "
          "yield_single_examples=False.")
    if length is None:
      length = value_len
    elif length != value_len:
      raise errors.ConfigError(
          f"Batch length of predictions should be same. {key!r} has "
          "different batch length than others.")
  return length or 0
