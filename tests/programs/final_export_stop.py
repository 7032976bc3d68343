"""SIGTERM during an evaluator's export, with real signals, for
tests/test_final_export_stop.py::

    python -m tests.programs.final_export_stop MODEL_DIR final|not_final

Installs the binary's handlers (as harness.main does), then runs
`CheckpointEvaluator.export` with one exporter that sends this process a
SIGTERM and takes 0.5 s more. Prints `exports: [...]` and exits 0 when the
export returns; prints `terminated in: <stage>` and exits 143 when it raises
`Terminated`. Then waits past the stop bound (2 s): the bound must not end
a finished job.
"""

import os
import signal
import sys
import time
import types

from harness.distribute import checkpoint_evaluator as evaluator_lib
from harness.guard import stop_signal


class _SignalledExporter:
  name = "signalled"

  def export(self, **kwargs):
    del kwargs
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.5)  # The signal waits for the export's end.
    return "/export/signalled/1"


def main(model_dir, final):
  stop_signal.STOP_SIGNAL.install_for_process(label="evaluator/0",
                                              stop_timeout_secs=2)
  checkpoint_evaluator = evaluator_lib.CheckpointEvaluator(
      types.SimpleNamespace(model_dir=model_dir),
      types.SimpleNamespace(exporters=[_SignalledExporter()]), 100)
  try:
    exports = checkpoint_evaluator.export(
        {"global_step": 100}, os.path.join(model_dir, "model.ckpt-100"),
        final)
  except stop_signal.Terminated:
    print(f"terminated in: {stop_signal.STOP_SIGNAL.terminated_in}",
          flush=True)
    return 143
  print(f"exports: {exports}", flush=True)
  time.sleep(3)  # Past the stop bound.
  print("still running after the bound", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1], sys.argv[2] == "final"))
