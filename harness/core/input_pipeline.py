"""Turns what an `input_fn` returns into graph tensors (one mode, one graph).

An `input_fn` may return a `tf.data.Dataset` whose elements are
`(features, labels)` or `features`, or those structures as tensors. Without a
strategy the dataset gets an initializable iterator, initialised by a hook
when the session starts (as tf.estimator did). Under a distribution strategy
`input_fn` is called once per input pipeline (one per worker) with an
`input_context`, and each replica reads its own batch from it: the batch an
`input_fn` returns is the PER-REPLICA batch, as in tf.estimator.

`RunConfig(input_pipeline="tuned")` (the default) makes the dataset of a
local (no strategy) TRAIN, EVAL or PREDICT graph faster without changing
its elements or their order: a final `prefetch(AUTOTUNE)` and the tf.data
options in `TUNED_OPTIONS`, each only where the input_fn left it unset
(`tuned`). The iterator is built on the dataset as written and initialised
from the tuned one, so the graph's ops up to model_fn, and with them the
op seeds a `tf_random_seed` derives, are those of "as_written".
"""

from absl import logging

from harness import _tf_private
from harness import errors
from harness import spec as spec_lib
from harness._tf import tf
from harness.fields import AS_WRITTEN
from harness.fields import TUNED

__all__ = [
    "TUNED_OPTIONS",
    "tuned",
    "DatasetInitializerHook",
    "initializable_iterator",
    "parse_input_fn_result",
    "parse_features_and_labels",
    "features_and_labels",
    "distributed_iterator",
]


# (tf.data.Options path, value) that `tuned` sets where the input_fn left
# the option unset; none of them changes the elements or their order.
# Options this TensorFlow lacks are skipped.
TUNED_OPTIONS = (
    # Fuse adjacent parallel maps (stateless functions only).
    ("experimental_optimization.map_fusion", True),
    # Run stateless filter predicates in parallel, order kept.
    ("experimental_optimization.filter_parallelization", True),
    # Start the background threads when the iterator is initialised (at
    # session start), not at the first step.
    ("experimental_warm_start", True),
)
_logged = set()  # Modes whose tuning was logged (one line each).


def _unset_options(dataset):
  """A `tf.data.Options` holding TUNED_OPTIONS the dataset left unset;
  returns (options, names set)."""
  options, names, current = tf.data.Options(), [], dataset.options()
  if current.experimental_optimization.apply_default_optimizations is False:
    return options, names  # The input_fn chose its optimizations itself.
  for path, value in TUNED_OPTIONS:
    *parents, leaf = path.split(".")
    mine, theirs = options, current
    for parent in parents:
      mine, theirs = getattr(mine, parent), getattr(theirs, parent)
    if not hasattr(type(mine), leaf) or getattr(theirs, leaf) is not None:
      continue
    setattr(mine, leaf, value)
    names.append(leaf.replace("experimental_", ""))
  return options, names


def tuned(dataset, mode=None):
  """`dataset` made faster without changing its elements or their order:
  TUNED_OPTIONS where unset, then `prefetch(AUTOTUNE)`. Logs one line per
  mode per process."""
  options, names = _unset_options(dataset)
  result = dataset.with_options(options).prefetch(tf.data.AUTOTUNE)
  if mode not in _logged:
    _logged.add(mode)
    logging.info("input | input_pipeline=tuned (%s): prefetch(AUTOTUNE)%s; "
                 "same elements, same order.", mode or "dataset",
                 f" + {', '.join(names)}" if names else "")
  return result


class DatasetInitializerHook(tf.compat.v1.train.SessionRunHook):
  """Initialises an iterator each time a session is created.

  Args:
    iterator: a `tf.compat.v1.data.Iterator` or a distributed iterator.
    dataset_fn: optional callable returning the dataset to initialise the
      iterator from (called in `begin`, so its ops come after model_fn's);
      None runs the iterator's own initializer.
  """

  def __init__(self, iterator, dataset_fn=None):
    self._iterator = iterator
    self._dataset_fn = dataset_fn
    self._graph = tf.compat.v1.get_default_graph()
    self._initializer = None

  def begin(self):
    # Built here, before the graph is finalized: a distributed iterator
    # creates its initializer ops on first request.
    if self._dataset_fn is not None:
      if self._initializer is not None:
        return  # A hook reused by a later session (InMemoryEvaluatorHook).
      with self._graph.as_default():
        self._initializer = self._iterator.make_initializer(
            self._dataset_fn())
      return
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
  list or tuple that holds Tensors is left to model_fn, and one that does
  not convert as a whole (arrays of several shapes or dtypes: a Keras
  model's list of inputs) is checked item by item.
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
    if isinstance(value, (list, tuple)) and value:
      for item in value:
        _check_values(item, what)
      return
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


def initializable_iterator(dataset, input_pipeline=AS_WRITTEN, mode=None):
  """(iterator, its DatasetInitializerHook) for a local graph's dataset.

  The iterator is made from `dataset` as written; with
  `input_pipeline="tuned"` the hook initialises it from `tuned(dataset)`,
  built after model_fn (see the module docstring)."""
  iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
  dataset_fn = None
  if input_pipeline == TUNED:
    dataset_fn = lambda: tuned(dataset, mode)
  return iterator, DatasetInitializerHook(iterator, dataset_fn)


def parse_input_fn_result(result, input_pipeline=AS_WRITTEN, mode=None):
  """Returns (features, labels, input_hooks) for a non-distributed graph.

  Args:
    result: what input_fn returned.
    input_pipeline: `RunConfig.input_pipeline` ("tuned" or "as_written",
      tf.estimator 2.15's behaviour and the default here).
    mode: the ModeKey, for the log line.
  """
  hooks = []
  if isinstance(result, tf.data.Dataset):
    iterator, hook = initializable_iterator(result, input_pipeline, mode)
    hooks.append(hook)
    result = iterator.get_next()
  features, labels = parse_features_and_labels(result)
  return features, labels, hooks


def features_and_labels(input_fn, mode, params, config):
  """Calls `input_fn` in the default graph; returns features, labels, hooks."""
  result = spec_lib.call_input_fn(input_fn, mode, params, config)
  return parse_input_fn_result(result, config.input_pipeline, mode)


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

  device, context = _one_cpu_worker(strategy)
  if context is not None:
    with tf.device(device):
      iterator = tf.compat.v1.data.make_initializable_iterator(
          dataset_fn(context))
  else:
    iterator = strategy.make_input_fn_iterator(dataset_fn)
  return iterator, [DatasetInitializerHook(iterator)]


def _one_cpu_worker(strategy):
  """(device, input context) when this worker computes on one CPU device,
  else (None, None).

  Such a worker reads its batches through a plain iterator on that device:
  the input_fn is called once, with the context `make_input_fn_iterator`
  would give it, and its batch is the one replica's. TensorFlow's iterator
  for a strategy (a `MultiDeviceIterator`, which buffers each device's
  batches on a thread of its own) cost one-core collective workers 10-19 %
  of their examples/s against a plain iterator (bench/RESULTS.md, the
  `bare_input_fn` rows). Several devices or a GPU keep TensorFlow's iterator: it
  splits the batches among the devices and copies them ahead of the step.
  """
  devices = tuple(strategy.extended.worker_devices)
  if len(devices) != 1:
    return None, None
  if tf.DeviceSpec.from_string(devices[0]).device_type not in (None, "CPU"):
    return None, None
  return devices[0], _tf_private.worker_input_context(strategy)
