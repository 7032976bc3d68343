"""tf.estimator 2.15's v1 heads (`tensorflow_estimator.python.estimator.
canned.head`): the heads of `tf.compat.v1.estimator`'s canned classes, with
v1 optimizers, `tf.compat.v1.losses` reductions and `tf.compat.v1.metrics`.

    from harness.canned import head_v1
    head = head_v1.binary_logistic_head(weight_column="w")
    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        optimizer=tf.compat.v1.train.AdagradOptimizer(0.05))

`harness.compat` installs them at their 2.15 path under their 2.15 names
(`_binary_logistic_head_with_sigmoid_cross_entropy_loss`, `_Head`, ...).
"""

from harness.canned.head_v1.base import CannedHead
from harness.canned.head_v1.base import Head
from harness.canned.head_v1.base import HeadSpec
from harness.canned.head_v1.base import LossSpec
from harness.canned.head_v1.classifier import BinaryLogisticHead
from harness.canned.head_v1.classifier import MultiClassHead
from harness.canned.head_v1.classifier import binary_logistic_head
from harness.canned.head_v1.classifier import binary_or_multi_class_head
from harness.canned.head_v1.classifier import multi_class_head
from harness.canned.head_v1.regression import RegressionHead
from harness.canned.head_v1.regression import regression_head

__all__ = [
    # The interface and what its spec flow returns.
    "Head",
    "CannedHead",
    "HeadSpec",
    "LossSpec",
    # The heads and their factories.
    "BinaryLogisticHead",
    "MultiClassHead",
    "RegressionHead",
    "binary_logistic_head",
    "multi_class_head",
    "binary_or_multi_class_head",
    "regression_head",
]
