"""The binaries' parts: flags -> `JobConfig` and its plan -> `run_job`.

    from harness.cli import flags, job

    parsed = flags.parse(
        ["--model_fn=linear", "--input_fn=constant", "--max_steps=10"])
    parsed.plan.task_label, parsed.plan.model_dir   # decided once (cli.plan)
    result = job.run_job(parsed.job, plan=parsed.plan)
    result.metrics, result.model_dir

`python -m harness.main` is that, plus exit statuses and one-line failure
messages (`diagnose`). cli/ may import everything in harness but a binary;
only the binaries, `run` and cli/ import it. docs/ARCHITECTURE.md has a
line per module.
"""
