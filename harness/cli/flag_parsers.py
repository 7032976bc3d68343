"""The value parsers of `harness.main`'s flags (no TensorFlow).

    flag_parsers.normalize_strategy("MultiWorkerMirroredStrategy")  # "collective"
    flag_parsers.parse_params_text("learning_rate=0.01,optimizer=adam")

Each `*Parser` is an absl `ArgumentParser` that `harness.cli.
flag_definitions` defines a flag with; a ValueError's text becomes the
`flag --x=y: why` line of `harness.cli.flags.parse`.
"""

import difflib
import json
import re

from absl import flags

from harness import cluster as cluster_lib
from harness import errors
from harness.cli import job_config
from harness.cluster.strategy_kind import StrategyKind

__all__ = ["normalize_strategy", "parse_params_text", "StrategyParser",
           "ParamsParser", "RemoteClusterParser", "StepsPerLoopParser"]

_STRATEGY_SPELLINGS = {
    "mirrored": "mirrored", "mirror": "mirrored",
    "collective": "collective", "multiworkermirrored": "collective",
    "multiworker": "collective", "mwms": "collective",
    "collectiveallreduce": "collective",
    "parameterserver": "parameter_server", "ps": "parameter_server",
    "paramserver": "parameter_server",
    "centralstorage": "central_storage",
    "onedevice": "one_device",
    "default": "default", "none": "default", "local": "default",
}
_STRATEGY_PREFIXES = ("tfcompatv1distributeexperimental",
                      "tfcompatv1distribute", "tfdistributeexperimental",
                      "tfdistribute", "experimental")


def normalize_strategy(text):
  """Maps a strategy spelling people type to its `StrategyKind`.

  Case, '-', '_', '.', a `tf.distribute.` prefix and a `Strategy` suffix do
  not matter: "MultiWorkerMirroredStrategy", "multi-worker-mirrored" and
  "collective" all give "collective"; "ps" gives "parameter_server"; "none"
  gives "default".

  Raises:
    ValueError: the text names no known strategy (message lists them).
  """
  key = re.sub(r"[^a-z0-9]", "", str(text).lower())
  for prefix in _STRATEGY_PREFIXES:
    if key.startswith(prefix):
      key = key[len(prefix):]
      break
  for suffix in ("strategyv1", "strategyv2", "strategy"):
    if key.endswith(suffix) and key != suffix:
      key = key[:-len(suffix)]
      break
  if key in _STRATEGY_SPELLINGS:
    return StrategyKind(_STRATEGY_SPELLINGS[key])
  close = difflib.get_close_matches(key, list(_STRATEGY_SPELLINGS), n=1)
  hint = f" Did you mean {_STRATEGY_SPELLINGS[close[0]]!r}?" if close else ""
  raise ValueError(
      f"unknown strategy {text!r}.{hint} Valid: "
      f"{', '.join(job_config.STRATEGIES)} (also e.g. MultiWorkerMirrored, ps, "
      "none).")


class StrategyParser(flags.ArgumentParser):
  """A strategy spelling -> its `StrategyKind` (one of `STRATEGIES`)."""

  def parse(self, argument):
    return normalize_strategy(argument)

  def flag_type(self):
    return "strategy"


def parse_params_text(text):
  """`key=value,...` (values stay text) or a JSON object -> dict."""
  if isinstance(text, dict):
    return dict(text)
  text = (text or "").strip()
  if not text:
    return {}
  if text.startswith("["):
    raise ValueError(
        "a JSON list, but --params takes named values. Fix: write "
        "--params=learning_rate=0.01,optimizer=adam, or a JSON object "
        "('{\"hidden_units\": [1, 2]}') for a list-valued key.")
  if text.startswith("{"):
    try:
      value = json.loads(text)
    except json.JSONDecodeError as e:
      raise ValueError(f"not valid JSON ({e.msg} at column {e.colno}).") from e
    if not isinstance(value, dict):
      raise ValueError("JSON --params must be an object.")
    return value
  result = {}
  for piece in filter(None, (p.strip() for p in text.split(","))):
    key, sep, value = piece.partition("=")
    key = key.strip()
    if not sep or not key:
      raise ValueError(
          f"{piece!r} is not key=value. Write --params=learning_rate=0.01,"
          "optimizer=adam, or JSON ('{\"units\": [64, 32]}') for values "
          "holding commas.")
    if key in result:
      raise ValueError(f"key {key!r} is given twice.")
    result[key] = value.strip()
  return result


class ParamsParser(flags.ArgumentParser):
  """`--params` text (key=value,... or JSON) -> dict."""

  def parse(self, argument):
    return parse_params_text(argument)

  def flag_type(self):
    return "params"


class RemoteClusterParser(flags.ArgumentParser):
  """`--remote_cluster` text -> {job: [addresses]}."""

  def parse(self, argument):
    if argument is None or isinstance(argument, dict):
      return argument
    try:
      return cluster_lib.parse_remote_cluster(argument, source="the cluster")
    except errors.ClusterConfigError as e:
      raise ValueError(str(e)) from None

  def flag_type(self):
    return "cluster"


class StepsPerLoopParser(flags.ArgumentParser):
  """`--steps_per_loop`: an integer >= 1, or "auto"."""

  def parse(self, argument):
    if argument == "auto" or isinstance(argument, int):
      value = argument
    else:
      try:
        value = int(str(argument).strip())
      except ValueError:
        value = None
    if value != "auto" and (value is None or value < 1):
      raise ValueError(
          "must be an integer >= 1 or auto. Fix: --steps_per_loop=auto "
          "(K from the first steps' timing) or e.g. --steps_per_loop=1.")
    return value

  def flag_type(self):
    return "steps_per_loop"
