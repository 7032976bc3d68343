"""tf.estimator 2.15's v2 heads: loss, predictions, eval metrics, train op and
export signatures on top of a model's logits.

    from harness.canned import head as head_lib
    head = head_lib.MultiClassHead(n_classes=10)
    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        optimizer=tf.keras.optimizers.legacy.Adagrad(0.05),
        trainable_variables=tf.compat.v1.trainable_variables())
"""

from harness.canned.head.base_head import Head
from harness.canned.head.binary_class_head import BinaryClassHead
from harness.canned.head.metric_keys import MetricKeys
from harness.canned.head.multi_class_head import MultiClassHead
from harness.canned.head.multi_head import MultiHead
from harness.canned.head.multi_label_head import MultiLabelHead
from harness.canned.head.prediction_keys import PredictionKeys
from harness.canned.head.regression_head import LogisticRegressionHead
from harness.canned.head.regression_head import PoissonRegressionHead
from harness.canned.head.regression_head import RegressionHead

__all__ = [
    # The interface.
    "Head",
    # Classification.
    "BinaryClassHead",
    "MultiClassHead",
    "MultiLabelHead",
    # Regression.
    "RegressionHead",
    "PoissonRegressionHead",
    "LogisticRegressionHead",
    # Several heads.
    "MultiHead",
    # Key strings.
    "MetricKeys",
    "PredictionKeys",
]
