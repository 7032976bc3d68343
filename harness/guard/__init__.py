"""The guards around a training loop: stop signals, preemption, lost peers.

    from harness import guard

    guard.notify_preemption()   # a scheduler's notice: stop, save, exit

    from harness.guard import preemption

    run_guard = preemption.TrainingGuard.for_run(config, context, model_dir)
    creator = run_guard.wrap_creator(creator)   # lost peers name themselves
    hooks.append(run_guard.hook)                # SIGTERM -> save -> exit 143

`core/train_loop` puts them around its MonitoredSession; the binaries,
`training` and `distribute/` read the process-wide stop flag
(`stop_signal.STOP_SIGNAL`). Nothing here imports `core/`, `telemetry/` or
anything above; docs/RELIABILITY.md is the recovery model they implement.
"""

# pylint: disable=unused-import
from harness.guard.stop_signal import notify_preemption
