"""`add_metrics`: an Estimator with extra eval metrics, as tf.estimator 2.15.

::

    def my_auc(labels, predictions):
      auc = tf.keras.metrics.AUC(name="my_auc")
      auc.update_state(y_true=labels, y_pred=predictions["logistic"])
      return {"auc": auc}

    estimator = extension.add_metrics(estimator, my_auc)
    estimator.evaluate(eval_input_fn)  # has "auc" next to the model's metrics
"""

from harness import errors
from harness import estimator as estimator_lib
from harness import spec as spec_lib

__all__ = ["add_metrics"]

_VALID_METRIC_FN_ARGS = frozenset(
    ["features", "labels", "predictions", "config"])


def _verify_metric_fn_args(metric_fn):
  if not callable(metric_fn):
    raise errors.ConfigError(
        f"metric_fn must be callable, given: {metric_fn!r}.")
  invalid = sorted(set(spec_lib.fn_args(metric_fn)) - _VALID_METRIC_FN_ARGS)
  if invalid:
    raise errors.ConfigError(
        f"metric_fn ({metric_fn}) has following not expected args: {invalid}."
        " Allowed: features, labels, predictions, config (in any order).")


def _call_metric_fn(metric_fn, features, labels, predictions, config):
  available = {"features": features, "labels": labels,
               "predictions": predictions, "config": config}
  args = spec_lib.fn_args(metric_fn)
  return metric_fn(**{name: available[name] for name in args})


def add_metrics(estimator, metric_fn):
  """Returns a new Estimator whose EVAL specs also hold `metric_fn`'s metrics.

  Args:
    estimator: a `harness.Estimator`.
    metric_fn: a function taking any of `features`, `labels`, `predictions`
      (the EstimatorSpec's), `config` (the estimator's RunConfig) by name and
      returning {name: (value, update_op) or tf.keras Metric}. Its metrics
      are added to the model's; on a name clash, metric_fn's win.

  Returns:
    A new `harness.Estimator` with the same model_dir, config, params and
    warm-start settings.

  Raises:
    ConfigError (ValueError): `metric_fn` takes an argument not listed above.
  """
  _verify_metric_fn_args(metric_fn)
  base_model_fn = estimator.model_fn
  base_params = estimator.params

  def new_model_fn(features, labels, mode, params, config):
    spec = spec_lib.call_model_fn(base_model_fn, features, labels, mode,
                                  params, config)
    if mode != spec_lib.ModeKeys.EVAL:
      return spec
    new_metrics = _call_metric_fn(metric_fn, features, labels,
                                  spec.predictions, config)
    all_metrics = dict(spec.eval_metric_ops or {})
    all_metrics.update(new_metrics or {})
    return spec._replace(eval_metric_ops=all_metrics)

  return estimator_lib.Estimator(
      model_fn=new_model_fn,
      model_dir=estimator.model_dir,
      config=estimator.config,
      params=base_params,
      warm_start_from=_warm_start_settings(estimator))


def _warm_start_settings(estimator):
  """The estimator's warm-start settings (public name first, 2.15's second)."""
  for name in ("warm_start_from", "warm_start_settings",
               "_warm_start_settings"):
    if hasattr(estimator, name):
      return getattr(estimator, name)
  return None
