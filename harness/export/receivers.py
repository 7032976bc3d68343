"""Serving input receivers: what a SavedModel is fed, and the model sees.

A `serving_input_receiver_fn` takes no arguments, builds placeholders in the
current graph and returns a receiver naming them::

    def serving_input_receiver_fn():
      examples = tf.compat.v1.placeholder(tf.string, [None], name="examples")
      features = tf.io.parse_example(examples, feature_spec)
      return ServingInputReceiver(features, {"examples": examples})

or, for the common cases, is built by `build_parsing_serving_input_receiver_fn`
(serialized `tf.Example`s) or `build_raw_serving_input_receiver_fn` (raw
tensors). Rules, default names and messages follow tf.estimator 2.15.
"""

import collections

from harness import errors
from harness._tf import tf

__all__ = [
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "SupervisedInputReceiver",
    "UnsupervisedInputReceiver",
    "build_parsing_serving_input_receiver_fn",
    "build_raw_serving_input_receiver_fn",
    "build_raw_supervised_input_receiver_fn",
    "build_supervised_input_receiver_fn_from_input_fn",
    "wrap_and_check_input_tensors",
    "SINGLE_FEATURE_DEFAULT_NAME",
    "SINGLE_RECEIVER_DEFAULT_NAME",
    "SINGLE_LABEL_DEFAULT_NAME",
]

SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_RECEIVER_DEFAULT_NAME = "input"
SINGLE_LABEL_DEFAULT_NAME = "label"

_SINGLE_TENSOR_DEFAULT_NAMES = {
    "feature": SINGLE_FEATURE_DEFAULT_NAME,
    "label": SINGLE_LABEL_DEFAULT_NAME,
    "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
    "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME,
}


def _check_tensor(value, name, error_label="feature"):
  """Raises InputFnError unless `value` is a Tensor, Sparse or Ragged."""
  if isinstance(value, (tf.Tensor, tf.sparse.SparseTensor, tf.RaggedTensor)):
    return
  # tf.estimator accepted objects with a `.tensor` that convert to a Tensor
  # (LabeledTensor); keep that carve-out.
  if hasattr(value, "tensor"):
    try:
      tf.convert_to_tensor(value)
      return
    except (TypeError, ValueError):
      pass
  fmt_name = f" {name}" if name else ""
  raise errors.InputFnError(
      f"{error_label}{fmt_name} must be a Tensor, SparseTensor, or "
      f"RaggedTensor. Got "
      f"{type(value).__name__}: {value!r:.200}. Fix: build placeholders or "
      "ops in the serving_input_receiver_fn and return those.")


def _check_tensor_key(name, error_label="feature", allow_ints=False):
  if isinstance(name, str):
    return
  if not allow_ints:
    raise errors.InputFnError(f"{error_label} keys must be strings: {name}.")
  if not isinstance(name, int):
    raise errors.InputFnError(
        f"{error_label} keys must be strings or ints: {name}.")


def wrap_and_check_input_tensors(tensors, field_name, allow_int_keys=False):
  """Returns `tensors` as a dict of name to tensor, checking every entry.

  Args:
    tensors: a `Tensor`/`SparseTensor`, or a dict of `str` (or `int` if
      `allow_int_keys`) to them.
    field_name: "feature", "label", "receiver_tensor" or
      "receiver_tensors_alternative"; names a single tensor's default key.
    allow_int_keys: whether int keys are allowed.

  Returns:
    The dict given, or a single tensor wrapped in a one-entry dict.

  Raises:
    InputFnError: `tensors` is None, a key or a value has the wrong type.
  """
  if tensors is None:
    raise errors.InputFnError(f"{field_name}s must be defined.")
  if not isinstance(tensors, dict):
    tensors = {_SINGLE_TENSOR_DEFAULT_NAMES[field_name]: tensors}
  for name, value in tensors.items():
    _check_tensor_key(name, error_label=field_name, allow_ints=allow_int_keys)
    _check_tensor(value, name, error_label=field_name)
  return tensors


def _check_alternatives(alternatives):
  if alternatives is None:
    return None
  if not isinstance(alternatives, dict):
    raise errors.InputFnError(
        f"receiver_tensors_alternatives must be a dict: {alternatives}.")
  return {
      name: wrap_and_check_input_tensors(alt, "receiver_tensors_alternative")
      for name, alt in alternatives.items()
  }


class ServingInputReceiver(collections.namedtuple(
    "ServingInputReceiver",
    ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
  """What a `serving_input_receiver_fn` returns.

  Attributes:
    features: dict of string (or int) to `Tensor`/`SparseTensor` passed to
      the model; a single tensor is wrapped as {"feature": tensor} (use
      `TensorServingInputReceiver` to pass it as is).
    receiver_tensors: dict of string to `Tensor`/`SparseTensor` fed at
      serving time (a single tensor is named "input"); typically one string
      placeholder of serialized `tf.Example`s.
    receiver_tensors_alternatives: None or dict of name to further groups of
      receiver tensors, each giving extra signatures named
      "<name>:<signature key>".
  """

  def __new__(cls, features, receiver_tensors,
              receiver_tensors_alternatives=None):
    features = wrap_and_check_input_tensors(
        features, "feature", allow_int_keys=True)
    receiver_tensors = wrap_and_check_input_tensors(
        receiver_tensors, "receiver_tensor")
    receiver_tensors_alternatives = _check_alternatives(
        receiver_tensors_alternatives)
    return super().__new__(
        cls, features=features, receiver_tensors=receiver_tensors,
        receiver_tensors_alternatives=receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple(
    "TensorServingInputReceiver",
    ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
  """A serving receiver for models that take one tensor, not a dict.

  Attributes are those of `ServingInputReceiver`, except that `features` is
  the single `Tensor`/`SparseTensor` passed to the model unwrapped.
  """

  def __new__(cls, features, receiver_tensors,
              receiver_tensors_alternatives=None):
    if features is None:
      raise errors.InputFnError("features must be defined.")
    _check_tensor(features, None)
    receiver = ServingInputReceiver(
        features=features, receiver_tensors=receiver_tensors,
        receiver_tensors_alternatives=receiver_tensors_alternatives)
    return super().__new__(
        cls, features=receiver.features[SINGLE_FEATURE_DEFAULT_NAME],
        receiver_tensors=receiver.receiver_tensors,
        receiver_tensors_alternatives=receiver.receiver_tensors_alternatives)


class UnsupervisedInputReceiver(ServingInputReceiver):
  """A TRAIN/EVAL export receiver with features and no labels."""

  def __new__(cls, features, receiver_tensors):
    return super().__new__(
        cls, features=features, receiver_tensors=receiver_tensors,
        receiver_tensors_alternatives=None)


class SupervisedInputReceiver(collections.namedtuple(
    "SupervisedInputReceiver", ["features", "labels", "receiver_tensors"])):
  """What a TRAIN/EVAL export receiver returns: features and labels.

  Attributes:
    features: a `Tensor`/`SparseTensor` or a dict of them, passed to the
      model as is (not wrapped).
    labels: a `Tensor`/`SparseTensor` or a dict of them, passed as is.
    receiver_tensors: dict of string to `Tensor` fed at run time (a single
      tensor is named "input").
  """

  def __new__(cls, features, labels, receiver_tensors):
    # Checked only: features and labels reach the model_fn unwrapped.
    wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
    wrap_and_check_input_tensors(labels, "label", allow_int_keys=True)
    receiver_tensors = wrap_and_check_input_tensors(
        receiver_tensors, "receiver_tensor")
    return super().__new__(
        cls, features=features, labels=labels,
        receiver_tensors=receiver_tensors)


def build_parsing_serving_input_receiver_fn(feature_spec,
                                            default_batch_size=None):
  """A serving_input_receiver_fn that parses fed serialized `tf.Example`s.

  The receiver has one string placeholder, "input_example_tensor", fed under
  the name "examples"; the features are `tf.io.parse_example` of it.

  Args:
    feature_spec: dict of string to `FixedLenFeature`/`VarLenFeature`/...
    default_batch_size: examples per request, or None for any (recommended).

  Returns:
    A function of no arguments returning a `ServingInputReceiver`.
  """

  def serving_input_receiver_fn():
    serialized = tf.compat.v1.placeholder(
        dtype=tf.string, shape=[default_batch_size],
        name="input_example_tensor")
    features = tf.compat.v1.io.parse_example(serialized, feature_spec)
    return ServingInputReceiver(features, {"examples": serialized})

  return serving_input_receiver_fn


def _placeholder_from_tensor(value, default_batch_size=None):
  """A placeholder of `value`'s dtype and shape, batch dimension replaced."""
  shape = tf.TensorShape([default_batch_size]).concatenate(value.shape[1:])
  try:
    name = value.op.name  # Graph tensors keep their name; eager ones have none.
  except AttributeError:
    name = None
  return tf.compat.v1.placeholder(dtype=value.dtype, shape=shape, name=name)


def _placeholders_from_dict(tensors, default_batch_size=None):
  return {name: _placeholder_from_tensor(t, default_batch_size)
          for name, t in tensors.items()}


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
  """A serving_input_receiver_fn that is fed the feature tensors directly.

  Args:
    features: dict of string to `Tensor`, giving the dtype and shape (batch
      dimension first) of each fed feature.
    default_batch_size: examples per request, or None for any (recommended).

  Returns:
    A function of no arguments returning a `ServingInputReceiver` whose
    features are its receiver tensors.
  """

  def serving_input_receiver_fn():
    placeholders = _placeholders_from_dict(features, default_batch_size)
    return ServingInputReceiver(placeholders, placeholders)

  return serving_input_receiver_fn


def build_raw_supervised_input_receiver_fn(features, labels,
                                           default_batch_size=None):
  """A receiver_fn for TRAIN/EVAL exports fed raw features and labels.

  Args:
    features: a `Tensor` or dict of string to `Tensor`, shaped as the
      model_fn expects them (batch dimension first).
    labels: a `Tensor` or dict of string to `Tensor`.
    default_batch_size: examples per request, or None for any (recommended).

  Returns:
    A function of no arguments returning a `SupervisedInputReceiver`.

  Raises:
    InputFnError: features and labels share a key.
  """
  feature_keys = (features.keys() if isinstance(features, dict)
                  else [SINGLE_RECEIVER_DEFAULT_NAME])
  label_keys = (labels.keys() if isinstance(labels, dict)
                else [SINGLE_LABEL_DEFAULT_NAME])
  overlap = set(feature_keys) & set(label_keys)
  if overlap:
    raise errors.InputFnError(
        "Features and labels must have distinct keys. Found overlapping "
        f"keys: {overlap}. Fix: rename the label entries.")

  def _placeholders(tensors, single_name):
    if isinstance(tensors, dict):
      fed = _placeholders_from_dict(tensors, default_batch_size)
      return fed, fed
    placeholder = _placeholder_from_tensor(tensors, default_batch_size)
    return placeholder, {single_name: placeholder}

  def supervised_input_receiver_fn():
    model_features, fed_features = _placeholders(
        features, SINGLE_RECEIVER_DEFAULT_NAME)
    model_labels, fed_labels = _placeholders(labels, SINGLE_LABEL_DEFAULT_NAME)
    receiver_tensors = dict(fed_features)
    receiver_tensors.update(fed_labels)
    return SupervisedInputReceiver(
        model_features, model_labels, receiver_tensors)

  return supervised_input_receiver_fn


def build_supervised_input_receiver_fn_from_input_fn(input_fn,
                                                     **input_fn_args):
  """A supervised receiver_fn with placeholders shaped as `input_fn`'s output.

  As 2.15: `input_fn(**input_fn_args)` runs in a throw-away graph; its
  (features, labels), or a dataset's element, give the placeholders'
  dtypes and shapes in the default graph when the receiver_fn is called.

  Raises:
    InputFnError: input_fn does not return a (features, labels) pair.
  """
  with tf.Graph().as_default():
    result = input_fn(**input_fn_args)
    if isinstance(result, tf.data.Dataset):
      result = tf.compat.v1.data.make_one_shot_iterator(result).get_next()
    if not isinstance(result, (list, tuple)) or len(result) != 2:
      raise errors.InputFnError(
          "input_fn should return (features, labels) as a len 2 tuple. It "
          f"returned {type(result).__name__}. Fix: return both, as for "
          "training.")
    features, labels = result
  return build_raw_supervised_input_receiver_fn(features, labels)
