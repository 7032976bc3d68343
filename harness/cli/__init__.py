"""The binaries' parts: flags -> `JobConfig` -> `run_job`, and what they print.

`flags` (every flag, validated), `job` (`run_job`: wiring a run),
`diagnose` (pre-run checks, one-line failure explanations), `registry`
(names -> model_fns/ input_fns/), `results_text`, `legacy_imports`,
`tensorboard_server`, `bad_flags` (shared bad-flag and --help handling).
The binaries themselves stay at the top (`harness/main.py`; the launcher,
the standard server and the Kubernetes renderer are their own packages,
`harness/launch/`, `harness/server/` and `harness/k8s/`) so `python -m
harness.main` and the console scripts keep their names.

Import rule: cli/ may import everything in harness; only the binaries,
`compat`/`run` and cli/ itself import cli/.
"""
