"""The binaries' parts: flags -> `JobConfig` -> `run_job`, and what they print.

    from harness.cli import flags, job

    result = job.run_job(flags.parse(
        ["--model_fn=linear", "--input_fn=constant", "--max_steps=10"]))
    result.metrics, result.model_dir

`python -m harness.main` is that, plus exit statuses and one-line failure
messages (`diagnose`). cli/ may import everything in harness but a binary;
only the binaries, `run` and cli/ import it. docs/ARCHITECTURE.md has a
line per module.
"""
