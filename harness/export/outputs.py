"""Export outputs: what a SavedModel signature returns, and how it is built.

A `model_fn` names what serving returns through `EstimatorSpec.export_outputs`,
a dict from signature name to an `ExportOutput`::

    export_outputs = {
        "serving_default": PredictOutput({"probabilities": probs}),
        "classify": ClassificationOutput(scores=probs, classes=class_names),
    }

The rules (and error wording) are tf.estimator 2.15's; the SignatureDefs are
built with the public `tf.compat.v1.saved_model` functions.
"""

import abc
import collections

from absl import logging

from harness import errors
from harness._tf import tf

__all__ = [
    "ExportOutput",
    "ClassificationOutput",
    "RegressionOutput",
    "PredictOutput",
    "TrainOutput",
    "EvalOutput",
    "get_export_outputs",
    "export_outputs_for_mode",
    "build_all_signature_defs",
    "DEFAULT_SERVING_KEY",
    "SINGLE_RECEIVER_DEFAULT_NAME",
]

DEFAULT_SERVING_KEY = "serving_default"
SINGLE_RECEIVER_DEFAULT_NAME = "input"

_TRAIN_METHOD_NAME = "tensorflow/supervised/training"
_EVAL_METHOD_NAME = "tensorflow/supervised/eval"
_CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
_REGRESS_METHOD_NAME = "tensorflow/serving/regress"
_PREDICT_METHOD_NAME = "tensorflow/serving/predict"

# Mode strings (harness.spec.ModeKeys and Keras' spelling) to signature keys.
_SIGNATURE_KEY_BY_MODE = {
    "train": "train",
    "eval": "eval",
    "test": "eval",
    "infer": DEFAULT_SERVING_KEY,
    "predict": DEFAULT_SERVING_KEY,
}


class _ExportOutputsTypeError(errors.ModelFnError, TypeError):
  """`export_outputs` has the wrong type (a TypeError, as in tf.estimator)."""


class ExportOutput(abc.ABC):
  """An output of a model that can be served; usually one model head."""

  _SEPARATOR_CHAR = "/"

  @abc.abstractmethod
  def as_signature_def(self, receiver_tensors):
    """Builds the SignatureDef proto of this output.

    Args:
      receiver_tensors: dict from input name to the `Tensor` fed at serving.

    Returns:
      A `SignatureDef` proto.
    """

  def _check_output_key(self, key, error_label):
    if isinstance(key, tuple):  # Multi-head models key by tuples.
      key = self._SEPARATOR_CHAR.join(key)
    if not isinstance(key, str):
      raise errors.ModelFnError(
          f"{error_label} output key must be a string; got {key}.")
    return key

  def _wrap_and_check_outputs(self, outputs, single_output_default_name,
                              error_label=None):
    if not isinstance(outputs, dict):
      outputs = {single_output_default_name: outputs}
    error_name = error_label or single_output_default_name
    checked = {}
    for key, value in outputs.items():
      key = self._check_output_key(key, error_name)
      if not isinstance(value, tf.Tensor):
        raise errors.ModelFnError(
            f"{error_name} output value must be a Tensor; got {value}.")
      checked[key] = value
    return checked


class _UnservableError(errors.ModelFnError):
  """A signature TensorFlow Serving could not serve; `short` says why in a
  few words (the export's INFO line), the message in full (DEBUG)."""

  def __init__(self, message, short):
    super().__init__(message)
    self.short = short


def _describe_inputs(receiver_tensors, limit=3):
  """"'image' float32" / "'a', 'b', 'c', ..." for a one-line reason."""
  names = [f"'{k}'" for k in list(receiver_tensors)[:limit]]
  if len(receiver_tensors) == 1:
    (tensor,) = receiver_tensors.values()
    return f"{names[0]} {tf.as_dtype(tensor.dtype).name}"
  more = ", ..." if len(receiver_tensors) > limit else ""
  return ", ".join(names) + more if names else "none"


def _single_string_input(receiver_tensors, kind):
  """The one string input a Classify/Regress signature accepts."""
  message = (
      f"{kind} signatures can only accept a single tensor input of type "
      "tf.string. Please check to make sure that you have structured the "
      "serving_input_receiver_fn so that it creates a single string "
      "placeholder. If your model function expects multiple inputs, then use "
      "`tf.io.parse_example()` to parse the string into multiple tensors.\n "
      f"Received: {receiver_tensors}")
  short = (f"needs a tf.string input, got "
           f"{_describe_inputs(receiver_tensors)}")
  if len(receiver_tensors) != 1:
    raise _UnservableError(message, short)
  (_, examples), = receiver_tensors.items()
  if tf.as_dtype(examples.dtype) != tf.string:
    raise _UnservableError(message, short)
  return examples


class ClassificationOutput(ExportOutput):
  """The output of a classification head: `scores`, `classes` or both.

  `classes` holds string labels (not integer ids). With only `classes`, they
  are top-k results in descending order; with only `scores`, one score per
  class id; with both, they are zipped.
  """

  def __init__(self, scores=None, classes=None):
    """Creates a ClassificationOutput.

    Args:
      scores: a float `Tensor` of scores, or None if `classes` is set.
      classes: a string `Tensor` of class labels, or None if `scores` is set.

    Raises:
      ModelFnError: neither is set, or one has the wrong type.
    """
    if scores is not None and not (
        isinstance(scores, tf.Tensor) and scores.dtype.is_floating):
      raise errors.ModelFnError(
          f"Classification scores must be a float32 Tensor; got {scores}")
    if classes is not None and not (
        isinstance(classes, tf.Tensor) and
        tf.as_dtype(classes.dtype) == tf.string):
      raise errors.ModelFnError(
          f"Classification classes must be a string Tensor; got {classes}. "
          "Fix: map class ids to names, e.g. with tf.gather(class_names, ids) "
          "or tf.strings.as_string(ids).")
    if scores is None and classes is None:
      raise errors.ModelFnError(
          "Cannot create a ClassificationOutput with empty arguments. At "
          "least one of `scores` and `classes` must be defined.")
    self._scores = scores
    self._classes = classes

  @property
  def scores(self):
    return self._scores

  @property
  def classes(self):
    return self._classes

  def as_signature_def(self, receiver_tensors):
    examples = _single_string_input(receiver_tensors, "Classification")
    return tf.compat.v1.saved_model.classification_signature_def(
        examples, self.classes, self.scores)


class RegressionOutput(ExportOutput):
  """The output of a regression head: one float `Tensor`."""

  def __init__(self, value):
    """Creates a RegressionOutput.

    Args:
      value: a float `Tensor` of predicted values.

    Raises:
      ModelFnError: `value` is not a float `Tensor`.
    """
    if not (isinstance(value, tf.Tensor) and value.dtype.is_floating):
      raise errors.ModelFnError(
          f"Regression output value must be a float32 Tensor; got {value}")
    self._value = value

  @property
  def value(self):
    return self._value

  def as_signature_def(self, receiver_tensors):
    examples = _single_string_input(receiver_tensors, "Regression")
    return tf.compat.v1.saved_model.regression_signature_def(
        examples, self.value)


class PredictOutput(ExportOutput):
  """The output of a generic prediction head: named `Tensor`s."""

  _SINGLE_OUTPUT_DEFAULT_NAME = "output"

  def __init__(self, outputs):
    """Creates a PredictOutput.

    Args:
      outputs: a `Tensor` (named "output") or a dict of string to `Tensor`.

    Raises:
      ModelFnError: a key is not a string or a value is not a `Tensor`.
    """
    self._outputs = self._wrap_and_check_outputs(
        outputs, self._SINGLE_OUTPUT_DEFAULT_NAME, error_label="Prediction")

  @property
  def outputs(self):
    return self._outputs

  def as_signature_def(self, receiver_tensors):
    return tf.compat.v1.saved_model.predict_signature_def(
        receiver_tensors, self.outputs)


class _SupervisedOutput(ExportOutput):
  """Loss, predictions and metrics of a training or evaluation graph."""

  LOSS_NAME = "loss"
  PREDICTIONS_NAME = "predictions"
  METRICS_NAME = "metrics"
  METRIC_VALUE_SUFFIX = "value"
  METRIC_UPDATE_SUFFIX = "update_op"
  _METHOD_NAME = None

  def __init__(self, loss=None, predictions=None, metrics=None):
    """Creates the output.

    Args:
      loss: a `Tensor` or dict of `Tensor`s.
      predictions: a `Tensor` or dict of `Tensor`s.
      metrics: a `(value, update_op)` tuple, a tf_keras `Metric`, or a dict
        of them keyed by name.

    Raises:
      ModelFnError: a key is not a string or a value has the wrong type.
    """
    self._loss = None
    self._predictions = None
    self._metrics = None
    if loss is not None:
      self._loss = self._prefixed(
          self._wrap_and_check_outputs(loss, self.LOSS_NAME), self.LOSS_NAME)
    if predictions is not None:
      self._predictions = self._prefixed(
          self._wrap_and_check_outputs(predictions, self.PREDICTIONS_NAME),
          self.PREDICTIONS_NAME)
    if metrics is not None:
      self._metrics = self._wrap_and_check_metrics(metrics)

  def _prefix_key(self, key, prefix):
    if key.find(prefix) != 0:
      key = prefix + self._SEPARATOR_CHAR + key
    return key

  def _prefixed(self, outputs, prefix):
    return {self._prefix_key(k, prefix): v for k, v in outputs.items()}

  def _wrap_and_check_metrics(self, metrics):
    if not isinstance(metrics, dict):
      metrics = {self.METRICS_NAME: metrics}
    outputs = {}
    for key, metric in metrics.items():
      if isinstance(metric, (tuple, list)):
        value, update_op = metric
      else:  # A tf_keras Metric object.
        value = metric.result()
        update_op = metric.updates[0]
      key = self._prefix_key(
          self._check_output_key(key, self.METRICS_NAME), self.METRICS_NAME)
      if not isinstance(value, tf.Tensor):
        raise errors.ModelFnError(
            f"{key} output value must be a Tensor; got {value}.")
      if not (tf.is_tensor(update_op) or isinstance(update_op, tf.Operation)):
        raise errors.ModelFnError(
            f"{key} update_op must be a Tensor or Operation; got {update_op}.")
      if not isinstance(update_op, tf.Tensor):
        # A SignatureDef holds tensors only: wrap the op in an empty constant.
        with tf.control_dependencies([update_op]):
          update_op = tf.constant([], name="metric_op_wrapper")
      sep = self._SEPARATOR_CHAR
      outputs[key + sep + self.METRIC_VALUE_SUFFIX] = value
      outputs[key + sep + self.METRIC_UPDATE_SUFFIX] = update_op
    return outputs

  @property
  def loss(self):
    return self._loss

  @property
  def predictions(self):
    return self._predictions

  @property
  def metrics(self):
    return self._metrics

  def as_signature_def(self, receiver_tensors):
    if not receiver_tensors:
      raise errors.ModelFnError(
          f"{self._METHOD_NAME} `inputs` cannot be None or empty.")
    info = tf.compat.v1.saved_model.build_tensor_info
    outputs = {}
    for group in (self._loss, self._predictions, self._metrics):
      outputs.update({k: info(v) for k, v in (group or {}).items()})
    return tf.compat.v1.saved_model.build_signature_def(
        inputs={k: info(v) for k, v in receiver_tensors.items()},
        outputs=outputs, method_name=self._METHOD_NAME)


class TrainOutput(_SupervisedOutput):
  """Loss, predictions and metrics of a training graph."""
  _METHOD_NAME = _TRAIN_METHOD_NAME


class EvalOutput(_SupervisedOutput):
  """Loss, predictions and metrics of an evaluation graph."""
  _METHOD_NAME = _EVAL_METHOD_NAME


def get_export_outputs(export_outputs, predictions):
  """Validates `export_outputs`, or makes the default one from predictions.

  Args:
    export_outputs: dict from signature name to `ExportOutput`, or None.
    predictions: a `Tensor` or dict of `Tensor`s, used when
      `export_outputs` is None.

  Returns:
    A dict with a "serving_default" entry (a single output is also made the
    default).

  Raises:
    TypeError: (a ModelFnError) `export_outputs` is not a dict of
      `ExportOutput`s.
    ModelFnError: several outputs and none is "serving_default".
  """
  if export_outputs is None:
    export_outputs = {DEFAULT_SERVING_KEY: PredictOutput(predictions)}
  if not isinstance(export_outputs, dict):
    raise _ExportOutputsTypeError(
        f"`export_outputs` must be dict, received: {export_outputs}.")
  for value in export_outputs.values():
    if not isinstance(value, ExportOutput):
      raise _ExportOutputsTypeError(
          "Values in `export_outputs` must be ExportOutput objects, "
          f"received: {export_outputs}. Fix: wrap tensors, e.g. "
          "{'serving_default': tf.estimator.export.PredictOutput(tensors)}.")
  export_outputs = dict(export_outputs)
  if len(export_outputs) == 1:
    (value,) = export_outputs.values()
    export_outputs.setdefault(DEFAULT_SERVING_KEY, value)
  if DEFAULT_SERVING_KEY not in export_outputs:
    raise errors.ModelFnError(
        "Multiple `export_outputs` were provided, but none of them are "
        "specified as the default. Use "
        "`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY` to specify a "
        f"default. Keys given: {sorted(map(str, export_outputs))}.")
  return export_outputs


def export_outputs_for_mode(mode, serving_export_outputs=None,
                            predictions=None, loss=None, metrics=None):
  """The `ExportOutput` dict of one mode's SavedModel graph.

  Args:
    mode: a `harness.spec.ModeKeys` value.
    serving_export_outputs: `EstimatorSpec.export_outputs` (PREDICT only).
    predictions: a `Tensor` or dict of `Tensor`s.
    loss: a `Tensor` or dict of `Tensor`s (TRAIN and EVAL).
    metrics: `EstimatorSpec.eval_metric_ops` (TRAIN and EVAL).

  Returns:
    dict from signature key to `ExportOutput`: the serving outputs in
    PREDICT, {"train": TrainOutput} or {"eval": EvalOutput} otherwise.

  Raises:
    ConfigError: `mode` is not a known mode.
  """
  if mode not in _SIGNATURE_KEY_BY_MODE:
    raise errors.ConfigError(
        f"Export output type not found for `mode`: {mode!r}. Expected one "
        "of: ModeKeys.TRAIN ('train'), ModeKeys.EVAL ('eval'), "
        "ModeKeys.PREDICT ('infer').")
  key = _SIGNATURE_KEY_BY_MODE[mode]
  if key == DEFAULT_SERVING_KEY:
    return get_export_outputs(serving_export_outputs, predictions)
  output_cls = TrainOutput if key == "train" else EvalOutput
  return {key: output_cls(loss=loss, predictions=predictions, metrics=metrics)}


def _output_tensors(signature, graph):
  for info in signature.outputs.values():
    encoding = info.WhichOneof("encoding")
    if encoding == "name":
      yield graph.get_tensor_by_name(info.name)
    elif encoding == "coo_sparse":
      sparse = info.coo_sparse
      for name in (sparse.values_tensor_name, sparse.indices_tensor_name,
                   sparse.dense_shape_tensor_name):
        yield graph.get_tensor_by_name(name)


def _flat_tensors(tensors):
  flat = []
  for value in tensors:
    if isinstance(value, tf.sparse.SparseTensor):
      flat.extend([value.indices, value.values, value.dense_shape])
    else:
      flat.append(value)
  return flat


def _ensure_servable(input_tensors, signature):
  """Raises ValueError if an output needs a placeholder that is not an input.

  Walks the graph back from the signature's outputs, stopping at its inputs;
  a placeholder reached on the way could never be fed at serving time.
  """
  inputs = _flat_tensors(input_tensors)
  if not inputs:
    return
  graph = inputs[0].graph
  fed = {t.name for t in inputs}
  stack = [t.op for t in _output_tensors(signature, graph)
           if t.name not in fed]
  seen = set()
  while stack:
    op = stack.pop()
    if op.name in seen:
      continue
    seen.add(op.name)
    if op.type in ("Placeholder", "PlaceholderV2") and not all(
        t.name in fed for t in op.outputs):
      raise _UnservableError(
          f"The signature's input tensors {[t.name for t in inputs]} are "
          f"insufficient to compute its output keys {list(signature.outputs)} "
          f"because of the dependency on `{op.name}` which is not given as a "
          "signature input. Fix: feed it from the serving_input_receiver_fn "
          "(receiver_tensors) or do not use it in the exported outputs.",
          f"needs `{op.name}`, which the receiver does not feed")
    stack.extend(t.op for t in op.inputs if t.name not in fed)
    stack.extend(op.control_inputs)


def _log_signature_report(included, excluded, serving_only):
  """Logs which signatures are exported and which were dropped, and why."""
  friendly = {
      _CLASSIFY_METHOD_NAME: "Classify", _REGRESS_METHOD_NAME: "Regress",
      _PREDICT_METHOD_NAME: "Predict", _TRAIN_METHOD_NAME: "Train",
      _EVAL_METHOD_NAME: "Eval"}
  by_method = collections.defaultdict(list)
  for name, signature in included.items():
    by_method[friendly.get(signature.method_name,
                           signature.method_name)].append(name)
  logging.info("export | signatures INCLUDED: %s", "; ".join(
      f"{method}: {names}" for method, names in by_method.items()) or "None")
  for name, (why, short) in excluded.items():
    # One line at INFO; the whole reason (with the fix) at DEBUG.
    logging.info("export | signature '%s' EXCLUDED: %s", name,
                 short or why.split(". ")[0][:80])
    logging.debug("Signature EXCLUDED from export because it cannot be "
                  "served via TensorFlow Serving APIs: '%s' : %s", name, why)
  if not included:
    logging.warning("Export includes no signatures!")
  elif serving_only and DEFAULT_SERVING_KEY not in included:
    logging.warning("Export includes no default signature!")


def _as_input_dict(receiver_tensors):
  if not isinstance(receiver_tensors, dict):
    return {SINGLE_RECEIVER_DEFAULT_NAME: receiver_tensors}
  return receiver_tensors


def build_all_signature_defs(receiver_tensors, export_outputs,
                             receiver_tensors_alternatives=None,
                             serving_only=True):
  """SignatureDefs for every export output and receiver alternative.

  A signature whose output cannot be built from the given inputs (e.g. a
  Classify signature fed by float tensors) is left out, and the log says
  which and why, as tf.estimator did. Alternatives are named
  "<alternative>:<output key>".

  Args:
    receiver_tensors: a `Tensor` or dict of string to `Tensor`.
    export_outputs: dict from signature key to `ExportOutput`.
    receiver_tensors_alternatives: dict from name to a `Tensor` or dict of
      `Tensor`s, each giving extra signatures; or None.
    serving_only: if True, only signatures valid for TF Serving are kept.

  Returns:
    dict from signature key to `SignatureDef`.

  Raises:
    ModelFnError: `export_outputs` is not a dict.
  """
  if not isinstance(export_outputs, dict):
    raise errors.ModelFnError(
        f"`export_outputs` must be a dict. Received {export_outputs} with "
        f"type {type(export_outputs).__name__}.")
  groups = [(None, _as_input_dict(receiver_tensors))]
  for alt_name, alt in (receiver_tensors_alternatives or {}).items():
    groups.append((alt_name or "None", _as_input_dict(alt)))
  included, excluded = {}, {}
  for alt_name, inputs in groups:
    for output_key, export_output in export_outputs.items():
      name = f"{output_key or 'None'}"
      if alt_name is not None:
        name = f"{alt_name}:{name}"
      try:
        signature = export_output.as_signature_def(inputs)
        _ensure_servable(inputs.values(), signature)
      except ValueError as e:
        excluded[name] = (str(e), getattr(e, "short", None))
        continue
      included[name] = signature
  _log_signature_report(included, excluded, serving_only)
  if serving_only:
    included = {k: v for k, v in included.items()
                if tf.compat.v1.saved_model.is_valid_signature(v)}
  return included
