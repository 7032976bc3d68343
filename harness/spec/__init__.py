"""ModeKeys, EstimatorSpec, and how `model_fn` / `input_fn` are called.

The rules here are tf.estimator 2.15's, so that a `model_fn` that worked there
works here, and one that was rejected there is rejected here with a message
that says what to change::

    def model_fn(features, labels, mode, params):
      logits = tf.compat.v1.layers.dense(features["x"], 10)
      ...
      return harness.EstimatorSpec(mode, loss=loss, train_op=train_op)
"""

# pylint: disable=unused-import
from harness.spec.estimator_spec import DATASET_FN_ATTR
from harness.spec.estimator_spec import EstimatorSpec
from harness.spec.estimator_spec import HOOKS_SENTENCE_SPECS
from harness.spec.estimator_spec import ModeKeys
from harness.spec.estimator_spec import VALID_MODEL_FN_ARGS
from harness.spec.estimator_spec import call_input_fn
from harness.spec.estimator_spec import call_model_fn
from harness.spec.estimator_spec import check_hooks
from harness.spec.estimator_spec import fn_args
from harness.spec.estimator_spec import model_fn_kwargs
from harness.spec.estimator_spec import verify_model_fn_args
