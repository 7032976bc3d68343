"""An input_fn that does not end on SIGTERM, for tests/test_start_signals.py:
the stop bound (`--stop_timeout_secs`) must end the process by itself::

    python -m harness.main --model_fn=linear \\
        --input_fn=tests.programs.stubborn_start:make_stubborn_input_fn \\
        --stop_timeout_secs=1 --model_dir=/tmp/m

The input_fn logs `stubborn | input_fn blocks` and then sleeps forever,
swallowing every exception a signal raises in it (as a C++ call that
retries on EINTR would).
"""

import time

from absl import logging

__all__ = ["make_stubborn_input_fn"]


def make_stubborn_input_fn(mode, *, data_dir=None, batch_size=None,
                           params=None):
  """An input_fn that blocks for ever, whatever is raised in it."""
  del mode, data_dir, batch_size, params

  def input_fn():
    logging.info("stubborn | input_fn blocks")
    while True:
      try:
        time.sleep(3600)
      except BaseException:  # pylint: disable=broad-except
        logging.info("stubborn | an exception raised in it is swallowed")

  return input_fn
