"""RNNClassifier, RNNEstimator: tf.estimator 2.15's experimental RNN models.

    tokens = tf.feature_column.embedding_column(
        tf.feature_column.sequence_categorical_column_with_identity(
            "t", num_buckets=100), dimension=8)
    est = harness.experimental.RNNClassifier(
        sequence_feature_columns=[tokens], units=[32, 16], cell_type="lstm",
        n_classes=3, model_dir="/tmp/rnn")
    est.train(input_fn, steps=1000)  # features["t"]: a SparseTensor

A Keras model (`RNNModel`, named `rnn_model`) reads the sequence columns
with tf_keras's `SequenceFeatures`, repeats the context columns at every
step, runs the RNN layer under the sequence mask and projects the last
output to the head's logits (layer `logits`). Variables are named as 2.15
named them, so 2.15 model_dirs restore (tests/fixtures/rnn215).
Not provided: `return_sequences=True` (2.15's sequential heads).
"""

from harness import errors
from harness import estimator
from harness._tf import tf
from harness.canned import head as head_lib
from harness.canned import train_ops
from harness.spec import ModeKeys

__all__ = ["RNNClassifier", "RNNEstimator", "RNNModel", "USE_DEFAULT"]

# 2.15's defaults for a string optimizer.
_DEFAULT_LEARNING_RATE = 0.05
_DEFAULT_CLIP_NORM = 5.0
_CELL_TYPES = {
    "simple_rnn": (tf.keras.layers.SimpleRNNCell, tf.keras.layers.SimpleRNN),
    "lstm": (tf.keras.layers.LSTMCell, tf.keras.layers.LSTM),
    "gru": (tf.keras.layers.GRUCell, tf.keras.layers.GRU),
}
# `cell_type`'s default: "simple_rnn", unless `rnn_cell_fn` is given.
USE_DEFAULT = object()


def _single_rnn_cell(units, cell_type):
  cell_type = _CELL_TYPES[cell_type][0] if cell_type in _CELL_TYPES else (
      cell_type)
  if not callable(cell_type):
    raise ValueError(
        "`cell_type` should be a class producing a RNN cell, or a string "
        "specifying the cell type. Supported strings are: "
        f"{list(_CELL_TYPES)}.")
  cell = cell_type(units=units)
  if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
    raise ValueError("RNN cell should have a `call` and `state_size` method.")
  return cell


def _verify_rnn_cell_input(rnn_cell_fn, units, cell_type):
  if rnn_cell_fn and (units or cell_type is not USE_DEFAULT):
    raise ValueError(
        "units and cell_type must not be specified when using rnn_cell_fn")


def _make_rnn_layer(rnn_cell_fn, units, cell_type, return_sequences):
  """The Keras RNN layer: one cell type's layer, or RNN over the cells."""
  _verify_rnn_cell_input(rnn_cell_fn, units, cell_type)
  if isinstance(cell_type, str) and cell_type in _CELL_TYPES and isinstance(
      units, int):
    return _CELL_TYPES[cell_type][1](units=units,
                                     return_sequences=return_sequences)
  if rnn_cell_fn:
    cell = rnn_cell_fn()
  else:
    kind = "simple_rnn" if cell_type is USE_DEFAULT else cell_type
    cells = [_single_rnn_cell(n, kind) for n in units]
    cell = cells[0] if len(cells) == 1 else cells
  return tf.keras.layers.RNN(cell=cell, return_sequences=return_sequences)


def _concatenate_context(context_input, sequence_input):
  """Appends `context_input` [batch, d] to every step of [batch, T, d']."""
  if sequence_input.shape.rank != 3 or context_input.shape.rank != 2:
    raise ValueError(
        "sequence_input must have rank 3 and context_input rank 2, got "
        f"{sequence_input.shape} and {context_input.shape}.")
  steps = tf.shape(sequence_input)[1]
  tiled = tf.tile(tf.expand_dims(context_input, 1), [1, steps, 1])
  return tf.concat([sequence_input, tf.cast(tiled, sequence_input.dtype)], 2)


class RNNModel(tf.keras.models.Model):
  """Logits of an RNN over sequence (and context) feature columns.

  Args:
    rnn_layer: a Keras RNN layer.
    units: int, the logits' dimension.
    sequence_feature_columns: sequence columns (`sequence_*` or built on one).
    context_feature_columns: dense columns repeated at every step, or None.
    activation: the logits layer's activation (None: logits).
    return_sequences: logits for every step instead of the last one.
    **kwargs: Keras Model arguments (`name`).
  """

  def __init__(self, rnn_layer, units, sequence_feature_columns,
               context_feature_columns=None, activation=None,
               return_sequences=False, **kwargs):
    super().__init__(**kwargs)
    if not isinstance(units, int):
      raise ValueError(
          f"units must be an int.  Given type: {type(units)}")
    self._return_sequences = return_sequences
    self._sequence_feature_columns = list(sequence_feature_columns)
    self._context_feature_columns = list(context_feature_columns or [])
    self._sequence_features_layer = tf.keras.experimental.SequenceFeatures(
        sequence_feature_columns)
    self._dense_features_layer = None
    if context_feature_columns:
      self._dense_features_layer = tf.compat.v1.keras.layers.DenseFeatures(
          context_feature_columns)
    self._rnn_layer = rnn_layer
    self._logits_layer = tf.keras.layers.Dense(
        units=units, activation=activation, name="logits")

  def call(self, inputs, training=None):
    if not isinstance(inputs, dict):
      raise ValueError("inputs should be a dictionary of `Tensor`s. Given "
                       f"type: {type(inputs)}")
    with tf.compat.v1.name_scope("sequence_input_layer"):
      sequence_input, sequence_length = self._sequence_features_layer(
          inputs, training=training)
      tf.compat.v1.summary.histogram("sequence_length", sequence_length)
      if self._dense_features_layer is not None:
        context_input = self._dense_features_layer(inputs, training=training)
        sequence_input = _concatenate_context(context_input, sequence_input)
    mask = tf.sequence_mask(sequence_length)
    # TF 2.21 loses a static batch size here that the RNN's loop state keeps
    # (its while_loop then refuses the shape change); the input has it.
    mask.set_shape(sequence_input.shape[:1].concatenate(mask.shape[1:]))
    outputs = self._rnn_layer(sequence_input, mask=mask, training=training)
    return self._logits_layer(outputs)

  def get_config(self):
    """The constructor's arguments, Keras-serialized (columns included)."""
    serialize = tf.__internal__.feature_column.serialize_feature_column
    return {
        "name": self.name,
        "rnn_layer": {"class_name": type(self._rnn_layer).__name__,
                      "config": self._rnn_layer.get_config()},
        "units": self._logits_layer.units,
        "return_sequences": self._return_sequences,
        "activation": tf.keras.activations.serialize(
            self._logits_layer.activation),
        "sequence_feature_columns": [
            serialize(c) for c in self._sequence_feature_columns],
        "context_feature_columns": [
            serialize(c) for c in self._context_feature_columns] or None,
    }

  @classmethod
  def from_config(cls, config, custom_objects=None):
    """An RNNModel from `get_config()`'s dict."""
    config = dict(config)
    columns = lambda configs: [
        tf.__internal__.feature_column.deserialize_feature_column(
            c, custom_objects=custom_objects) for c in configs or []]
    return cls(
        rnn_layer=tf.keras.layers.deserialize(
            config.pop("rnn_layer"), custom_objects=custom_objects),
        sequence_feature_columns=columns(
            config.pop("sequence_feature_columns")),
        context_feature_columns=columns(
            config.pop("context_feature_columns", None)) or None,
        activation=tf.keras.activations.deserialize(
            config.pop("activation", None), custom_objects=custom_objects),
        **config)


def _rnn_estimator_spec(features, labels, mode, head, rnn_model, optimizer):
  """The EstimatorSpec of 2.15's RNN model_fn."""
  opt = None
  if mode == ModeKeys.TRAIN:
    if isinstance(optimizer, str):
      opt = train_ops.keras_optimizer(optimizer, _DEFAULT_LEARNING_RATE)
      opt.clipnorm = _DEFAULT_CLIP_NORM
    else:
      opt = train_ops.keras_optimizer(optimizer)
  logits = rnn_model(features, training=(mode == ModeKeys.TRAIN))
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=opt,
      logits=logits, update_ops=rnn_model.updates,
      trainable_variables=rnn_model.trainable_variables)


class RNNEstimator(estimator.Estimator):
  """An RNN over sequence feature columns, with any head (2.15's arguments).

  Args:
    head: a `harness.canned.head` Head (its `logits_dimension` sizes logits).
    sequence_feature_columns: sequence columns; their features are
      SparseTensors.
    context_feature_columns: dense columns repeated at every step.
    units: hidden units per RNN layer (with `cell_type`, not `rnn_cell_fn`).
    cell_type: "simple_rnn" (default), "lstm", "gru" or a cell class.
    rnn_cell_fn: `fn() -> cell` (stacked: `StackedRNNCells` or a list).
    return_sequences: must be False in harness (see the module docstring).
    model_dir: as `Estimator`.
    optimizer: name (learning rate 0.05, clipnorm 5.0), a
      `tf.keras.optimizers.legacy` instance, or a callable returning one.
    config: a `RunConfig`.

  Raises:
    ValueError: `units`/`cell_type` given with `rnn_cell_fn`.
    NotSupportedError: `return_sequences=True`.
  """

  def __init__(self, head, sequence_feature_columns,
               context_feature_columns=None, units=None,
               cell_type=USE_DEFAULT, rnn_cell_fn=None,
               return_sequences=False, model_dir=None, optimizer="Adagrad",
               config=None):
    if return_sequences:
      raise errors.NotSupportedError(
          "RNNEstimator(return_sequences=True) needs 2.15's sequential heads, "
          "which harness does not provide. Fix: return_sequences=False "
          "(logits of the last step), or write a model_fn.")
    _verify_rnn_cell_input(rnn_cell_fn, units, cell_type)

    def _model_fn(features, labels, mode, config):
      del config  # Unused, as in 2.15.
      rnn_model = RNNModel(
          rnn_layer=_make_rnn_layer(rnn_cell_fn, units, cell_type, False),
          units=head.logits_dimension,
          sequence_feature_columns=sequence_feature_columns,
          context_feature_columns=context_feature_columns,
          name="rnn_model")
      return _rnn_estimator_spec(features, labels, mode, head, rnn_model,
                                 optimizer)

    super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)


class RNNClassifier(RNNEstimator):
  """An RNN classifier: 2.15's binary or multi-class head on `RNNEstimator`.

  Args:
    n_classes: 2 (BinaryClassHead) or more (MultiClassHead).
    weight_column, label_vocabulary, loss_reduction: passed to the head.
    sequence_mask: the feature naming padded steps (used only with
      `return_sequences`, which harness does not provide).
    The others: as `RNNEstimator`.
  """

  def __init__(self, sequence_feature_columns, context_feature_columns=None,
               units=None, cell_type=USE_DEFAULT, rnn_cell_fn=None,
               return_sequences=False, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None,
               optimizer="Adagrad",
               loss_reduction=tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               sequence_mask="sequence_mask", config=None):
    del sequence_mask  # Only 2.15's return_sequences heads read it.
    if n_classes == 2:
      head = head_lib.BinaryClassHead(
          weight_column=weight_column, label_vocabulary=label_vocabulary,
          loss_reduction=loss_reduction)
    else:
      head = head_lib.MultiClassHead(
          n_classes=n_classes, weight_column=weight_column,
          label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(
        head=head, sequence_feature_columns=sequence_feature_columns,
        context_feature_columns=context_feature_columns, units=units,
        cell_type=cell_type, rnn_cell_fn=rnn_cell_fn,
        return_sequences=return_sequences, model_dir=model_dir,
        optimizer=optimizer, config=config)
