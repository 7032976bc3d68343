"""`tf.compat.v1.estimator.tpu` on CPU/GPU: TPUEstimator with use_tpu=False.

    import harness.compat  # or run the script with `python -m harness.run`
    import tensorflow as tf

    config = tf.compat.v1.estimator.tpu.RunConfig(
        tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(
            iterations_per_loop=50))
    est = tf.compat.v1.estimator.tpu.TPUEstimator(
        model_fn, config=config, use_tpu=False, train_batch_size=32)

`harness.compat` aliases this package as `tf.compat.v1.estimator.tpu`,
`tf.estimator.tpu` and `tensorflow_estimator.python.estimator.tpu`
(`.tpu_estimator`, `.tpu_config`). See README "TPUEstimator code on CPU/GPU".
"""

from harness.tpu.optimizer import CrossShardOptimizer
from harness.tpu.tpu_config import InputPipelineConfig
from harness.tpu.tpu_config import RunConfig
from harness.tpu.tpu_config import TPUConfig
from harness.tpu.tpu_estimator import ExportSavedModelApiVersion
from harness.tpu.tpu_estimator import TPUEstimator
from harness.tpu.tpu_spec import TPUEstimatorSpec

__all__ = [
    # Estimator and spec.
    "TPUEstimator",
    "TPUEstimatorSpec",
    # Configuration.
    "RunConfig",
    "TPUConfig",
    "InputPipelineConfig",
    # Model code helpers.
    "CrossShardOptimizer",
    "ExportSavedModelApiVersion",
]
