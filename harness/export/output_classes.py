"""The export output classes: what one SavedModel signature returns.

    output = output_classes.PredictOutput({"probabilities": probs})
    signature_def = output.as_signature_def({"image": image_placeholder})

`ClassificationOutput`, `RegressionOutput` and `PredictOutput` are the
serving outputs a `model_fn` names in `EstimatorSpec.export_outputs`;
`TrainOutput` and `EvalOutput` hold the loss, predictions and metrics of the
TRAIN and EVAL graphs of an export. Each checks its tensors as tf.estimator
2.15 did (same error wording) and builds its SignatureDef with the public
`tf.compat.v1.saved_model` functions. Re-exported by `harness.export.outputs`,
which turns them into a model's signatures.
"""

import abc

from harness import errors
from harness._tf import tf

__all__ = [
    "ExportOutput",
    "ClassificationOutput",
    "RegressionOutput",
    "PredictOutput",
    "TrainOutput",
    "EvalOutput",
    "UnservableError",
]

TRAIN_METHOD_NAME = "tensorflow/supervised/training"
EVAL_METHOD_NAME = "tensorflow/supervised/eval"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"


class ExportOutput(abc.ABC):
  """An output of a model that can be served; usually one model head."""

  _SEPARATOR_CHAR = "/"

  @classmethod
  def __subclasshook__(cls, subclass):
    # tf.estimator 2.15's export outputs were TensorFlow's own classes
    # (`tensorflow.python.saved_model.model_utils.export_output`), which
    # TF 2.21 still ships and some code still builds: anything that makes a
    # SignatureDef with `as_signature_def` serves as an ExportOutput.
    if cls is ExportOutput and any(
        callable(vars(base).get("as_signature_def"))
        for base in subclass.__mro__):
      return True
    return NotImplemented

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


class UnservableError(errors.ModelFnError):
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
    raise UnservableError(message, short)
  (_, examples), = receiver_tensors.items()
  if tf.as_dtype(examples.dtype) != tf.string:
    raise UnservableError(message, short)
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
  _METHOD_NAME = TRAIN_METHOD_NAME


class EvalOutput(_SupervisedOutput):
  """Loss, predictions and metrics of an evaluation graph."""
  _METHOD_NAME = EVAL_METHOD_NAME
