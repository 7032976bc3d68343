"""The values of `RunConfig.input_pipeline` and `--input_pipeline`.

    RunConfig(input_pipeline=input_modes.AS_WRITTEN)

No TensorFlow here (the flags and `--help` need none);
`harness.core.input_pipeline` applies them.
"""

__all__ = ["TUNED", "AS_WRITTEN", "INPUT_PIPELINES", "DEFAULT"]

# The dataset an input_fn returns for a local graph gets a final
# prefetch(AUTOTUNE) and order-keeping tf.data options.
TUNED = "tuned"
# The dataset as the input_fn returned it (tf.estimator 2.15's behaviour).
AS_WRITTEN = "as_written"
INPUT_PIPELINES = (TUNED, AS_WRITTEN)
DEFAULT = TUNED
