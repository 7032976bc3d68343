"""The text `harness.main` prints after a job: the eval table and the summary.

No TensorFlow; `harness.cli.job` calls it with a `JobResult` and its `JobConfig`.
"""

from harness.cli import tensorboard_server
from harness.telemetry import live_metrics

__all__ = ["format_metrics", "summary"]


def format_metrics(metrics, label):
  """The evaluation results as a small aligned table."""
  step = metrics.get("global_step")
  rows = sorted((k, v) for k, v in metrics.items() if k != "global_step")
  width = max([len("metric")] + [len(k) for k, _ in rows])
  lines = [f"eval results | {label} | global_step {step}",
           f"  {'metric':<{width}}  value"]
  for key, value in rows:
    lines.append(f"  {key:<{width}}  {_number(value)}")
  return "\n".join(lines)


def _number(value):
  try:
    number = float(value)
  except (TypeError, ValueError):
    return str(value)
  return f"{number:.6g}"


def summary(result, job):
  """The closing block: task, mode, model_dir, checkpoint, exports, the
  live metrics URL (when this process served one)."""
  if result.task.startswith("ps/"):  # It served; the trainers saved.
    return (f"done | {result.task} | served variables until training ended\n"
            f"  {'model_dir:':<19} {result.model_dir}")
  lines = [f"done | {result.task} | {job.mode}"]
  if result.model_dir_removed:  # Nothing below is left to point at.
    return "\n".join(lines + [
        f"  {'model_dir:':<19} {result.model_dir} (temporary: removed; "
        "--keep_model_dir keeps it)"])
  rows = [("model_dir", result.model_dir),
          ("latest checkpoint", result.latest_checkpoint or "none")]
  rows += [("export", path) for path in result.export_paths]
  if result.predictions_path:
    rows.append(("predictions", result.predictions_path))
  rows.append(("tensorboard", tensorboard_server.command_text(
      result.model_dir)))
  if live_metrics.url():
    rows.append(("metrics", live_metrics.url()))
  lines += [f"  {key + ':':<19} {value}" for key, value in rows]
  return "\n".join(lines)
