"""Turns what an `input_fn` returns into graph tensors (one mode, one graph).

An `input_fn` may return a `tf.data.Dataset` whose elements are
`(features, labels)` or `features`, or those structures as tensors. Without a
strategy the dataset gets an initializable iterator, initialised by a hook
when the session starts (as tf.estimator did). Under a distribution strategy
`input_fn` is called once per input pipeline (one per worker) with an
`input_context`, and each replica reads its own batch from it: the batch an
`input_fn` returns is the PER-REPLICA batch, as in tf.estimator.
"""

from harness import errors
from harness import spec as spec_lib
from harness._tf import tf

__all__ = [
    "DatasetInitializerHook",
    "parse_input_fn_result",
    "parse_features_and_labels",
    "features_and_labels",
    "distributed_iterator",
]


class DatasetInitializerHook(tf.compat.v1.train.SessionRunHook):
  """Initialises an iterator each time a session is created."""

  def __init__(self, iterator):
    self._iterator = iterator
    self._initializer = None

  def begin(self):
    # Built here, before the graph is finalized: a distributed iterator
    # creates its initializer ops on first request.
    init = self._iterator.initializer
    self._initializer = init() if callable(init) else init

  def after_create_session(self, session, coord):
    del coord
    session.run(self._initializer)


def _is_graph_value(item):
  return tf.is_tensor(item) or isinstance(
      item, (tf.SparseTensor, tf.compat.v1.SparseTensorValue))


def _holds_graph_value(item):
  return any(_is_graph_value(leaf) for leaf in tf.nest.flatten(item))


def _check_values(value, what):
  """Raises InputFnError for a leaf TensorFlow could not convert.

  tf.estimator 2.15 handed features and labels to model_fn exactly as
  input_fn returned them: Python scalars, lists, nested tuples and numpy
  arrays reached model_fn unchanged and TensorFlow ops converted them
  there (`convert_to_tensor`). harness does the same; it only checks, in a
  scratch graph, that each such leaf converts, so that an unusable value is
  named here rather than deep inside model_fn. Dicts are checked per key; a
  list or tuple that holds Tensors is left to model_fn.
  """
  if value is None or _is_graph_value(value):
    return
  if isinstance(value, dict):
    for item in value.values():
      _check_values(item, what)
    return
  if isinstance(value, (list, tuple)) and _holds_graph_value(value):
    return
  try:
    with tf.Graph().as_default():
      tf.convert_to_tensor(value)
  except (TypeError, ValueError) as e:
    raise errors.InputFnError(
        f"input_fn returned {what} containing {value!r:.120} "
        f"({type(value).__name__}), which tf.convert_to_tensor refuses "
        f"({e!s:.200}). Fix: return Tensors, SparseTensors, numpy arrays, "
        "Python numbers or lists (or dicts of them), or a tf.data.Dataset."
    ) from e


def parse_features_and_labels(result, check=True):
  """Splits an iterator element or returned value into (features, labels).

  Args:
    result: what input_fn or an iterator returned.
    check: refuse leaves TensorFlow cannot convert; Python / numpy values
      pass unchanged, as in 2.15 (off for the per-replica values of a
      distributed iterator).
  """
  if isinstance(result, (list, tuple)) and not _is_namedtuple(result):
    if len(result) != 2:
      raise errors.InputFnError(
          f"input_fn should return (features, labels) as a len 2 tuple, it "
          f"returned a {type(result).__name__} of length {len(result)}. Fix: "
          "return features alone, or a (features, labels) pair.")
    features, labels = result
  else:
    features, labels = result, None
  if check:
    _check_values(features, "features")
    _check_values(labels, "labels")
  return features, labels


def _is_namedtuple(value):
  return isinstance(value, tuple) and hasattr(value, "_fields")


def parse_input_fn_result(result):
  """Returns (features, labels, input_hooks) for a non-distributed graph."""
  hooks = []
  if isinstance(result, tf.data.Dataset):
    iterator = tf.compat.v1.data.make_initializable_iterator(result)
    hooks.append(DatasetInitializerHook(iterator))
    result = iterator.get_next()
  features, labels = parse_features_and_labels(result)
  return features, labels, hooks


def features_and_labels(input_fn, mode, params, config):
  """Calls `input_fn` in the default graph; returns features, labels, hooks."""
  result = spec_lib.call_input_fn(input_fn, mode, params, config)
  return parse_input_fn_result(result)


def distributed_iterator(strategy, input_fn, mode, params, config):
  """An iterator that feeds each replica of `strategy`; returns (it, hooks)."""

  def dataset_fn(input_context):
    result = spec_lib.call_input_fn(
        input_fn, mode, params, config, input_context=input_context)
    if not isinstance(result, tf.data.Dataset):
      raise errors.InputFnError(
          "Under a distribution strategy, input_fn must return a "
          f"tf.data.Dataset, it returned {type(result).__name__}. Fix: "
          "return tf.data.Dataset.from_tensor_slices(...) (or similar); "
          "the batch size it yields is per replica.")
    return result

  iterator = strategy.make_input_fn_iterator(dataset_fn)
  return iterator, [DatasetInitializerHook(iterator)]
