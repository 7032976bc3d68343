"""The `tf.estimator.export` namespace: export outputs and input receivers.

    from harness import export

    def serving_input_receiver_fn():
      ...
      return export.ServingInputReceiver(features, receiver_tensors)

    export_outputs = {"serving_default": export.PredictOutput(predictions)}

Importing this package is cheap: it does not import the Estimator. The
SavedModel writer lives in `harness.export.writer`. The experimental names
(`SupervisedInputReceiver`, `UnsupervisedInputReceiver`, `TrainOutput`,
`build_raw_supervised_input_receiver_fn`) are importable from here too.
"""

# Experimental names (TrainOutput, SupervisedInputReceiver, ...) are imported
# for `from harness.export import X`, not listed in __all__.
# pylint: disable=unused-import
from harness.export.output_classes import ClassificationOutput
from harness.export.output_classes import EvalOutput
from harness.export.output_classes import ExportOutput
from harness.export.output_classes import PredictOutput
from harness.export.output_classes import RegressionOutput
from harness.export.output_classes import TrainOutput
from harness.export.receivers import build_parsing_serving_input_receiver_fn
from harness.export.receivers import build_raw_serving_input_receiver_fn
from harness.export.receivers import build_raw_supervised_input_receiver_fn
from harness.export.receivers import ServingInputReceiver
from harness.export.receivers import SupervisedInputReceiver
from harness.export.receivers import TensorServingInputReceiver
from harness.export.receivers import UnsupervisedInputReceiver
# pylint: enable=unused-import

__all__ = [
    # Export outputs.
    "ClassificationOutput",
    "EvalOutput",
    "ExportOutput",
    "PredictOutput",
    "RegressionOutput",
    # Serving input receivers.
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn",
    "build_raw_serving_input_receiver_fn",
]
