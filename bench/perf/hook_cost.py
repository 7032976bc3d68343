"""Where harness's per-step time goes: MonitoredSession and each hook.

    python -m bench.perf.hook_cost                 # 3 rounds, writes RESULTS.md
    python -m bench.perf.hook_cost --rounds=5 --out=/tmp/h.md

One process, one graph: the bench MLP (784 -> 256 -> 256 -> 10, Adam) at
batch 32 on the in-memory data of bench.configs. Each variant trains 100
warm-up and `--steps` timed steps in a fresh session; variants alternate
within each round, and the table shows per-variant medians over rounds:

* bare: `session.run(train_op)` on a plain Session (bench.perf.run's floor);
* bare + loss: the same, fetching `[train_op, loss]` as Estimator's loop does;
* MonitoredSession: no hooks, fetching `[train_op, loss]`;
* + <hook>: MonitoredSession with that one hook harness adds to a local run;
* all hooks: all of them, as `Estimator.train` has them (no user hook).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

from bench import configs
from bench import report

BEGIN = "<!-- bench.perf.hook_cost: generated section begins -->"
END = "<!-- bench.perf.hook_cost: generated section ends -->"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_HOOKS = ("nan", "progress", "stop", "checkpoint", "step_counter", "summary")
_VARIANTS = (("bare", None), ("bare + loss", None), ("MonitoredSession", ()),
             *((f"+ {h}", (h,)) for h in _HOOKS), ("all hooks", _HOOKS))


def _make_hooks(tf, names, *, loss, global_step, model_dir):
  """The hooks of a local `Estimator.train`, by short name."""
  from harness import hooks as hooks_lib  # pylint: disable=g-import-not-at-top
  from harness.core import step_loop  # pylint: disable=g-import-not-at-top
  train = tf.compat.v1.train
  makers = {
      "nan": lambda: train.NanTensorHook(loss),
      "progress": lambda: hooks_lib.ProgressLoggerHook(
          loss_tensor=loss, global_step_tensor=global_step,
          every_n_steps=100),
      "stop": lambda: hooks_lib.StopAtStepHook(last_step=10**9),
      "checkpoint": lambda: train.CheckpointSaverHook(model_dir,
                                                      save_secs=600),
      "step_counter": lambda: train.StepCounterHook(every_n_steps=100,
                                                    output_dir=model_dir),
      "summary": lambda: step_loop.SummarySaverHook(
          save_steps=100, output_dir=model_dir, scaffold=train.Scaffold()),
  }
  return [makers[name]() for name in names]


def measure(rounds, steps, warmup=100):
  """{variant: [ms/step per round]}."""
  from absl import logging  # pylint: disable=g-import-not-at-top
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)  # No progress lines while timing.
  images, labels = configs.data("mlp")
  results = {name: [] for name, _ in _VARIANTS}
  with tf.Graph().as_default():
    tf.compat.v1.random.set_random_seed(configs.SEED)
    dataset = tf.data.Dataset.from_tensor_slices(
        (images, labels)).repeat().batch(32)
    x, y = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    loss, train_op = configs.v1_train_op(tf, "mlp", x, y)
    global_step = tf.compat.v1.train.get_global_step()
    tf.compat.v1.summary.scalar("loss", loss)
    session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    for _ in range(rounds):
      for name, hook_names in _VARIANTS:
        fetches = train_op if name == "bare" else [train_op, loss]
        with tempfile.TemporaryDirectory() as model_dir:
          if hook_names is None:
            session = tf.compat.v1.Session(config=session_config)
            session.run(tf.compat.v1.global_variables_initializer())
          else:
            session = tf.compat.v1.train.MonitoredSession(
                tf.compat.v1.train.ChiefSessionCreator(config=session_config),
                hooks=_make_hooks(tf, hook_names, loss=loss,
                                  global_step=global_step,
                                  model_dir=model_dir))
          with session:
            for _ in range(warmup):
              session.run(fetches)
            start = time.perf_counter()
            for _ in range(steps):
              session.run(fetches)
            elapsed = time.perf_counter() - start
        results[name].append(elapsed / steps * 1e3)
  return results


def render(results, *, command, elapsed_secs, uptime_before, uptime_after):
  """The RESULTS.md section, markers included."""
  bare = statistics.median(results["bare"])
  monitored = statistics.median(results["MonitoredSession"])
  lines = [
      BEGIN,
      "## Per-step overhead: MonitoredSession and each hook (mlp b32)",
      "",
      f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
      f"`{command}`, {elapsed_secs:.0f} s; `uptime` before: "
      f"{uptime_before}; after: {uptime_after}.",
      "",
      report.machine(),
      "",
      "One process; each variant a fresh session on the same graph "
      "(bench.perf.hook_cost's docstring). '+ hook' rows are MonitoredSession "
      "with that hook alone; 'vs MonitoredSession' is the hook's own cost.",
      "",
      "| variant | ms/step (median) | each round | vs bare | "
      "vs MonitoredSession |",
      "|---|---|---|---|---|",
  ]
  for name, _ in _VARIANTS:
    median = statistics.median(results[name])
    rounds = ", ".join(f"{v:.3f}" for v in results[name])
    versus = (f"{median - monitored:+.3f} ms" if name.startswith("+") or
              name == "all hooks" else "")
    lines.append(f"| {name} | {median:.3f} | {rounds} | "
                 f"{bare / median:.2f}x | {versus} |")
  lines += ["", END]
  return "\n".join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m bench.perf.hook_cost",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--steps", type=int, default=1500)
  parser.add_argument("--out", default=os.path.join(_ROOT, "bench",
                                                    "RESULTS.md"))
  argv = sys.argv[1:] if argv is None else argv
  args = parser.parse_args(argv)
  return report.measure_and_write(
      "python -m bench.perf.hook_cost", argv,
      lambda: measure(args.rounds, args.steps), render,
      out=args.out, begin=BEGIN, end=END)


if __name__ == "__main__":
  sys.exit(main())
