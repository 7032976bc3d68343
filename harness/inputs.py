"""Input functions over in-memory numpy arrays and pandas DataFrames.

As tf.estimator 2.15's `tf.compat.v1.estimator.inputs.numpy_input_fn` and
`pandas_input_fn` (same arguments, checks and output structure), built on
tf.data instead of queue runners::

    input_fn = inputs.numpy_input_fn(
        {"x": train_x}, train_y, batch_size=32, num_epochs=None, shuffle=True)
    estimator.train(input_fn, max_steps=1000)

The returned `input_fn()` returns `(features, labels)` tensors (features
alone when `y` is None) from a one-shot iterator, so it also works when
legacy code calls it inside its own graph. The last partial batch is kept;
`num_epochs=None` repeats forever in full batches.

Small data (up to 1 MiB) is embedded in the graph as constants; larger data
stays in Python memory and each batch is gathered by a `tf.numpy_function`,
which keeps checkpoints' meta graphs small but needs the input pipeline to
run in this process (true for every harness mode except a standalone client
driving remote servers).
"""

import collections
import functools

import numpy as np

from harness import errors
from harness import spec as spec_lib
from harness._tf import tf

__all__ = ["numpy_input_fn", "pandas_input_fn"]

_EMBED_LIMIT_BYTES = 1 << 20
_MAX_FULL_SHUFFLE_ROWS = 1 << 20


class _ArgumentTypeError(errors.InputFnError, TypeError):
  """An argument has the wrong type (a TypeError, as in tf.estimator)."""


def _check_common_args(shuffle, batch_size, num_epochs):
  if not isinstance(shuffle, bool):
    raise errors.InputFnError(
        "shuffle must be provided and explicitly set as boolean (it is "
        f"recommended to set it as True for training); got {shuffle}")
  if isinstance(batch_size, bool) or not isinstance(
      batch_size, (int, np.integer)) or batch_size <= 0:
    raise errors.InputFnError(
        f"batch_size must be a positive int, got {batch_size!r}.")
  if num_epochs is not None and (isinstance(num_epochs, bool) or not isinstance(
      num_epochs, (int, np.integer)) or num_epochs <= 0):
    raise errors.InputFnError(
        f"num_epochs must be a positive int or None (repeat forever), got "
        f"{num_epochs!r}.")


def _as_array(value):
  """Returns `value` as an ndarray, strings as an object array of bytes."""
  array = np.asarray(value)
  if array.dtype.kind in "UO":
    encode = np.vectorize(
        lambda s: s.encode("utf-8") if isinstance(s, str) else s,
        otypes=[object])
    array = encode(array) if array.size else array.astype(object)
  return array


def _validate_and_convert_features(x):
  """Returns x as an OrderedDict of arrays, sorted by key (as 2.15)."""
  if isinstance(x, dict):
    if not x:
      raise errors.InputFnError("x cannot be an empty dict")
    return collections.OrderedDict(
        sorted((k, _as_array(v)) for k, v in x.items()))
  if isinstance(x, np.ndarray):
    if x.size == 0:
      raise errors.InputFnError("x cannot be an empty array")
    return collections.OrderedDict({"__direct_np_input__": _as_array(x)})
  raise _ArgumentTypeError(
      f"x must be a dict or array; got {type(x).__name__}")


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                   queue_capacity=1000, num_threads=1):
  """Returns an input_fn that feeds numpy arrays in batches.

  Args:
    x: an ndarray (one feature, returned as a Tensor) or a dict of ndarrays
      (returned as a dict of Tensors with the same keys).
    y: None, an ndarray (labels Tensor) or a dict of ndarrays (labels dict).
    batch_size: int, rows per batch.
    num_epochs: int, passes over the data; None repeats forever.
    shuffle: bool, required: whether to read rows in random order.
    queue_capacity: int, the shuffle buffer (at least min(rows, 2**20) rows
      are shuffled together).
    num_threads: int, parallel batch assembly (order stays deterministic).

  Returns:
    A function of no arguments returning `(features, labels)` Tensors, or
    features alone when `y` is None.

  Raises:
    InputFnError (ValueError): `shuffle` not a bool, lengths of x and y
      differ, duplicate keys in x and y, empty x or y.
    TypeError (InputFnError): `x` is neither a dict nor an ndarray.
  """
  _check_common_args(shuffle, batch_size, num_epochs)
  features = _validate_and_convert_features(x)
  if y is None:
    targets = None
  elif isinstance(y, dict):
    if not y:
      raise errors.InputFnError("y cannot be empty dict, use None instead.")
    targets = collections.OrderedDict(
        sorted((k, _as_array(v)) for k, v in y.items()))
    duplicates = set(features) & set(targets)
    if duplicates:
      raise errors.InputFnError(
          f"{len(duplicates)} duplicate keys are found in both x and y: "
          f"{duplicates}")
  else:
    targets = _as_array(y)
  arrays = list(features.values()) + (
      [] if targets is None else
      list(targets.values()) if isinstance(targets, dict) else [targets])
  if len({a.shape[0] if a.ndim else None for a in arrays}) != 1:
    if targets is None or not isinstance(targets, dict):
      y_shapes = None if targets is None else targets.shape
    else:
      y_shapes = {k: v.shape for k, v in targets.items()}
    raise errors.InputFnError(
        "Length of tensors in x and y is mismatched. All elements in x and y "
        "must have the same length.\nShapes in x: "
        f"{ {k: v.shape for k, v in features.items()} }\n"
        f"Shapes in y: {y_shapes}\n")
  data, target_keys = _pack(features, targets)

  def outputs(batch):
    if isinstance(x, np.ndarray):
      features_out = batch["f0"]
    else:
      features_out = {name: batch[key] for key, name in zip(data, features)}
    return _with_targets(features_out, batch, target_keys)

  return _input_fn(functools.partial(
      _batches, data, batch_size, num_epochs, shuffle, queue_capacity,
      num_threads, outputs), "Numpy input function: (features, labels) "
                     "Tensors of one batch.")


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                    queue_capacity=1000, num_threads=1,
                    target_column="target"):
  """Returns an input_fn that feeds a pandas DataFrame in batches.

  Args:
    x: a pandas DataFrame; each column becomes a feature of that name.
    y: None, a Series (labels Tensor) or a DataFrame (labels dict by column);
      its index must equal x's.
    batch_size: int, rows per batch.
    num_epochs: int, passes over the data; None repeats forever.
    shuffle: bool, required: whether to read rows in random order.
    queue_capacity: int, the shuffle buffer; None means len(x) (4 * len(x)
      when shuffling), as 2.15.
    num_threads: int, parallel batch assembly (order stays deterministic).
    target_column: str, must not be a column of x when y is given (2.15
      used it as the label's temporary column name).

  Returns:
    A function of no arguments returning `(features dict, labels)` Tensors,
    or the features dict alone when `y` is None.

  Raises:
    NotSupportedError: pandas is not installed.
    InputFnError (ValueError): `shuffle` not a bool, `target_column` already
      a column of x, indexes of x and y differ.
    TypeError (InputFnError): `target_column` is not a str, x is not a
      DataFrame.
  """
  try:
    import pandas as pd  # lazy: optional dependency (pandas)  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise errors.NotSupportedError(
        "pandas_input_fn should not be called without pandas installed "
        f"({e}). Fix: `pip install pandas`, or convert the DataFrame "
        "with numpy_input_fn({name: df[name].to_numpy() for name in df}, "
        "...).") from e
  _check_common_args(shuffle, batch_size, num_epochs)
  if not isinstance(target_column, str):
    raise _ArgumentTypeError("target_column must be a string type")
  if not isinstance(x, pd.DataFrame):
    raise _ArgumentTypeError(
        f"x must be a pandas DataFrame; got {type(x).__name__}")
  features = collections.OrderedDict(
      (name, _as_array(x[name].to_numpy())) for name in x.columns)
  targets = None
  if y is not None:
    if target_column in x:
      raise errors.InputFnError(
          f"Cannot use name {target_column} for target column: DataFrame "
          f"already has a column with that name: {x.columns}")
    if not np.array_equal(x.index, y.index):
      raise errors.InputFnError(
          "Index for x and y are mismatched.\nIndex for x: "
          f"{x.index}\nIndex for y: {y.index}\n")
    if isinstance(y, pd.DataFrame):
      targets = collections.OrderedDict(
          (name, _as_array(y[name].to_numpy())) for name in y.columns)
    else:
      targets = _as_array(y.to_numpy())
  if queue_capacity is None:
    queue_capacity = 4 * len(x) if shuffle else len(x)
  data, target_keys = _pack(features, targets)

  def outputs(batch):
    feature_dict = {name: batch[key] for key, name in zip(data, x.columns)}
    return _with_targets(feature_dict, batch, target_keys)

  return _input_fn(functools.partial(
      _batches, data, batch_size, num_epochs, shuffle, queue_capacity,
      num_threads, outputs), "Pandas input function: (features dict, "
                     "labels) Tensors of one batch.")


def _with_targets(features, batch, target_keys):
  if target_keys is None:
    return features
  if isinstance(target_keys, str):
    return features, batch[target_keys]
  return features, {name: batch[key] for name, key in target_keys}


def _pack(features, targets):
  """Puts features and targets in one dict with generated string keys."""
  data = collections.OrderedDict(
      (f"f{i}", array) for i, array in enumerate(features.values()))
  if targets is None:
    return data, None
  if isinstance(targets, dict):
    target_keys = []
    for i, (name, array) in enumerate(targets.items()):
      data[f"t{i}"] = array
      target_keys.append((name, f"t{i}"))
    return data, target_keys
  data["t"] = targets
  return data, "t"


def _input_fn(batches, doc):
  """The input_fn: the next batch of `batches()` as Tensors, as 2.15's
  returned. It carries `batches` as `spec.DATASET_FN_ATTR`: harness itself
  trains from the Dataset (so steps_per_loop > 1, input_pipeline and
  distribution strategies apply), with the same batches in the same order.
  """

  def input_fn():
    return tf.compat.v1.data.make_one_shot_iterator(batches()).get_next()

  input_fn.__doc__ = doc
  setattr(input_fn, spec_lib.DATASET_FN_ATTR, batches)
  return input_fn


def _batches(data, batch_size, num_epochs, shuffle, queue_capacity,
             num_threads, outputs):
  """A Dataset of `outputs({key: rows})` batches of `data`'s arrays."""
  num_rows = len(next(iter(data.values())))
  dataset = tf.data.Dataset.range(num_rows)
  if shuffle:
    buffer_size = max(int(queue_capacity or 1),
                      min(num_rows, _MAX_FULL_SHUFFLE_ROWS))
    dataset = dataset.shuffle(buffer_size, reshuffle_each_iteration=True)
  dataset = dataset.repeat(num_epochs)
  dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)
  gather = _gather_fn(data)
  dataset = dataset.map(lambda indices: outputs(gather(indices)),
                        num_parallel_calls=num_threads)
  return dataset.prefetch(1)


def _tf_dtype(array):
  return tf.string if array.dtype == object else tf.as_dtype(array.dtype)


def _gather_fn(data):
  """Returns a function mapping a batch of row indices to {key: rows}."""
  keys = list(data)
  nbytes = sum(
      a.nbytes if a.dtype != object else sum(
          len(v) if isinstance(v, bytes) else 8 for v in a.ravel())
      for a in data.values())
  if nbytes <= _EMBED_LIMIT_BYTES:

    def gather_constants(indices):
      return {key: tf.gather(tf.constant(data[key]), indices) for key in keys}

    return gather_constants

  arrays = [data[k] for k in keys]
  dtypes = [_tf_dtype(a) for a in arrays]

  def gather_numpy(indices):
    rows = tf.numpy_function(
        lambda idx: [a[idx] for a in arrays], [indices], dtypes,
        stateful=False)
    batch = {}
    for key, array, tensor in zip(keys, arrays, rows):
      tensor.set_shape(indices.shape.concatenate(array.shape[1:]))
      batch[key] = tensor
    return batch

  return gather_numpy
