"""The RESULTS.md section of `bench.tf215.vs215`: tables of rates, per-round
ratios and issue 26's targets from the rounds' results.

    text = vs215_table.render(runs, cases=CASES, runners=RUNNERS, ...)
"""

import statistics
import time

from bench import report

__all__ = ["BEGIN", "END", "render"]

BEGIN = "<!-- bench.tf215.vs215: generated section begins -->"
END = "<!-- bench.tf215.vs215: generated section ends -->"


def _median(values):
  return statistics.median(values) if values else None


def _rate(runs, round_index, case, label):
  result = runs[round_index].get((case, label), {})
  return result.get("examples_per_sec")


def _paired(runs, case, mine, theirs):
  """Per-round ratios mine/theirs over the quiet rounds (see main)."""
  ratios = []
  for i in range(len(runs)):
    if runs[i].get("loud"):
      continue
    a, b = _rate(runs, i, case, mine), _rate(runs, i, case, theirs)
    if a and b:
      ratios.append(a / b)
  return ratios


def _fmt_ratios(ratios):
  """`median x (min-max; each round's)`."""
  if not ratios:
    return "n/a"
  each = ", ".join(f"{r:.2f}" for r in ratios)
  return (f"{_median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}; "
          f"{each})")


def render(runs, *, cases, runners, targets, rounds, elapsed_secs, loads,
           command, profiles, max_load):
  """The generated RESULTS.md section (markers included).

  Args:
    runs: one dict a round: {(case name, runner label): result} and "loud".
    cases, runners: `bench.tf215.vs215`'s selected Case and Runner tuples.
    targets: (case name, mine, theirs, at least) rows.
  """
  labels = [r.label for r in runners]
  quiet = [i for i, r in enumerate(runs) if not r.get("loud")]
  loud = [str(i + 1) for i, r in enumerate(runs) if r.get("loud")]
  lines = [BEGIN, "",
           "## harness vs tf.estimator 2.15 (`bench.tf215.vs215`)", "",
           f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
           f"`{command}` (from the project root), {rounds} interleaved "
           f"rounds, {elapsed_secs / 60:.1f} min in all. Each round starts "
           f"only at a 1-minute load average <= {max_load} (nothing else "
           "heavy on the 2-core machine); `uptime` before each round: "
           f"{'; '.join(loads)}. "
           + (f"**Rounds {', '.join(loud)} started louder and are left out "
              "of the figures.** " if loud else "") +
           "Figures are medians over the quiet rounds; ratios are per round "
           "(the two runs of a ratio ran minutes apart at most): median "
           "(min-max; each round's).", ""]
  if not quiet:
    lines += ["**No round started quiet: no figures are reported.**", "",
              END]
    return "\n".join(lines)
  lines += [
           report.machine(),
           "- tf.estimator 2.15: tensorflow-cpu 2.15 + tensorflow-estimator "
           "2.15 in a side venv (`bench.tf215.tf215_env`), the same program "
           "text "
           "(`tf.estimator.*` there, `harness.*` here), same RunConfig "
           "(log/summary every 100 steps, checkpoint every 600 s, "
           "tf_random_seed fixed).",
           "", "Cases: `mlp` and `cnn` are the MLP 784-256-256-10 and the "
           "seeds' CNN (`model_fns/mnist_cnn.py`'s network) in "
           "`tf.compat.v1.layers`, Adam(1e-3), in one custom model_fn over "
           "8,192 random in-memory examples (`bench.configs.data`, "
           "`Dataset.from_tensor_slices(...).repeat().batch(B)`). The other "
           "rows are legacy programs (`bench.tf215.programs`, data generated "
           "once "
           "with a fixed seed under /tmp/harness_bench_data; no prefetch in "
           "any input_fn, as legacy code wrote them): `census_csv` is wide & "
           "deep, `DNNLinearCombinedClassifier(dnn_hidden_units=[64, 32])` "
           "with its default optimizers (Ftrl, Adagrad) over a 200,000-row "
           "census-style CSV (age, education of 16 strings, occupation of "
           "1,000, hours_per_week, capital_gain, native_country of 40, "
           "label) read by `TextLineDataset(...).skip(1).map(decode_csv "
           "parser).repeat().batch(B)`; its columns are numeric, "
           "bucketized(age), vocabulary-list(education), hash-bucket "
           "(occupation 1,000; country 100), crossed(education x occupation, "
           "10,000), embedding(occupation, 8; country, 4) and "
           "indicator(education). `tfrecord` reads 20,000 tf.Example records "
           "(784 float pixels + int64 label, 4 TFRecord shards) with "
           "`TFRecordDataset(files).repeat().batch(B).map(parse_example)` "
           "into the MLP above (custom model_fn, `EstimatorSpec`). "
           "`numpy_dnn` is `DNNClassifier(hidden_units=[256, 256])` (default "
           "Adagrad) on one numeric_column of shape [784], fed the MLP's "
           "8,192 arrays by `numpy_input_fn(batch_size=128, num_epochs=None, "
           "shuffle=True)` (2.15: `tf.compat.v1.estimator.inputs`' queue "
           "runners; harness: `harness.inputs`' tf.data).",
           "", "Rate: examples/s over the timed steps, from the global step "
           "each run starts at and the clock at each run's end (same "
           "measure for 1 or K steps a run). Bare loop: "
           "`session.run(train_op)` in a Python loop, no hooks, no "
           "MonitoredSession, same graph (for a program on TF 2.21: its "
           "input_fn's dataset as written, through an initializable iterator, "
           "and harness's "
           "`estimator.model_fn` in TRAIN mode; there is no TF 2.15 bare "
           "loop of a program: n/a). `harness K=1 as_written` passes "
           "`RunConfig(input_pipeline=\"as_written\")` (the input_fn's "
           "dataset as returned); the other harness runners keep the "
           "default.",
           "", "| case | " + " | ".join(labels) + " |",
           "|---|" + "---|" * len(labels)]
  for case in cases:
    cells = []
    for runner in runners:
      rates = [r for r in (_rate(runs, i, case.name, runner.label)
                           for i in quiet) if r]
      cells.append("n/a" if not runner.applies_to(case) else
                   f"{_median(rates):,.0f}" if rates else "failed")
    lines.append(f"| {case.name} | " + " | ".join(cells) + " |")
  lines += ["", "Ratios (median of per-round ratios, each round's):", "",
            "| case | harness K=1 / 2.15 | K=auto / 2.15 | K=auto / K=1 | "
            "K=1 / K=1 as_written | "
            "2.21 bare / 2.15 bare (kernels) | 2.15 / its bare | "
            "harness K=1 / its bare | K=auto xla / K=auto |",
            "|---|---|---|---|---|---|---|---|---|"]
  for case in cases:
    n = case.name
    lines.append("| " + " | ".join([
        n,
        _fmt_ratios(_paired(runs, n, "harness K=1", "tf.estimator 2.15")),
        _fmt_ratios(_paired(runs, n, "harness K=auto", "tf.estimator 2.15")),
        _fmt_ratios(_paired(runs, n, "harness K=auto", "harness K=1")),
        _fmt_ratios(_paired(runs, n, "harness K=1",
                            "harness K=1 as_written")),
        _fmt_ratios(_paired(runs, n, "tf 2.21 bare loop",
                            "tf 2.15 bare loop")),
        _fmt_ratios(_paired(runs, n, "tf.estimator 2.15",
                            "tf 2.15 bare loop")),
        _fmt_ratios(_paired(runs, n, "harness K=1", "tf 2.21 bare loop")),
        _fmt_ratios(_paired(runs, n, "harness K=auto xla", "harness K=auto")),
    ]) + " |")
  lines += ["", "Targets (issue 26):", "",
            "| case | target | median of per-round ratios | status |",
            "|---|---|---|---|"]
  selected = {c.name for c in cases}
  for name, mine, theirs, floor in (t for t in targets if t[0] in selected):
    ratios = _paired(runs, name, mine, theirs)
    status = ("n/a" if not ratios else
              "met" if _median(ratios) >= floor else "NOT met")
    lines.append(f"| {name} | {mine} >= {floor}x {theirs} | "
                 f"{_fmt_ratios(ratios)} | {status} |")
  lines += ["", "K chosen by auto (the INFO line, per round):", ""]
  for case in cases:
    chosen = [runs[i].get((case.name, "harness K=auto"), {}).get("auto", "?")
              for i in range(len(runs))]
    lines.append(f"- {case.name}: " + " / ".join(
        c.strip(": ").split(" (")[0] for c in chosen))
  errors = [(i, k, v["error"]) for i, r in enumerate(runs)
            for k, v in r.items() if isinstance(v, dict) and "error" in v]
  if errors:
    lines += ["", "Failed runs:", ""]
    lines += [f"- round {i + 1} {k[0]} {k[1]}: {e[:300]}"
              for i, k, e in errors]
  for title, text in profiles:
    lines += ["", f"cProfile, {title} (top by own time):", "", "```",
              text.rstrip(), "```"]
  lines += ["", END]
  return "\n".join(lines)
