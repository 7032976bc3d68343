"""How a TF_CONFIG error is worded, and the shape checks of a cluster
(its jobs, addresses and counts, and the jobs a strategy needs).

Shared by the parser (`tf_config`) and the rules (`tf_config_rules`): every
message names the source, the value, the rule and the fix; `fail_215` puts
tf.estimator 2.15's sentence first, verbatim. No TensorFlow here.
"""

import json
import re

from harness import errors
from harness.cluster.jobs import CHIEF
from harness.cluster.jobs import EVALUATOR
from harness.cluster.jobs import MASTER
from harness.cluster.jobs import PS
from harness.cluster.jobs import num_trainers
from harness.cluster.strategy_kind import StrategyKind

__all__ = ["fail", "fail_215", "task_json", "check_addresses",
           "check_job_names", "check_job_counts", "check_strategy_jobs",
           "check_one_machine_strategy", "JOB_NAME_RE", "ADDRESS_RE"]

JOB_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# host:port, or [ipv6]:port. The host may not contain spaces or colons.
ADDRESS_RE = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^\s:\[\]/]+):(\d{1,5})$")


def task_json(task_type, task_id):
  """A task as TF_CONFIG writes it: {"type": ..., "index": ...}."""
  return json.dumps({"type": task_type, "index": task_id})


def fail(source, message, fix, error=errors.ClusterConfigError):
  """Raises `error`: "<source> <message> Fix: <fix>"."""
  raise error(f"{source} {message} Fix: {fix}")


def fail_215(source, sentence, why, fix, error=errors.ClusterConfigError):
  """Raises with tf.estimator 2.15's `sentence` first, verbatim."""
  raise error(f"{sentence}\n{source}: {why} Fix: {fix}")


def check_addresses(cluster, source):
  """Every address is one task's "host:port" (port 1..65535), none shared."""
  seen = {}
  for job, addresses in cluster.items():
    if not addresses:
      fail(source, f'cluster["{job}"] is an empty list: a job needs at '
            "least one address.", f'list its addresses or drop "{job}".')
    for index, address in enumerate(addresses):
      where = f'cluster["{job}"][{index}]'
      if not isinstance(address, str) or not address.strip():
        fail(source, f"{where} is {address!r}, not an address.",
              'write each address as "host:port".')
      match = ADDRESS_RE.match(address)
      if not match or not 0 < int(match.group(2)) < 65536:
        fail(source, f"{where} is {address!r}: an address must be "
              "host:port with a port in 1..65535.", _address_fix(address))
      if address in seen:
        fail(source, f"{where} is {address!r}, the same address as "
              f"{seen[address]}: two tasks cannot share a server.",
              "give each task its own host:port.")
      seen[address] = where


def _address_fix(address):
  """The fix sentence for a malformed "host:port" `address` (a str)."""
  if address != address.strip() or " " in address.strip():
    return f'remove the spaces: write it as "{"".join(address.split())}".'
  scheme, found, rest = address.partition("://")
  if found and rest:  # "grpc://host:port": TensorFlow adds the scheme.
    return (f'drop the "{scheme}://": write it as "{rest}" (TF_CONFIG '
            "addresses are host:port).")
  host, sep, port = address.rpartition(":")
  if address.count(":") > 1 and not address.startswith("["):
    whole = f'"[{address}]:2222" (your port)'
    if port.isdigit() and not host.endswith(":"):
      return (f'put the IPv6 host in brackets: write it as "[{host}]:{port}",'
              f" or {whole} if {address} is the whole host.")
    return f"put the IPv6 host in brackets: write it as {whole}."
  if sep and port.isdigit():
    return (f"use a port in 1..65535 (it is {port}): write it as "
            f'"{host}:2222" with your port.')
  if sep:
    return (f'the port must be digits (it is {port!r}): write it as '
            f'"{host}:2222" with your port.')
  return f'add the port: write it as "{address}:2222" (your port).'


def check_job_names(cluster, source):
  """Job names start with a letter: letters, digits and '_' only."""
  for job in cluster:
    if not isinstance(job, str) or not JOB_NAME_RE.match(job):
      fail(source, f"job name {job!r} is not valid: a job name starts with "
            "a letter and has only letters, digits and '_'.",
            'use names such as "chief", "worker", "ps".')


def check_job_counts(cluster, source):
  """At most one chief, one master and one evaluator."""
  for job in (CHIEF, MASTER):
    if len(cluster.get(job, ())) > 1:
      fail_215(source, f'The "cluster" in TF_CONFIG must have only one '
                f'"{job}" node.', f'cluster["{job}"] lists '
                f"{len(cluster[job])} addresses {cluster[job]}.",
                f'keep one "{job}" address (make the others workers).')
  if len(cluster.get(EVALUATOR, ())) > 1:
    fail_215(source, "There must be at most one 'evaluator' job.",
              f'cluster["evaluator"] lists {len(cluster[EVALUATOR])} '
              "addresses.", "run one evaluator.")


def check_strategy_jobs(strategy_kind, cluster, *, source):
  """The one statement of the collective / parameter-server job rules.

  Every check of them calls this: `validate` (TF_CONFIG),
  `strategies.make_strategy` / `configure_for_task` (the cluster a strategy
  trains on), `run_config.check_supported_config` (a remote cluster) and
  `harness.main`'s plan (no cluster, or `--remote_cluster`'s).

  Args:
    strategy_kind: a `StrategyKind` (or its string, e.g. a `--strategy`
      flag's "collective"), or None.
    cluster: {job: [addresses]} the strategy trains on ({}: none at all).
    source: where `cluster` came from, first words of the message.

  Raises:
    ClusterConfigError: a "ps" job under collective, none under
      parameter_server, or a legacy "master" job under either.
  """
  kind = StrategyKind.of(strategy_kind)
  if kind is None:
    return
  if kind.refuses_ps and PS in cluster:
    fail(source, f'cluster has a "ps" job {cluster[PS]} but the strategy is '
         "collective (MultiWorkerMirroredStrategy), which keeps variables on"
         " the workers and needs no parameter servers.", 'drop the "ps" job,'
         " or use ParameterServerStrategy.")
  if kind.multi_worker and MASTER in cluster:
    fail(source, f'cluster has a legacy "master" job {cluster[MASTER]} but the'
         f" strategy is {strategy_kind}, whose cluster may only have chief, "
         "worker and ps jobs (TensorFlow's multi-worker strategies refuse a "
         '"master" when they are configured for the task).',
         'train without a strategy (--strategy=default: the "master" is the '
         'chief, as in tf.estimator), or rename "master" to "chief".')
  if kind.needs_ps and PS not in cluster:
    where = (f'cluster {sorted(cluster)} has no "ps" job' if cluster else
             "names no cluster (neither TF_CONFIG nor a remote cluster does)")
    fail(source, f"{where} but the strategy is ParameterServerStrategy, "
         'which needs a cluster with a "ps" job.', 'add "ps": ["host:port"] '
         "to the cluster (`python -m harness.launch --ps=1 -- ...` makes "
         "one), or use --strategy=mirrored on one machine.")


def check_one_machine_strategy(strategy_kind, cluster):
  """A single-machine strategy refuses a cluster of several trainers.

  Args:
    strategy_kind: a `StrategyKind` (or its string), or None.
    cluster: {job: [addresses]} the strategy trains on.

  Raises:
    NotSupportedError: a mirrored, central_storage or one_device strategy
      and more than one chief / worker / master task.
  """
  trainers = num_trainers(cluster)
  kind = StrategyKind.of(strategy_kind)
  if kind is not None and kind.one_machine and trainers > 1:
    raise errors.NotSupportedError(
        f"The strategy is {strategy_kind}, a single-machine strategy, but "
        f"the cluster has {trainers} training tasks ({sorted(cluster)}); "
        "harness does not replicate one graph across machines. Fix: use the "
        "collective strategy (tf.compat.v1.distribute.experimental."
        "MultiWorkerMirroredStrategy) or parameter_server.")
