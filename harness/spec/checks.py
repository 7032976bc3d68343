"""EstimatorSpec's field rules, with tf.estimator 2.15's error types.

    loss = spec_checks.validate_loss(loss, mode)   # ModelFnTypeError if 1.

Each check raises 2.15's exception type (TypeError for a value of the wrong
type, ValueError for a wrong value; harness's `ModelFnTypeError` /
`ModelFnError` are both) and message, 2.15's sentence first and the fix
after it, so `except TypeError` and message checks of 2.15 code still hold.
`harness.spec.EstimatorSpec` calls them.
"""

from harness import errors
from harness._tf import tf

__all__ = [
    "enclosing_graphs", "graph_error", "check_in_graph", "is_dense_tensor",
    "check_is_tensor", "validate_loss", "validate_predictions",
    "validate_train_op", "metric_tensors", "validate_metric_ops",
    "keras_metric_pair",
    "keras_metric_class", "LOSS_TO_SCALAR_OP",
]

# The ModeKeys values (harness.spec.ModeKeys; its module imports this one).
TRAIN, EVAL, PREDICT = "train", "eval", "infer"


def enclosing_graphs(graph):
  """`graph` and, inside a loop body's function graph, the graphs around it."""
  graphs = []
  while graph is not None:
    graphs.append(graph)
    graph = getattr(graph, "outer_graph", None)
  return graphs


def graph_error(what, name):
  """tf.estimator 2.15's sentence for an object from another graph."""
  return errors.ModelFnError(
      f'{what} with "{name}" must be from the default graph. Possible '
      "causes: the model_fn built it in another tf.Graph, or kept a "
      "tensor from an earlier call (model_fn is called once per mode, "
      "each time in a fresh graph). Fix: create every tensor inside "
      "model_fn.")


def check_in_graph(value, name, graph):
  items = value.items() if isinstance(value, dict) else [(None, value)]
  graphs = enclosing_graphs(graph)
  for key, item in items:
    item_graph = getattr(item, "graph", None)
    if item_graph is not None and not any(item_graph is g for g in graphs):
      label = getattr(item, "name", item)
      raise graph_error(name, label if key is None else f"{key}: {label}")


def is_dense_tensor(value):
  """tf.estimator 2.15's `Tensor` check: dense tensors and variables only."""
  return tf.is_tensor(value) and not isinstance(
      value, (tf.SparseTensor, tf.RaggedTensor))


def check_is_tensor(value, name, fix):
  if not is_dense_tensor(value):
    raise errors.ModelFnTypeError(
        f"{name} must be Tensor, given: {value}. {fix}")
  return value


# The op that reshapes a loss of unknown size (e.g. [batch, 1]) to a scalar;
# named so that a run-time failure (more than one value) is told apart from
# an input problem (harness.cli.diagnose).
LOSS_TO_SCALAR_OP = "loss_reshaped_to_scalar"


def validate_loss(loss, mode):
  if loss is None:
    if mode in (TRAIN, EVAL):
      raise errors.ModelFnError(
          f"Missing loss. EstimatorSpec(mode={mode!r}) needs `loss`, a "
          "scalar Tensor (TRAIN and EVAL modes require it).")
    return None
  check_is_tensor(loss, "loss", (
      "Fix: return the scalar loss Tensor (e.g. tf.constant(1.) for a "
      "number), not the op that minimizes it."))
  num = loss.shape.num_elements()
  if num not in (None, 1):
    raise errors.ModelFnError(
        f"Loss must be scalar, given: {loss}. Its shape is {loss.shape}; "
        "Fix: reduce it, e.g. tf.reduce_mean(per_example_loss).")
  if not loss.shape.is_compatible_with(tf.TensorShape([])):
    loss = tf.reshape(loss, [], name=LOSS_TO_SCALAR_OP)
  return loss


def validate_predictions(predictions, mode, graph):
  fix = "Fix: return a dense Tensor or a dict of them."
  if predictions is None:
    if mode == PREDICT:
      raise errors.ModelFnError(
          "Missing predictions. EstimatorSpec(mode='infer') needs "
          "`predictions`, a Tensor or a dict of Tensors.")
    return None
  if isinstance(predictions, dict):
    predictions = {k: check_is_tensor(v, f"predictions[{k}]", fix)
                   for k, v in predictions.items()}
  else:
    check_is_tensor(predictions, "predictions", fix)
  check_in_graph(predictions, "prediction values", graph)
  return predictions


def validate_train_op(train_op, mode, graph):
  if train_op is None:
    if mode == TRAIN:
      raise errors.ModelFnError(
          "Missing train_op. EstimatorSpec(mode='train') needs `train_op`, "
          "e.g. optimizer.minimize(loss, global_step="
          "tf.compat.v1.train.get_global_step()).")
    return None
  if not (isinstance(train_op, tf.Operation) or is_dense_tensor(train_op)):
    raise errors.ModelFnTypeError(
        f"train_op must be Operation or Tensor, given: {train_op}. Fix: "
        "return the op optimizer.minimize(...) built.")
  if isinstance(train_op, tf.Variable):
    train_op = train_op.op
  check_in_graph(train_op, "train_op", graph)
  return train_op


def metric_tensors(key, value):
  """The tensors and ops of one eval_metric_ops entry (2.15's rules)."""
  metric_cls = keras_metric_class()
  if metric_cls is not None and isinstance(value, metric_cls):
    if not value.updates:
      raise errors.ModelFnError(
          f'Please call update_state(...) on the "{value.name}" metric. Fix: '
          f"call it in model_fn before returning eval_metric_ops[{key!r}].")
    return list(value.updates) + [value.result()]
  if not isinstance(value, tuple) or len(value) != 2:
    raise errors.ModelFnTypeError(
        "Values of eval_metric_ops must be (metric_value, update_op) "
        f"tuples, given: {value} for key: {key}. Fix: use a "
        "tf.compat.v1.metrics.* result or a tf_keras Metric object.")
  return tf.nest.flatten(value)


def add_to_collection(collection, variables):
  present = set(tf.compat.v1.get_collection(collection))
  for variable in variables:
    if variable not in present:
      tf.compat.v1.add_to_collection(collection, variable)


def validate_metric_ops(eval_metric_ops, graph):
  if eval_metric_ops is None:
    return {}
  if not isinstance(eval_metric_ops, dict):
    raise errors.ModelFnTypeError(
        f"eval_metric_ops must be a dict, given: {eval_metric_ops}. Fix: "
        "map each metric name to its (value, update_op) or Metric.")
  checked = {key: metric_tensors(key, value)
             for key, value in eval_metric_ops.items()}
  for key, tensors in checked.items():
    for tensor in tensors:
      check_in_graph({key: tensor}, "eval_metric_ops", graph)
  metric_cls = keras_metric_class()
  keras_metrics = {key: value for key, value in eval_metric_ops.items()
                   if metric_cls is not None and isinstance(value, metric_cls)}
  variables = [v for value in keras_metrics.values() for v in value.variables]
  # As 2.15: Keras metric variables join LOCAL_VARIABLES (initialised with
  # the local init op) and METRIC_VARIABLES (what TFMA reads).
  add_to_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES, variables)
  add_to_collection(tf.compat.v1.GraphKeys.METRIC_VARIABLES, variables)
  checked_ops = dict(eval_metric_ops)
  for key, metric in keras_metrics.items():
    checked_ops[key] = keras_metric_pair(metric)
  return checked_ops


def keras_metric_pair(metric):
  """A Keras `Metric` as 2.15 put it in a spec: `(result, update_op)`.

  The update op is the metric's one update; after several `update_state`
  calls (2.15 kept only the first) or under a distribution strategy (the
  replicas' updates of a shared metric accrue on it) it groups them all.
  `result()` of a metric in a replica context already reads every
  replica's variables (Keras merges it).
  """
  updates = list(metric.updates)
  update_op = updates[0] if len(updates) == 1 else tf.group(*updates)
  return metric.result(), update_op


def keras_metric_class():
  try:
    return tf.keras.metrics.Metric
  except AttributeError:  # pragma: no cover - tf_keras always has it.
    return None
