"""`MultiHead`: several named heads trained together (tf.estimator 2.15).

    head = MultiHead([MultiClassHead(3, name="kind"),
                      RegressionHead(name="price")], head_weights=[1., .5])
    # logits: {"kind": [B, 3], "price": [B, 1]} or one [B, 4] Tensor;
    # labels: {"kind": ..., "price": ...}.

The loss is the (weighted) sum of the heads' losses; eval reports each head's
metrics under "<key>/<head name>" plus "loss/<head name>"; predictions are
keyed by (head name, key); the first head serves `serving_default`.
"""

from harness import errors
from harness import spec as spec_lib
from harness._tf import tf
from harness.canned.head import base_head
from harness.canned.head import metric_keys
from harness.export import outputs

__all__ = ["MultiHead"]

_KEYS = metric_keys.MetricKeys


def _no_op_train_fn(loss):
  del loss
  return tf.no_op()


def _default_export_output(export_outputs, head_name):
  if len(export_outputs) == 1:
    return next(iter(export_outputs.values()))
  if base_head.DEFAULT_SERVING_KEY not in export_outputs:
    raise errors.ModelFnError(
        f"{head_name} did not specify default export_outputs. Given: "
        f"{export_outputs} Suggested fix: Use one of the heads in "
        "tf.estimator, or include key "
        f"{base_head.DEFAULT_SERVING_KEY} in export_outputs.")
  return export_outputs[base_head.DEFAULT_SERVING_KEY]


class MultiHead(base_head.Head):
  """Combines named heads; see the module docstring.

  Args:
    heads: list or tuple of `Head`s, each with a `name`; the first one is
      served by default.
    head_weights: optional weights (one per head) for summing the losses.
  """

  def __init__(self, heads, head_weights=None):
    if not heads:
      raise errors.ConfigError(f"Must specify heads. Given: {heads}")
    if head_weights and len(head_weights) != len(heads):
      raise errors.ConfigError(
          "heads and head_weights must have the same size. Given "
          f"len(heads): {len(heads)}. Given len(head_weights): "
          f"{len(head_weights)}.")
    for head in heads:
      if head.name is None:
        raise errors.ConfigError(
            f"All given heads must have name specified. Given: {head}")
    self._heads = tuple(heads)
    self._head_weights = tuple(head_weights) if head_weights else tuple()
    self._logits_dimension = sum(h.logits_dimension for h in self._heads)
    self._loss_regularization_key = self.summary_key(
        _KEYS.LOSS_REGULARIZATION)
    self._loss_keys = tuple(f"{_KEYS.LOSS}/{h.name}" for h in self._heads)

  @property
  def name(self):
    return "_".join(h.name for h in self._heads)

  @property
  def logits_dimension(self):
    return self._logits_dimension

  @property
  def loss_reduction(self):
    reductions = [h.loss_reduction for h in self._heads]
    if len(set(reductions)) > 1:
      raise errors.ConfigError(
          "The loss_reduction must be the same for different heads. Given: "
          f"{reductions}")
    return reductions[0]

  def _split_logits(self, logits):
    """One [D0.., total] Tensor -> {head name: its slice of the last dim}."""
    with tf.compat.v1.name_scope("split_logits"):
      logits = tf.convert_to_tensor(logits)
      dims = [h.logits_dimension for h in self._heads]
      last = logits.shape.as_list()[-1]
      if last is not None and last != sum(dims):
        raise errors.ModelFnError(
            f"Could not split logits of shape {logits.shape.as_list()!r} "
            f"among the heads with individual logits dimensions: {dims!r}. "
            "The last dimension of the logits tensor should equal "
            f"{sum(dims)} but is {last}.")
      parts = tf.split(logits, dims, axis=-1)
      return {h.name: part for h, part in zip(self._heads, parts)}

  def _check_logits_and_labels(self, logits, labels=None):
    names = [h.name for h in self._heads]
    if isinstance(logits, dict):
      missing = sorted(set(names) - set(logits))
      if missing:
        raise errors.ModelFnError(
            f"logits has missing values for head(s): {missing}")
      logits_dict = logits
    else:
      logits_dict = self._split_logits(logits)
    if labels is not None:
      if not isinstance(labels, dict):
        raise errors.ModelFnError(f"labels must be a dict. Given: {labels}")
      missing = sorted(set(names) - set(labels))
      if missing:
        raise errors.ModelFnError(
            f"labels has missing values for head(s): {missing}")
    return logits_dict

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    """Sum of the heads' training losses (weighted), plus regularization."""
    logits_dict = self._check_logits_and_labels(logits, labels)
    losses = [h.loss(logits=logits_dict[h.name], labels=labels[h.name],
                     features=features, mode=mode) for h in self._heads]
    with tf.compat.v1.name_scope("merge_losses"):
      if self._head_weights:
        losses = [tf.multiply(loss, weight)
                  for loss, weight in zip(losses, self._head_weights)]
      return base_head.regularized(tf.math.add_n(losses),
                                   regularization_losses)

  def predictions(self, logits, keys=None):
    """Every head's predictions, keyed by (head name, prediction key)."""
    del keys  # 2.15 returns every key of every head.
    logits_dict = self._check_logits_and_labels(logits)
    predictions = {}
    with tf.compat.v1.name_scope("merge_pred"):
      for head in self._heads:
        for key, value in head.predictions(logits_dict[head.name]).items():
          predictions[(head.name, key)] = value
    return predictions

  def metrics(self, regularization_losses=None):
    """A mean of each head's loss, keyed "loss/<head>", and of the
    regularization losses when given; `update_metrics` adds each head's own."""
    eval_metrics = {}
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key] = tf.keras.metrics.Mean(
          name=_KEYS.LOSS_REGULARIZATION)
    with tf.compat.v1.name_scope("merge_eval"):
      for loss_key in self._loss_keys:
        eval_metrics[loss_key] = tf.keras.metrics.Mean(name=loss_key)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    """Updates the loss means and adds each head's updated metrics."""
    logits_dict = self._check_logits_and_labels(logits, labels)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    for i, head in enumerate(self._heads):
      head_logits = logits_dict[head.name]
      head_labels = labels[head.name]
      eval_metrics[self._loss_keys[i]].update_state(values=head.loss(
          logits=head_logits, labels=head_labels, features=features))
      updated = head.update_metrics(head.metrics(), features, head_logits,
                                    head_labels)
      eval_metrics.update(updated or {})
    return eval_metrics

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None):
    """EstimatorSpec over all heads; see the module docstring."""
    mode_keys = spec_lib.ModeKeys
    with tf.compat.v1.name_scope(self.name, "multi_head"):
      logits_dict = self._check_logits_and_labels(logits, labels)
      specs = [
          head.create_estimator_spec(
              features=features, mode=mode, logits=logits_dict[head.name],
              labels=labels[head.name] if labels else None,
              train_op_fn=_no_op_train_fn)
          for head in self._heads]
      predictions = self.predictions(logits)
      if mode == mode_keys.PREDICT:
        return spec_lib.EstimatorSpec(
            mode=mode_keys.PREDICT, predictions=predictions,
            export_outputs=self._merge_predict_export_outputs(specs, outputs))
      loss = self.loss(labels, logits, features, mode, regularization_losses)
      if mode == mode_keys.EVAL:
        updated = self.update_metrics(
            self.metrics(regularization_losses=regularization_losses),
            features, logits, labels,
            regularization_losses=regularization_losses)
        return spec_lib.EstimatorSpec(
            mode=mode_keys.EVAL, predictions=predictions, loss=loss,
            eval_metric_ops=updated)
      if mode != mode_keys.TRAIN:
        raise errors.ModelFnError(f"mode={mode} unrecognized")
      train_op = base_head.create_estimator_spec_train_op(
          head_name=self.name, optimizer=optimizer, train_op_fn=train_op_fn,
          update_ops=update_ops, trainable_variables=trainable_variables,
          regularized_training_loss=loss, loss_reduction=self.loss_reduction)
      base_head.create_estimator_spec_summary(loss, regularization_losses)
      eval_metrics = {}
      for spec in specs:
        eval_metrics.update(spec.eval_metric_ops or {})
      return spec_lib.EstimatorSpec(
          mode=mode_keys.TRAIN, loss=loss, train_op=train_op,
          predictions=predictions, eval_metric_ops=eval_metrics)

  def _merge_predict_export_outputs(self, specs, outputs):
    """serving_default: the first head's; "<head>" and "<head>/<key>" for
    each head's outputs; "predict": every head's predict outputs merged."""
    export_outputs = {
        base_head.DEFAULT_SERVING_KEY: _default_export_output(
            specs[0].export_outputs, self._heads[0].name)}
    merged = {}
    for head, spec in zip(self._heads, specs):
      for key, value in spec.export_outputs.items():
        name = (head.name if key == base_head.DEFAULT_SERVING_KEY
                else f"{head.name}/{key}")
        export_outputs[name] = value
        if (key == base_head.PREDICT_SERVING_KEY and
            isinstance(value, outputs.PredictOutput)):
          for output_key, tensor in value.outputs.items():
            merged[f"{head.name}/{output_key}"] = tensor
    export_outputs[base_head.PREDICT_SERVING_KEY] = outputs.PredictOutput(
        merged)
    return export_outputs
