"""The `tf.estimator.experimental` namespace.

    hook = harness.experimental.stop_if_no_decrease_hook(est, "loss", 1000)
"""

from harness import errors
from harness.canned import logit_fns
from harness.canned.rnn import RNNClassifier
from harness.canned.rnn import RNNEstimator
from harness.early_stopping import make_early_stopping_hook
from harness.early_stopping import read_eval_metrics
from harness.early_stopping import stop_if_higher_hook
from harness.early_stopping import stop_if_lower_hook
from harness.early_stopping import stop_if_no_decrease_hook
from harness.early_stopping import stop_if_no_increase_hook
from harness.export.receivers import build_raw_supervised_input_receiver_fn
from harness.hooks import InMemoryEvaluatorHook
from harness.hooks import make_stop_at_checkpoint_step_hook

__all__ = [
    # Early stopping.
    "make_early_stopping_hook",
    "stop_if_higher_hook",
    "stop_if_lower_hook",
    "stop_if_no_decrease_hook",
    "stop_if_no_increase_hook",
    "read_eval_metrics",
    # Hooks.
    "InMemoryEvaluatorHook",
    "make_stop_at_checkpoint_step_hook",
    # Export.
    "build_raw_supervised_input_receiver_fn",
    # Canned RNN estimators.
    "RNNClassifier",
    "RNNEstimator",
]

_NOT_PORTED = frozenset([
    "KMeans", "LinearSDCA",
])

# The canned estimators' logit_fn helpers: outside __all__, as in 2.15, and
# served by __getattr__ (which harness.compat's aliases consult).
_LOGIT_FNS = frozenset([
    "call_logit_fn", "dnn_logit_fn_builder", "linear_logit_fn_builder",
])


def __getattr__(name):
  if name in _LOGIT_FNS:
    return getattr(logit_fns, name)
  if name in _NOT_PORTED:
    raise errors.NotSupportedError(
        f"tf.estimator.experimental.{name} is not implemented by harness. "
        "Fix: write it as a model_fn (harness runs any model_fn), or keep "
        "that job on tf.estimator 2.15.")
  raise AttributeError(f"module 'harness.experimental' has no attribute "
                       f"{name!r}")
