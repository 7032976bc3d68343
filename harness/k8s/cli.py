"""The binary `python -m harness.k8s`: its flags, `parse_args` and `main`.

    python -m harness.k8s --name=mnist --workers=2 --image=... \\
        --pvc=harness-model -- --model_fn=mnist_mlp | kubectl apply -f -
    python -m harness.k8s tf-config   # in a pod: its TF_CONFIG

One flag per `K8sConfig` field (`k8s/config.py`, its help text included);
the manifests come from `k8s/manifests.py`, `tf-config` from
`k8s/entrypoint.py`. A bad flag or variable prints one line and exits with
`CONFIG_ERROR_EXIT_CODE` (2); `--help` exits 0. Run by `k8s/__main__.py`;
re-exported by `harness.k8s`.

`--kind`, `--standalone` and `--tfjob` were replaced by `--output`; given,
each is refused with one line saying what to write instead.

This module imports nothing from TensorFlow.
"""

import dataclasses
import os
import sys

from absl import flags

from harness import errors
from harness.cli import binary_flags
from harness.cli import log_format
from harness.k8s import entrypoint
from harness.k8s import manifests
from harness.k8s.config import CONFIG_ERROR_EXIT_CODE
from harness.k8s.config import K8sConfig
from harness.k8s.config import REMOVED_FLAGS

__all__ = ["parse_args", "main"]


_HELP = """\
usage: python -m harness.k8s --name=N --workers=W --image=I [flags] \\
           -- [harness.main flags]

Prints Kubernetes manifests (multi-document YAML) for a harness training
job. By default (--output=jobset) one JobSet, a replicatedJob per task type
(chief, worker, ps, evaluator), admitted by a stock JobSet install (v0.11.1
or later, default feature gates), and a NetworkPolicy; optionally
TensorBoard. The flags after `--` reach `python -m harness.main` in every
pod unchanged.

    python -m harness.k8s --name=mnist --workers=4 --evaluator \\
        --image=registry.example.com/harness:0.1 --pvc=harness-model -- \\
        --model_fn=mnist_mlp --input_fn=mnist --max_steps=10000 \\
      | kubectl apply -f -

--output=trainjob renders a Kubeflow Trainer v2 runtime and TrainJob,
--output=jobs plain Indexed Jobs (no controller), --output=tfjob a Kubeflow
TFJob, --output=servers standard servers; k8s/README.md explains them.
"""


def _flag_values():
  """absl FlagValues holding one flag per `K8sConfig` field."""
  flag_values = flags.FlagValues()
  for field in dataclasses.fields(K8sConfig):
    if "help" not in field.metadata:
      continue
    define = {bool: flags.DEFINE_boolean, int: flags.DEFINE_integer}.get(
        field.type, flags.DEFINE_string)
    if field.name == "allow_cidr":
      define = flags.DEFINE_multi_string
    define(field.name, field.default, field.metadata["help"],
           flag_values=flag_values)
  return flag_values


def _refuse_removed_flags(args):
  """FlagError for a flag `--output` replaced (`config.REMOVED_FLAGS`)."""
  for arg in args:
    name = arg.lstrip("-").split("=")[0]
    base = name[2:] if name.startswith("no") else name
    if arg.startswith("-") and base in REMOVED_FLAGS:
      value = arg.partition("=")[2]
      instead = (f"--output={value}" if base == "kind" and value
                 else REMOVED_FLAGS[base])
      raise errors.FlagError(
          f"flag {arg!r}: --{base} was replaced by --output. Fix: write "
          f"{instead} instead (`python -m harness.k8s --help`).")


def parse_args(argv):
  """`K8sConfig` from a command line (`argv[0]` is the program).

  Raises:
    FlagError: an unknown, missing or invalid flag, or one `--output`
      replaced.
  """
  flag_values = _flag_values()
  argv = list(argv)
  split = argv.index("--") if "--" in argv else len(argv)
  _refuse_removed_flags(argv[1:split])
  try:
    rest = flag_values(argv[:split])
  except flags.Error as e:
    raise errors.FlagError(f"{e}. Fix: see `python -m harness.k8s --help`."
                           ) from None
  if len(rest) > 1:
    raise errors.FlagError(
        f"unexpected arguments {rest[1:]} before `--`. Fix: put "
        "harness.main's flags after `--`.")
  values = {f.name: flag_values[f.name].value
            for f in dataclasses.fields(K8sConfig) if "help" in f.metadata}
  values["allow_cidr"] = tuple(values["allow_cidr"])
  return K8sConfig(main_args=tuple(argv[split + 1:]), **values)


def main(argv, *, environ=None, stdout=None, stderr=None):
  """Runs the binary; returns its exit status (2 on a usage error)."""
  environ = os.environ if environ is None else environ
  stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
  try:
    if argv[1:2] == ["tf-config"]:
      if len(argv) > 2:
        raise errors.FlagError(f"tf-config takes no arguments: {argv[2:]}.")
      stdout.write(entrypoint.tf_config_from_environ(environ) + "\n")
      return 0
    if binary_flags.wants_help(list(argv[1:])):
      flag_values = _flag_values()
      stdout.write(_HELP + "\nflags:\n"
                   + binary_flags.flag_help(flag_values, list(flag_values))
                   + "\n")
      return 0
    config = parse_args(argv)
    stdout.write(manifests.to_yaml(
        manifests.render(config),
        header=manifests.layout_comment(config, argv[1:])))
  except errors.ConfigError as e:
    stderr.write(log_format.fold(f"harness.k8s: error: {e}") + "\n")
    return CONFIG_ERROR_EXIT_CODE
  return 0
