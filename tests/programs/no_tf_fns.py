"""A model_fn and input_fn factory that import no TensorFlow.

For tests/test_bad_input.py's flag and TF_CONFIG cases, which must fail
while the flags are checked, before any model code runs; resolving these
names costs milliseconds where the built-in `linear` / `constant` import
TensorFlow (seconds). Running them for real is a test failure::

    python -m harness.main --model_fn=tests.programs.no_tf_fns:model_fn \\
        --input_fn=tests.programs.no_tf_fns:make_input_fn --max_steps=-1
"""

__all__ = ["DEFAULT_PARAMS", "DEFAULT_BATCH_SIZE", "model_fn",
           "make_input_fn"]

DEFAULT_PARAMS = {"learning_rate": 0.1}
DEFAULT_BATCH_SIZE = 10


def model_fn(features, labels, mode, params):
  """Never meant to run: the flag tests stop before any model is built."""
  del features, labels, params
  raise AssertionError(f"tests.programs.no_tf_fns.model_fn ran ({mode})")


def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  """Never meant to run: the flag tests stop before any input is built."""
  del data_dir, batch_size, params
  raise AssertionError(f"tests.programs.no_tf_fns.make_input_fn ran ({mode})")
