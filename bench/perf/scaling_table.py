"""`bench.perf.scaling`'s section of bench/RESULTS.md (no TensorFlow here).

    text = scaling_table.render(setups=..., runs=..., command=..., ...)

One section per model and strategy, between its own markers: global
examples/s of each setup (runner x workers), the speed-up of N workers over
one for each runner, harness over the bare loop and over Keras fit at each
worker count, and every run with the load before it.
"""

import dataclasses
import datetime
import re
import statistics

from bench import report

__all__ = ["Setup", "MODEL_DESCRIPTIONS", "RUNNER_DESCRIPTIONS", "markers",
           "median_rate", "speedups", "run_lines", "every_run", "render", "GRADIENT_BYTES",
           "section_figures", "readme_sentence"]

MODEL_DESCRIPTIONS = {
    "mlp": "the bench MLP (784-256-256-10, Adam 1e-3; ~1.1 MB of gradients)",
    "cnn": "the bench CNN (conv 32 3x3, pool, dense 64, dense 10; Adam 1e-3;"
           " ~1.4 MB of gradients)",
    "wide": "the wide model (8 hashed categorical columns of 100,000 "
            "buckets, 4 ids each -> embedding 16 + linear, dense 64, 10; "
            "Adagrad 0.05)",
}
RUNNER_DESCRIPTIONS = {
    "harness": "`harness.Estimator.train`, harness's defaults (the strategy "
               "as `--strategy` builds it, the default session config, "
               "`steps_per_loop` as given: auto is `harness.main`'s default)",
    "bare": "the same graph and strategy driven by a plain "
            "`session.make_callable` loop in every task (no harness)",
    "harness_by_size": "harness with `RunConfig(ps_placement=\"by_size\")`"
                       " (each ps variable to the task holding the fewest "
                       "bytes; harness's default is round robin)",
    "bare_input_fn": "the bare loop fed through "
                     "`strategy.make_input_fn_iterator` (TensorFlow's "
                     "`MultiDeviceIterator`, as tf.estimator 2.15 fed a "
                     "strategy and harness did before 10e9e4b)",
    "keras": "tf-keras `Model.fit` under TF2 `MultiWorkerMirroredStrategy`",
    "estimator215": "tf.estimator 2.15's `Estimator.train` on TensorFlow "
                    "2.15 (the venv of `python -m bench.tf215.tf215_env`), "
                    "its defaults: one step a `session.run`, the same v1 "
                    "strategy, model_fn and input_fn as harness",
}
# Acceptance targets on 2 cores (issue 50): 2 workers over one.
SPEEDUP_TARGETS = {"cnn": 1.85, "mlp": 1.6}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Setup:
  """One cluster run: `workers` trainers of `runner`, trainer i on core i."""
  runner: str
  workers: int
  steps_per_loop: str = "1"

  @property
  def label(self):
    loop = (f", K={self.steps_per_loop}" if self.runner.startswith(
        "harness") else "")
    return (f"{self.runner}, {self.workers} worker"
            f"{'s' if self.workers > 1 else ''}{loop}")


def markers(model, strategy="collective", cores=2):
  """The (begin, end) markers of this model's section in RESULTS.md; a
  machine of more than 2 cores has sections of its own."""
  name = model if strategy == "collective" else f"{model} {strategy}"
  if name == "mlp":
    name = ""
  tag = f"bench.perf.scaling {name}".rstrip()
  if cores > 2:
    tag += f" {cores} cores"
  return (f"<!-- {tag}: generated section begins -->",
          f"<!-- {tag}: generated section ends -->")


def _fmt(value, spec):
  return "n/a" if value is None else format(value, spec)


def median_rate(results):
  """Median global examples/s of the runs that did not fail, or None."""
  ok = [r["examples_per_sec"] for r in results if "error" not in r]
  return statistics.median(ok) if ok else None


def _per_round(runs, a, b):
  """Per-round b/a of global examples/s (rounds where both ran)."""
  return [y["examples_per_sec"] / x["examples_per_sec"]
          for x, y in zip(runs.get(a, ()), runs.get(b, ()))
          if "error" not in x and "error" not in y]


def speedups(setups, runs):
  """[(what, median of per-round ratios, [each round])]: N workers over 1
  for every runner, then harness over bare and over keras at every N."""
  rows = []
  by_key = {(s.runner, s.workers, s.steps_per_loop): s for s in setups}
  for s in setups:
    one = by_key.get((s.runner, 1, s.steps_per_loop))
    if s.workers > 1 and one is not None:
      rows.append((f"{s.label} / 1 worker", _per_round(runs, one, s)))
  for s in setups:
    if not s.runner.startswith("harness"):
      continue
    if s.runner == "harness_by_size":  # Over round robin, same K.
      base = by_key.get(("harness", s.workers, s.steps_per_loop))
      if base is not None:
        rows.append((f"{s.label} / {base.label}", _per_round(runs, base, s)))
    for other in ("bare", "keras", "estimator215"):
      base = by_key.get((other, s.workers, "1"))
      if base is not None:
        rows.append((f"{s.label} / {base.label}", _per_round(runs, base, s)))
  return [(what, statistics.median(each) if each else None, each)
          for what, each in rows]


def _summary(setups, runs):
  lines = ["| setup | global examples/s (median; min-max) | per worker | "
           "first step (s, latest worker) |", "|---|---|---|---|"]
  for setup in setups:
    ok = [r for r in runs[setup] if "error" not in r]
    med = median_rate(ok)
    span = (f" ({min(r['examples_per_sec'] for r in ok):.0f}-"
            f"{max(r['examples_per_sec'] for r in ok):.0f})" if ok else "")
    first = (statistics.median(r["first_step_secs"] for r in ok)
             if ok else None)
    lines.append(f"| {setup.label} | {_fmt(med, '.0f')}{span} | "
                 f"{_fmt(med and med / setup.workers, '.0f')} | "
                 f"{_fmt(first, '.1f')} |")
  return lines


def _ratios(setups, runs, model):
  lines = ["| ratio | median of per-round ratios (each round) |",
           "|---|---|"]
  for what, med, each in speedups(setups, runs):
    lines.append(f"| {what} | {_fmt(med, '.2f')}x "
                 f"({', '.join(f'{r:.2f}' for r in each)}) |")
  target = SPEEDUP_TARGETS.get(model)
  if target:
    lines += ["", f"Target on 2 cores (issue 50): harness 2 workers >= "
              f"{target}x one worker; harness >= 0.95x bare and >= 1.5x "
              "keras at every count."]
  return lines


def _raw(setups, runs, rounds):
  lines = ["| round | setup | global examples/s | slowest worker (s) | "
           "load1 before | error |", "|---|---|---|---|---|---|"]
  for i in range(rounds):
    for setup in setups:
      if i < len(runs[setup]):
        r = runs[setup][i]
        error = r.get("error", "").replace("\n", " ").replace("|", "/")
        lines.append(f"| {i + 1} | {setup.label} | "
                     f"{_fmt(r.get('examples_per_sec'), '.0f')} | "
                     f"{_fmt(r.get('seconds'), '.2f')} | {r['load1']:.2f} | "
                     f"{error[:160]} |")
  return lines


def run_lines(*, command, rounds, elapsed_secs, uptime_before, uptime_after,
              autogroup):
  """The lines under a section's title: when and how it ran, the machine,
  its load, the bench's autogroup; then an empty line."""
  now = datetime.datetime.now(datetime.timezone.utc)
  return [
      f"Run {now:%Y-%m-%d %H:%M} UTC, `{command}` (from the project root, "
      f"with `.venv/bin/python`), {rounds} interleaved rounds, "
      f"{elapsed_secs:.0f} s in all.",
      "",
      report.machine(),
      f"- `uptime` before: {uptime_before}; after: {uptime_after}",
      f"- scheduler autogroup of the bench: {autogroup or 'n/a'}",
      "",
  ]


def every_run(rows, end):
  """A section's folded table of every run, then its end marker."""
  return ["<details><summary>Every run</summary>", "", *rows, "",
          "</details>", end]


def render(*, setups, runs, command, rounds, warmup_steps, timed_steps,
           elapsed_secs, uptime_before, uptime_after, model, strategy,
           autogroup, batch_per_worker, ps=0, cores=2):
  """The generated section for RESULTS.md, markers included."""
  begin, end = markers(model, strategy, cores)
  runners = dict.fromkeys(s.runner for s in setups)
  kind = ("v1 `MultiWorkerMirroredStrategy` (collective)"
          if strategy == "collective" else
          f"v1 `ParameterServerStrategy`, {ps} ps tasks")
  return "\n".join([
      begin,
      f"## Multi-worker scaling ({strategy}, 1 core per worker): {model}"
      + (f", {cores} cores" if cores > 2 else ""),
      "",
      *run_lines(command=command, rounds=rounds, elapsed_secs=elapsed_secs,
                 uptime_before=uptime_before, uptime_after=uptime_after,
                 autogroup=autogroup),
      f"{kind}, a TF_CONFIG cluster on 127.0.0.1, worker i under `taskset "
      f"-c i`; {MODEL_DESCRIPTIONS[model]}, batch {batch_per_worker} per "
      f"worker, in-memory data sharded by worker; {warmup_steps} warm-up + "
      f"{timed_steps} timed steps. Global examples/s = " + (
          f"workers x {batch_per_worker} x timed steps / seconds of the "
          "slowest worker." if strategy == "collective" else
          "the sum of each trainer's examples/s (its timed steps, those of "
          "whole runs under auto, over its own seconds)."),
      "",
      *[f"- {r}: {RUNNER_DESCRIPTIONS[r]}" for r in runners],
      "",
      *_summary(setups, runs),
      "",
      *_ratios(setups, runs, model),
      "",
      *every_run(_raw(setups, runs, rounds), end),
  ])


# Bytes of float32 gradients a step all-reduces (the variables' sizes).
GRADIENT_BYTES = {
    "mlp": 4 * (784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10),
    "cnn": 4 * (3 * 3 * 32 + 32 + 13 * 13 * 32 * 64 + 64 + 64 * 10 + 10),
}
_ROW = re.compile(r"^\| (?P<label>[^|]+?) \| (?P<value>[\d.]+)x? [(|]",
                  re.MULTILINE)
_LOAD = re.compile(r"`uptime` before: load average: (?P<load>[\d.]+)")


def section_figures(results_text, model):
  """{label: median} of the collective `model` section's summary rows
  (global examples/s) and ratio rows (x), plus "load" (before); {} when
  RESULTS.md has no such section."""
  begin, end = markers(model)
  if begin not in results_text:
    return {}
  text = results_text.split(begin, 1)[1].split(end, 1)[0]
  text = text.split("<details>", 1)[0]
  figures = {m["label"]: float(m["value"]) for m in _ROW.finditer(text)}
  load = _LOAD.search(text)
  if load:
    figures["load"] = float(load["load"])
  return figures


def _model_phrase(model, figures):
  one = figures.get("harness, 1 worker, K=auto")
  two = figures.get("harness, 2 workers, K=auto")
  if not one or not two:
    return None, None
  compute_ms = 1000.0 * 256 / one
  mb = GRADIENT_BYTES[model] / 1e6
  per_mb = (1000.0 * 2 * 256 / two - compute_ms) / mb
  name = {"mlp": "MLP", "cnn": "CNN"}[model]
  speedup = figures.get("harness, 2 workers, K=auto / 1 worker", two / one)
  return (f"the bench {name} ({compute_ms:.1f} ms of compute a step, "
          f"{mb:.1f} MB of gradients) at {speedup:.2f}x"), per_mb


def _range(values):
  values = sorted(values)
  if not values:
    return "n/a"
  return (f"{values[0]:.2f}x" if len(values) == 1 or values[0] == values[-1]
          else f"{values[0]:.2f}-{values[-1]:.2f}x")


def _span(values):
  """"a-b" of the values at one decimal, or "a" where both round alike."""
  low, high = f"{min(values):.1f}", f"{max(values):.1f}"
  return low if low == high else f"{low}-{high}"


def readme_sentence(results_text):
  """The README's `scaling` span from RESULTS.md's collective sections
  (cnn, mlp), or None without both."""
  phrases, per_mb, vs_bare, vs_keras, vs_215, loads = [], [], [], [], [], []
  for model in ("cnn", "mlp"):
    figures = section_figures(results_text, model)
    phrase, cost = _model_phrase(model, figures)
    if phrase is None:
      return None
    phrases.append(phrase)
    per_mb.append(cost)
    loads.append(figures.get("load", 0.0))
    for label, value in figures.items():
      if label.startswith("harness,") and " / bare, " in label:
        vs_bare.append(value)
      elif label.startswith("harness,") and " / keras, " in label:
        vs_keras.append(value)
      elif label.startswith("harness,") and " / estimator215, " in label:
        vs_215.append(value)
  cost, load = _span(per_mb), _span(loads)
  others = (f"{_range(vs_keras)} Keras `fit`'s and {_range(vs_215)} "
            "tf.estimator 2.15's (`train_and_evaluate` on TensorFlow 2.15)"
            if vs_215 else f"{_range(vs_keras)} Keras `fit`'s")
  return (
      f"2 collective workers, one core each, 256 examples per worker per "
      f"step, trained {phrases[0]} and {phrases[1]} one worker's examples/s"
      f" (2-core machine, load {load} before; "
      f"`python -m bench.perf.scaling`, bench/RESULTS.md); harness ran at "
      f"{_range(vs_bare)} the bare `make_callable` loop's speed, "
      f"{others}. Each step's all-reduce added "
      f"a = {cost} ms per MB of gradients here (gRPC on one machine; "
      "MLP and CNN), so N workers train about N c / (c + a x MB) times as "
      "fast as one, c being a step's compute: where c is not several times "
      "a x MB, more workers lose time")
