"""Graph building and the session loop: input_fn -> graph -> MonitoredSession.

`trainer` (the one training entry), `input_pipeline`, `train_graph` (the
TRAIN graph), `train_loop` (its session loop), `progress` (the progress
line), `step_loop`, `loop_spec`,
`auto_loop` (`steps_per_loop`), `evaluation` (one pass), `prediction`
(predict's session loop), `preemption`, `peers`, `watchdog`, `stall`,
`step_rate`.

Import rule: never imports cli/, distribute/, `hooks`, the binaries (`main`,
`launch`, `server`, `k8s`), `compat`/`run`, `model_fns/` or `input_fns/`
(tests/test_layering.py).
"""
