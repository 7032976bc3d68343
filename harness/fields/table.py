"""harness's RunConfig fields, each declared once: default, check, docs, flag.

    from harness.fields import table

    table.FIELDS[0].name                     # "steps_per_loop"
    table.BY_NAME["xla"].check(True)         # ConfigError for a non-bool
    table.default("stop_timeout_secs")       # 10.0

From `FIELDS` come `RunConfig`'s keyword-only fields (signature checked
against it by tests/test_fields.py, properties, `replace()` keys, checks
and `Args:` docs; `harness.run_config.config`), the `JobConfig` fields and
`run_config_kwargs` (`harness.cli.job_config`), and the flags
(`harness.cli.flag_definitions`). The order is RunConfig's, and its checks
run in it (the first broken rule is the one reported). No TensorFlow here.
"""

import numbers

from harness import errors
from harness.cluster import env_knobs
from harness.cluster import listen
from harness.fields import field as field_lib
from harness.fields.field import Field
from harness.fields.field import Flag

__all__ = [
    "FIELDS", "BY_NAME", "NAMES", "default", "STEPS_PER_LOOP_AUTO",
    "DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS", "DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS",
    "TUNED", "AS_WRITTEN", "INPUT_PIPELINES", "ROUND_ROBIN", "BY_SIZE",
    "PS_PLACEMENTS", "check_max_runs",
    "check_metrics_port", "check_metrics_bind",
]

# steps_per_loop's value for "choose K from the first steps' timing"
# (harness/core/auto_loop.py).
STEPS_PER_LOOP_AUTO = "auto"
# Bound of each start-up check of a remote_cluster's servers (seconds).
DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS = 30.0
# How long a standalone client's claim of its servers outlives its last
# renewal (seconds); see harness.distribute.server_claim.
DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS = 15.0
# input_pipeline: the dataset an input_fn returns for a local graph gets a
# final prefetch(AUTOTUNE) and order-keeping tf.data options
# (harness.core.input_pipeline) ...
TUNED = "tuned"
# ... or is used as the input_fn returned it (tf.estimator 2.15's behaviour).
AS_WRITTEN = "as_written"
INPUT_PIPELINES = (TUNED, AS_WRITTEN)
# ps_placement: parameter-server variables round robin in creation order
# (tf.estimator 2.15's) or by size (harness.core.ps_placement).
ROUND_ROBIN = "round_robin"
BY_SIZE = "by_size"
PS_PLACEMENTS = (ROUND_ROBIN, BY_SIZE)
_MAX_RUNS = 100  # max_runs_without_progress's default.
_METRICS_BIND = "127.0.0.1"  # Loopback: no other machine can scrape.


def _check_steps_per_loop(steps):
  """An int >= 1 (not a bool) or "auto"."""
  if steps != STEPS_PER_LOOP_AUTO and (
      isinstance(steps, bool) or not isinstance(steps, numbers.Integral)
      or steps < 1):
    field_lib.fail(
        "steps_per_loop must be an integer >= 1 (training steps run inside "
        f"one session.run) or {STEPS_PER_LOOP_AUTO!r} (harness picks K from "
        "the first steps' timing).", "use 1 for one step per run.", steps)


def _check_positive(name, why, example):
  """A check that `name` is seconds > 0 (`why`: what it bounds)."""
  def check(value):
    if not field_lib.positive_secs(value):
      field_lib.fail(f"{name} must be a number of seconds > 0 ({why}).",
                     f"use e.g. {example:g}.", value)
  return check


def _secs(name, example, allow_none=False):
  """A check that `name` is seconds > 0 (or None, with `allow_none`)."""
  return lambda value: env_knobs.check_secs(name, value, example=example,
                                            allow_none=allow_none)


def check_max_runs(value, source="max_runs_without_progress"):
  """Returns `value` if it is None or an int >= 1, else raises ConfigError."""
  if value is None or (isinstance(value, int) and not isinstance(value, bool)
                       and value >= 1):
    return value
  raise errors.ConfigError(
      f"`{source}` must be a whole number of session.run calls >= 1 (or "
      f"None to never stop a run that makes no progress), given: {value!r}. "
      f"Fix: use e.g. {_MAX_RUNS}.")


def check_metrics_port(port, source="metrics_port"):
  """Returns `port` if it is an int in 0..65535 (0: off), else raises."""
  if isinstance(port, bool) or not isinstance(port, int) or not (
      0 <= port <= 65535):
    raise errors.ConfigError(
        f"{source}={port!r}: the live metrics port must be an int in "
        "0..65535 (0: no metrics endpoint). Fix: pass e.g. 9464.")
  return port


def check_metrics_bind(bind, source="metrics_bind"):
  """Returns `bind` if it is an IP address or host name, else raises."""
  problem = listen.host_problem(bind)
  if problem:
    raise errors.ConfigError(
        f"{source}={bind!r} {problem}: the live metrics endpoint needs an "
        f"address to listen on. Fix: pass {_METRICS_BIND!r} (this machine "
        "only) or '0.0.0.0' (every interface, for a scraper on another "
        "host).")
  return bind


def _check_input_pipeline(value):
  """One of `INPUT_PIPELINES`."""
  if value not in INPUT_PIPELINES:
    field_lib.fail(
        f"input_pipeline must be one of {', '.join(INPUT_PIPELINES)}.",
        f"use {TUNED!r} (prefetch and order-keeping tf.data options) or "
        f"{AS_WRITTEN!r} (the input_fn's dataset as returned).", value)


def _check_ps_placement(value):
  """One of `PS_PLACEMENTS`."""
  if value not in PS_PLACEMENTS:
    field_lib.fail(
        f"ps_placement must be one of {', '.join(PS_PLACEMENTS)}.",
        f"use {ROUND_ROBIN!r} (creation order, as tf.estimator 2.15) or "
        f"{BY_SIZE!r} (each variable to the ps task holding the fewest "
        "bytes).", value)


def _float_or_none(value):
  return None if value is None else float(value)


_SECS_FIX = "a positive number of seconds."

FIELDS = (
    Field(name="steps_per_loop", default=1, type=int | str,
          check=_check_steps_per_loop,
          doc="training steps run inside one `session.run` (>= 1), or "
          '"auto": K from the measured time of the first steps, bounded by '
          "the summary, logging and checkpoint cadence "
          "(harness.core.auto_loop). Default 1: one step per run, "
          "tf.estimator's exact semantics.",
          flag=Flag(kind=field_lib.STEPS_PER_LOOP, default=STEPS_PER_LOOP_AUTO,
                    help="Training steps inside one session.run: an integer "
                    ">= 1, or auto (K from the measured time of the first "
                    "steps, bounded by the summary, logging and checkpoint "
                    "cadence; 1 where a hook needs every step).")),
    Field(name="remote_connect_timeout_secs",
          default=DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS, type=int,
          check=_check_positive(
              "remote_connect_timeout_secs", "how long the servers of "
              "remote_cluster may take to answer",
              DEFAULT_REMOTE_CONNECT_TIMEOUT_SECS),
          doc="with `remote_cluster`, how long each server may take to "
          "accept a connection and answer (seconds, > 0).",
          flag=Flag(kind=field_lib.INT, default=30, minimum=1, fix=_SECS_FIX,
                    to_run_config=float,
                    help="With --remote_cluster: fail if a server does not "
                    "answer (connect, device list) within this many "
                    "seconds.")),
    Field(name="eval_poll_secs", default=1.0, type=float,
          check=_secs("eval_poll_secs", 1.0),
          doc="how often the evaluator task looks for a new checkpoint "
          "(seconds, > 0); `EvalSpec.throttle_secs` only spaces "
          "evaluations.",
          flag=Flag(kind=field_lib.SECS,
                    help="The evaluator task looks for a new checkpoint "
                    "every this many seconds (--throttle_secs only spaces "
                    "evaluations).")),
    Field(name="eval_idle_timeout_secs", default=None, type=int | None,
          check=_secs("eval_idle_timeout_secs", 600, allow_none=True),
          doc="the evaluator task gives up after this many seconds without "
          "a new checkpoint (None: waits while training may resume).",
          flag=Flag(kind=field_lib.INT, minimum=1,
                    fix="a positive number of seconds, or leave it out to "
                    "wait as long as training may resume.",
                    help="The evaluator task gives up after this long "
                    "without a new checkpoint (default: waits).")),
    Field(name="peer_timeout_secs", default=None, type=float | None,
          env=env_knobs.PEER_TIMEOUT,
          check=_secs("peer_timeout_secs", env_knobs.PEER_TIMEOUT.default,
                      allow_none=True),
          doc="a step of a multi-task job fails after this many seconds "
          "without its peers (None: $HARNESS_PEER_TIMEOUT_SECS, else 60).",
          flag=Flag(kind=field_lib.SECS,
                    help="A training step of a multi-task job fails after "
                    "this many seconds without its peers; the training "
                    "session's close at the end waits as long at most")),
    Field(name="restart_wait_secs", default=None, type=float | None,
          env=env_knobs.RESTART_WAIT,
          check=_secs("restart_wait_secs", env_knobs.RESTART_WAIT.default,
                      allow_none=True),
          doc="how long the evaluator and ps tasks wait for a preempted or "
          "failed chief (None: $HARNESS_RESTART_WAIT_SECS, else 600).",
          flag=Flag(kind=field_lib.SECS,
                    help="How long the evaluator and ps tasks wait for a "
                    "preempted or failed chief to come back")),
    Field(name="force_takeover", default=False, type=bool,
          check=field_lib.check_bool(
              "force_takeover", "take over model_dir's lease from a live "
              "trainer", "use False unless the other trainer is gone."),
          doc="a trainer takes over model_dir's lease even while another "
          "live trainer holds it (see `harness.state.lease`).",
          flag=Flag(kind=field_lib.BOOL,
                    help="Train even while another live trainer holds "
                    "model_dir's lease (it stops at its next refresh). A "
                    "dead or stale holder's lease is taken over without "
                    "this flag.")),
    Field(name="bind_address", default=None, type=str | None,
          check=listen.check_bind_address,
          doc="where this task's in-process TF server listens: None (the "
          "host of its cluster address; TensorFlow 2.21 listens on every "
          'interface instead, and a warning says so) or "*" (all '
          "interfaces, acknowledged). One host raises NotSupportedError "
          "(`harness.cluster.listen`).",
          flag=Flag(kind=field_lib.STRING,
                    help="Where this TF_CONFIG task's server listens. "
                    "Default: its cluster address's host, which TensorFlow "
                    "2.21 cannot honour (it listens on every interface; a "
                    "warning says so); '*' acknowledges all interfaces. One "
                    "host is refused.")),
    Field(name="remote_claim_timeout_secs",
          default=DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS, type=int,
          check=_check_positive(
              "remote_claim_timeout_secs", "how long a standalone client's "
              "claim of its servers outlives its last renewal",
              DEFAULT_REMOTE_CLAIM_TIMEOUT_SECS),
          doc="with `remote_cluster`, the client's claim of the servers "
          "expires this long after its last renewal (renewed every quarter "
          "of it); the servers then restart in place, releasing what a "
          "killed client left (`harness.distribute.server_claim`), seconds "
          "> 0.",
          flag=Flag(kind=field_lib.INT, default=15, minimum=1, fix=_SECS_FIX,
                    to_run_config=float,
                    help="With --remote_cluster: this client's claim of the "
                    "servers expires this long after its last renewal; a "
                    "second client is refused meanwhile, and the servers "
                    "restart once it expires.")),
    Field(name="max_runs_without_progress", default=_MAX_RUNS, type=int,
          check=check_max_runs,
          doc="training stops with `TrainingStalledError` after this many "
          "`session.run` calls leave the global step where it was (a "
          "train_op that never advances it); None never stops.",
          flag=Flag(kind=field_lib.INT, minimum=1,
                    fix="a positive number of session.run calls.",
                    help="Stop training with an error after this many "
                    "session.run calls leave the global step unchanged.")),
    Field(name="stop_timeout_secs", default=10.0, type=float,
          check=_secs("stop_timeout_secs", 10.0),
          doc="after a first SIGTERM/SIGINT, a training process whose step "
          "does not end within this many seconds (a hung input; a save or "
          "an export in progress is not cut) logs the stage it is blocked "
          "in and exits, without the final checkpoint (seconds > 0).",
          flag=Flag(kind=field_lib.SECS, to_run_config=float,
                    help="After a first SIGTERM/SIGINT, a trainer whose "
                    "step does not end within this many seconds logs where "
                    "it is blocked and exits without the final checkpoint "
                    "(a checkpoint save or an export in progress is not "
                    "cut)")),
    Field(name="input_timeout_secs", default=None, type=float | None,
          check=_secs("input_timeout_secs", 600, allow_none=True),
          doc="a local training run whose first batch has not arrived (its "
          "first session.run has not returned) after this many seconds "
          "fails (None: it waits, logging every `input_report_secs`).",
          flag=Flag(kind=field_lib.SECS, to_run_config=_float_or_none,
                    help="A local trainer fails when its first batch has "
                    "not come after this many seconds (default: waits, "
                    "logging every --input_report_secs)")),
    Field(name="input_report_secs", default=10.0, type=float,
          check=_secs("input_report_secs", 10.0),
          doc="while a local trainer waits for its first batch (or for any "
          "later session.run), one `waiting for ...` line every this many "
          "seconds (seconds > 0).",
          flag=Flag(kind=field_lib.SECS, to_run_config=float,
                    help="While a local trainer waits for its first batch "
                    "(or a later step), one 'waiting for ...' line every "
                    "this many seconds")),
    Field(name="metrics_port", default=0, type=int, check=check_metrics_port,
          doc="each training (and evaluator) task serves live Prometheus "
          "metrics on this port (`harness.telemetry.live_metrics`); 0 "
          "(default): no endpoint.",
          flag=Flag(kind=field_lib.PORT,
                    help="Serve live Prometheus metrics (step, steps/s, "
                    "examples/s, loss, ETA, checkpoint age, last eval) at "
                    "http://BIND:PORT/metrics from each task; 0: off.")),
    Field(name="metrics_bind", default=_METRICS_BIND, type=str,
          check=check_metrics_bind,
          doc="the address that endpoint listens on; default 127.0.0.1 "
          '(this machine only), "0.0.0.0" for a remote scraper.',
          flag=Flag(kind=field_lib.STRING,
                    help="Address --metrics_port listens on; 0.0.0.0 lets "
                    "another host (a Prometheus scraper) read it.")),
    Field(name="input_pipeline", default=TUNED, type=str,
          check=_check_input_pipeline,
          doc='"tuned" (default): the dataset an input_fn returns for a '
          "local graph gets a final `prefetch(AUTOTUNE)` and order-keeping "
          "tf.data options (`harness.core.input_pipeline`); its elements "
          'and their order are unchanged. "as_written": used as returned, '
          "as tf.estimator 2.15 did.",
          flag=Flag(kind=field_lib.ENUM, choices=INPUT_PIPELINES,
                    help="tuned: the input_fn's dataset gets a final "
                    "prefetch(AUTOTUNE) and order-keeping tf.data options "
                    "(same elements, same order); as_written: used as "
                    "returned, as tf.estimator did.")),
    Field(name="ps_placement", default=ROUND_ROBIN, type=str,
          check=_check_ps_placement,
          doc='"round_robin" (default): parameter-server variables go to '
          "the ps tasks in turn, in creation order, as tf.estimator 2.15 "
          'placed them; "by_size": each to the task holding the fewest '
          "bytes so far (`harness.core.ps_placement`), so tasks hold even "
          "shares of a model whose large and small variables alternate.",
          flag=Flag(kind=field_lib.ENUM, choices=PS_PLACEMENTS,
                    help="Parameter-server variable placement: round_robin "
                    "(creation order, as tf.estimator) or by_size (each "
                    "variable to the ps task holding the fewest bytes).")),
    Field(name="xla", default=False, type=bool,
          check=field_lib.check_bool(
              "xla", "XLA auto-clustering of the graph", "use False unless "
              "bench figures show XLA helps your model."),
          doc="compile the graph with XLA auto-clustering "
          "(`OptimizerOptions.global_jit_level` ON_1 in session_config; on "
          "CPU also `--tf_xla_cpu_global_jit` in TF_XLA_FLAGS, which takes "
          "effect only before the process's first session). Default False.",
          flag=Flag(kind=field_lib.BOOL,
                    help="Compile the graph with XLA auto-clustering "
                    "(global_jit_level ON_1; on CPU also "
                    "--tf_xla_cpu_global_jit).")),
)
BY_NAME = {f.name: f for f in FIELDS}
NAMES = tuple(BY_NAME)


def default(name):
  """RunConfig's default of the field `name`."""
  return BY_NAME[name].default
