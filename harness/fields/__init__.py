"""harness.fields: each harness RunConfig field declared once, no TensorFlow.

    from harness import fields

    fields.FIELDS                      # the table, in RunConfig's order
    fields.default("stop_timeout_secs")  # 10.0
    fields.BY_NAME["xla"].flag.help    # `--xla`'s help

`table` holds the entries (name, default, check, RunConfig's docs, the
flag, the environment fallback); `field` what an entry says. RunConfig
(`harness.run_config.config`), the binary's `JobConfig` and flags
(`harness.cli.job_config`, `harness.cli.flag_definitions`) and the core
modules that need a default or a check read them here.

A new field is one `table.FIELDS` entry, one line in RunConfig's signature
(`name=_D("name")`, in the table's order: tests/test_fields.py says where
it is missing) and the code that reads `config.name`; its property,
`replace()` key, check, docs, JobConfig field, RunConfig argument and flag
follow from the entry. An entry with `env` (a `harness.cluster.env_knobs.Knob`:
a knob whose None falls back to a variable, then a default) is no more:
the plan resolves it (`harness.plan.knobs`), and RunConfig's property, the
binary's RunConfig and the dry run show the plan's seconds.
"""

from harness.fields.field import Field
from harness.fields.field import Flag
from harness.fields.table import AS_WRITTEN
from harness.fields.table import BY_SIZE
from harness.fields.table import BY_NAME
from harness.fields.table import check_max_runs
from harness.fields.table import check_metrics_bind
from harness.fields.table import check_metrics_port
from harness.fields.table import default
from harness.fields.table import DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS
from harness.fields.table import DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS
from harness.fields.table import FIELDS
from harness.fields.table import INPUT_PIPELINES
from harness.fields.table import NAMES
from harness.fields.table import STEPS_PER_LOOP_AUTO
from harness.fields.table import TUNED

__all__ = [
    # The table.
    "FIELDS", "BY_NAME", "NAMES", "default", "Field", "Flag",
    # Values and checks the code below RunConfig uses.
    "STEPS_PER_LOOP_AUTO", "DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS",
    "DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS", "TUNED", "AS_WRITTEN",
    "INPUT_PIPELINES", "BY_SIZE", "check_max_runs", "check_metrics_port",
    "check_metrics_bind",
]
