"""What a training job reports while it runs, and to whom.

    from harness.telemetry import progress

    hooks.append(progress.ProgressLoggerHook(...))  # "step 300 ... steps/s"

`progress` writes the log lines, `step_rate` the steps/s and examples/s
summaries, `live_metrics` the Prometheus endpoint, `trainer_status` (through
`status_post`) the Kubeflow Trainer's status. `core/` adds them to its
loop; nothing here imports `core/`, `guard/` or anything above.
"""
