"""Export outputs: what a SavedModel signature returns, and how it is built.

A `model_fn` names what serving returns through `EstimatorSpec.export_outputs`,
a dict from signature name to an `ExportOutput`::

    export_outputs = {
        "serving_default": PredictOutput({"probabilities": probs}),
        "classify": ClassificationOutput(scores=probs, classes=class_names),
    }

The rules (and error wording) are tf.estimator 2.15's; the SignatureDefs are
built with the public `tf.compat.v1.saved_model` functions. The classes live
in `export/output_classes.py` (re-exported here); this module checks a
model's `export_outputs` and builds every signature of an export from them.
"""

import collections

from absl import logging

from harness import errors
from harness._tf import tf
from harness.export import output_classes
# Re-exported: `harness.export.outputs.X` is their public path (and 2.15's
# `export_output` module's, through harness.compat).
from harness.export.output_classes import ClassificationOutput
from harness.export.output_classes import EvalOutput
from harness.export.output_classes import ExportOutput
from harness.export.output_classes import PredictOutput
from harness.export.output_classes import RegressionOutput
from harness.export.output_classes import TrainOutput

# The classes are re-exported from output_classes (its error type is not).
__all__ = [
    *(name for name in output_classes.__all__ if name != "UnservableError"),
    "get_export_outputs",
    "export_outputs_for_mode",
    "build_all_signature_defs",
    "DEFAULT_SERVING_KEY",
    "SINGLE_RECEIVER_DEFAULT_NAME",
]

DEFAULT_SERVING_KEY = "serving_default"
SINGLE_RECEIVER_DEFAULT_NAME = "input"

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
      raise output_classes.UnservableError(
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
      output_classes.CLASSIFY_METHOD_NAME: "Classify",
      output_classes.REGRESS_METHOD_NAME: "Regress",
      output_classes.PREDICT_METHOD_NAME: "Predict",
      output_classes.TRAIN_METHOD_NAME: "Train",
      output_classes.EVAL_METHOD_NAME: "Eval"}
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
