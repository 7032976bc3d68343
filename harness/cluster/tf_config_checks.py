"""How a TF_CONFIG error is worded, and the shape checks of a cluster.

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

__all__ = ["fail", "fail_215", "task_json", "check_addresses",
           "check_job_names", "check_job_counts", "JOB_NAME_RE",
           "ADDRESS_RE"]

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
