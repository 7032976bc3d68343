"""A plain tf.estimator input_fn whose dataset repeats forever, as a
training input does, for tests/test_fidelity215_user.py (issue 47, item 4)::

    python -m harness.main --mode=predict --model_fn=linear \\
        --input_fn=tests.programs.repeating_input:input_fn --max_predictions=25
"""

from harness._tf import tf

__all__ = ["input_fn"]


def input_fn():
  """({"x": [10, 1]}, [10, 1]) batches of ones, repeated forever."""
  return tf.data.Dataset.from_tensors(
      ({"x": [1.0]}, [1.0])).repeat().batch(10)
