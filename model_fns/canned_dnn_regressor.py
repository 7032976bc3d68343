"""tf.estimator.DNNRegressor's model_fn, for the `harness.main` binary.

A team moving a `DNNRegressor` job to the binary keeps the canned model (same
variables, checkpoints and signatures): this model_fn is the one
`harness.DNNRegressor(hidden_units, [numeric_column("x", shape=[x_dim])])`
builds, on features {"x": [batch, x_dim]} and float labels::

    python -m harness.main --model_fn=canned_dnn_regressor --input_fn=constant \\
        --model_dir=/tmp/dnn_regressor --max_steps=200

    python -m harness.launch --workers=2 --evaluator -- \\
        python -m harness.main --model_fn=canned_dnn_regressor \\
        --input_fn=constant --strategy=collective --model_dir=/tmp/dnn_reg
"""

import harness
from harness._tf import tf
from harness.canned import dnn

__all__ = ["DEFAULT_PARAMS", "model_fn"]

DEFAULT_PARAMS = {
    "hidden_units": "16,8",  # comma list of layer widths
    "x_dim": 1,  # width of features["x"]
    "optimizer": "Adagrad",  # a canned optimizer name (2.15's default lr)
}


def _hidden_units(text):
  try:
    units = [int(u) for u in str(text).split(",") if u.strip()]
  except ValueError:
    units = []
  if not units or min(units) <= 0:
    raise harness.errors.ConfigError(
        f"params hidden_units={text!r} must be a comma list of positive "
        "layer widths, e.g. hidden_units=16,8.")
  return units


def model_fn(features, labels, mode, params, config):
  """DNNRegressor(hidden_units, [numeric_column("x", shape=[x_dim])])'s
  model_fn: Adagrad (or `optimizer`), mean squared error, label_dimension 1.

  Args:
    features: dict with "x", float Tensor [batch, x_dim].
    labels: float Tensor [batch, 1] (None in PREDICT mode).
    mode: a `ModeKeys` value.
    params: dict; "hidden_units", "x_dim", "optimizer" (see DEFAULT_PARAMS).
    config: the job's RunConfig (unused, as by 2.15's DNN model_fn).

  Returns:
    The canned estimator's `EstimatorSpec`: EVAL reports average_loss,
    label/mean, prediction/mean; PREDICT exports regression / predict /
    serving_default signatures.
  """
  params = dict(DEFAULT_PARAMS, **(params or {}))
  columns = [tf.feature_column.numeric_column(
      "x", shape=[int(params["x_dim"])])]
  # What DNNRegressor's own model_fn runs (2.15's dnn.dnn_model_fn_v2 with
  # the regression head DNNRegressor makes by default).
  return dnn.dnn_model_fn_v2(
      features, labels, mode, head=harness.RegressionHead(),
      hidden_units=_hidden_units(params["hidden_units"]),
      feature_columns=columns, optimizer=params["optimizer"], config=config)
