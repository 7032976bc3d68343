"""The tf.estimator 2.15 log lines users grep, in a comparable form.

`using_config(text, model_dir)` keeps each `Using config: {...}` message
whole (its session_config spans lines), for legacy_config.py's output.
`normalize(text, model_dir)` keeps the INFO lines of TensorFlow's logger
that start with one of `GREPPED`, with the model_dir and the numbers that
vary between runs (losses, rates, times, dates) replaced by a placeholder;
global steps are kept. tests/test_logs215.py compares harness's lines with
the ones tf.estimator 2.15 printed for the same program, recorded by
tests/fixtures/logs215/record.py.
"""

import re

__all__ = ["GREPPED", "PREFIX", "normalize", "using_config"]

PREFIX = "INFO:tensorflow:"
GREPPED = (
    "Using default config.", "Calling model_fn.", "Done calling model_fn.",
    "Create CheckpointSaverHook.", "Graph was finalized.",
    "Restoring parameters from ", "Running local_init_op.",
    "Done running local_init_op.", "Saving checkpoints for ", "loss = ",
    "global_step/sec: ", "Loss for final step: ", "Starting evaluation at ",
    "Evaluation [", "Inference Time : ", "Finished evaluation at ",
    "Saving dict for global step ", "Saving 'checkpoint_path' summary ",
)
_NUM = r"[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)"
_VARYING = (
    (r"loss = " + _NUM, "loss = X"),
    (r"\(" + _NUM + r" sec\)", "(T sec)"),
    (r"global_step/sec: " + _NUM, "global_step/sec: R"),
    (r"Inference Time : " + _NUM + "s", "Inference Time : Ts"),
    (r"evaluation at \S+", "evaluation at DATE"),
    (r"final step: " + _NUM, "final step: X"),
)


def normalize(text, model_dir):
  """The grepped lines of `text` (a process's stderr), comparable."""
  lines = []
  for line in text.splitlines():
    if not line.startswith(PREFIX):
      continue
    message = line[len(PREFIX):]
    if not message.startswith(GREPPED):
      continue
    message = message.replace(model_dir, "MODEL_DIR")
    for pattern, placeholder in _VARYING:
      message = re.sub(pattern, placeholder, message)
    lines.append(message)
  return lines


def using_config(text, model_dir, marker="legacy_config: built"):
  """Each `Using config: {...}` message of `text` with the lines that follow
  it up to `marker` (tests/legacy_programs/legacy_config.py writes it after
  each Estimator), model_dir replaced by MODEL_DIR."""
  messages, current = [], None
  for line in text.splitlines():
    if line.startswith(PREFIX + "Using config: "):
      current = [line[len(PREFIX):]]
    elif current is not None and line == marker:
      messages.append("\n".join(current).replace(model_dir, "MODEL_DIR"))
      current = None
    elif current is not None:
      current.append(line)
  return messages
