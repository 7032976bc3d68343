"""Example `model_fn`s, written the way tf.estimator users wrote them.

Each module defines ``model_fn(features, labels, mode, params)`` returning a
`harness.spec.EstimatorSpec`, and ``DEFAULT_PARAMS`` (name -> default; the
binary coerces ``--params`` values to the defaults' types)::

    python -m harness.main --model_fn=mnist_cnn --input_fn=mnist_idx

| name          | network                                       | input_fn      |
|---------------|-----------------------------------------------|---------------|
| linear        | Dense(1) on features["x"], MSE                | constant      |
| mnist_cnn     | Conv 32x3x3 -> MaxPool 2 -> Dense 64 -> 10    | mnist*, synth |
| mnist_mlp     | Dense 256 -> Dense 256 -> 10                  | mnist*, synth |
| mnist_dropout | Dense 512 -> Dropout 0.2 (train) -> 10        | mnist*, synth |
| canned_dnn_regressor | tf.estimator.DNNRegressor's model_fn     | constant      |

This package also holds the two pieces the MNIST classifiers share:
`make_optimizer` (a v1 optimizer chosen by ``params``) and `classifier_spec`
(everything a classifier's model_fn does after computing its logits).
The harness core never imports this package; `harness.cli.registry` finds it by
name.
"""

from harness import errors
from harness._tf import tf
from harness.export import ClassificationOutput
from harness.export import PredictOutput
from harness.spec import EstimatorSpec
from harness.spec import ModeKeys

__all__ = ["OPTIMIZERS", "make_optimizer", "classifier_spec"]

# params["optimizer"] -> v1 optimizer class (all take learning_rate first).
OPTIMIZERS = {
    "adagrad": tf.compat.v1.train.AdagradOptimizer,
    "adam": tf.compat.v1.train.AdamOptimizer,
    "ftrl": tf.compat.v1.train.FtrlOptimizer,
    "rmsprop": tf.compat.v1.train.RMSPropOptimizer,
    "sgd": tf.compat.v1.train.GradientDescentOptimizer,
}


def make_optimizer(params, defaults):
  """Returns the v1 optimizer that `params` names.

  Args:
    params: the model_fn's params (may be None); reads "optimizer" (a key of
      `OPTIMIZERS`) and "learning_rate" (float).
    defaults: the module's DEFAULT_PARAMS, used for keys params lacks.

  Returns:
    A `tf.compat.v1.train.Optimizer`.

  Raises:
    ModelFnError: unknown optimizer name or non-positive learning rate.
  """
  params = params or {}
  name = str(params.get("optimizer", defaults.get("optimizer", "sgd"))).lower()
  learning_rate = float(params.get("learning_rate", defaults["learning_rate"]))
  if name not in OPTIMIZERS:
    raise errors.ModelFnError(
        f"params['optimizer']={name!r} is not a known optimizer; choose one "
        f"of {sorted(OPTIMIZERS)}, e.g. --params=optimizer=adam.")
  if learning_rate <= 0:
    raise errors.ModelFnError(
        f"params['learning_rate']={learning_rate!r} must be > 0, e.g. "
        "--params=learning_rate=0.001.")
  return OPTIMIZERS[name](learning_rate)


def classifier_spec(mode, logits, labels, params, defaults):
  """Builds the EstimatorSpec of a softmax classifier from its logits.

  Args:
    mode: a `ModeKeys` value.
    logits: float Tensor [batch, num_classes].
    labels: int Tensor [batch] (or [batch, 1]) of class ids; None in PREDICT.
    params: the model_fn's params (optimizer, learning_rate).
    defaults: the module's DEFAULT_PARAMS.

  Returns:
    An `EstimatorSpec`: predictions {"classes", "probabilities", "logits"};
    loss = mean sparse softmax cross-entropy; train_op from `make_optimizer`
    stepping the global step; eval metric "accuracy"; export outputs
    "serving_default"/"predict" (PredictOutput) and "classification"
    (ClassificationOutput, usable with a tf.Example serving receiver).
  """
  classes = tf.argmax(logits, axis=1)
  probabilities = tf.nn.softmax(logits, name="probabilities")
  predictions = {
      "classes": classes, "probabilities": probabilities, "logits": logits}
  if mode == ModeKeys.PREDICT:
    num_classes = logits.shape[-1]
    class_names = tf.tile(
        tf.expand_dims(tf.strings.as_string(tf.range(num_classes)), 0),
        [tf.shape(logits)[0], 1])
    export_outputs = {
        "serving_default": PredictOutput(predictions),
        "predict": PredictOutput(predictions),
        "classification": ClassificationOutput(
            scores=probabilities, classes=class_names),
    }
    return EstimatorSpec(
        mode, predictions=predictions, export_outputs=export_outputs)

  labels = tf.reshape(tf.cast(labels, tf.int64), [-1])
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
      labels=labels, logits=logits)
  if mode == ModeKeys.EVAL:
    eval_metric_ops = {
        "accuracy": tf.compat.v1.metrics.accuracy(
            labels=labels, predictions=classes),
    }
    return EstimatorSpec(
        mode, loss=loss, predictions=predictions,
        eval_metric_ops=eval_metric_ops)

  optimizer = make_optimizer(params, defaults)
  update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
  with tf.control_dependencies(update_ops):
    train_op = optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
  return EstimatorSpec(
      mode, loss=loss, train_op=train_op, predictions=predictions)
