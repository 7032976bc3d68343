"""The server door: a standard TensorFlow server for one task of a cluster.

On each machine of the cluster, one server a task (no model code)::

    CLUSTER="worker=h1:2222,h2:2222;ps=h3:2222"
    python -m harness.server --cluster_spec=$CLUSTER --job_name=worker \\
        --task_index=1 --num_cpu_devices=2

then one client builds the graphs, places them on the servers, logs every
task, evaluates and exports (a "standalone client", `harness.distribute.
remote`)::

    python -m harness.main --remote_cluster=$CLUSTER \\
        --strategy=parameter_server --model_fn=linear --input_fn=constant \\
        --model_dir=/shared/model

Without `--cluster_spec` the task comes from TF_CONFIG::

    TF_CONFIG='{"cluster": {"worker": ["h1:2222", "h2:2222"]},
                "task": {"type": "worker", "index": 1}}' \\
        python -m harness.server --num_cpu_devices=2

A `Session("grpc://h2:2222")` or a parameter-server trainer can place ops on
a server too. Its config (`harness.distribute.task_servers.
server_config_for`) sets the collective group leader, as TensorFlow's
`run_standard_tensorflow_server` did, so that collective-strategy clients
work. It logs where it really listens, `server | worker/1 | listening on
*:2222 (all interfaces; cluster address h2:2222) | 2 CPU devices`
(TensorFlow 2.21 binds every interface; see `harness.cluster.listen`), with a
warning and a firewall hint unless `--bind_address='*'` acknowledges it or
harness.launch runs it in a private network namespace. Then it serves until
SIGTERM or SIGINT, on which it exits 0. A standalone client claims the
server while it trains (`harness.distribute.server_claim`); once a claim
expires unrenewed (the client was killed) or its client ends it after a
failure, the server logs `its client's claim lapsed: restarting this server
in place` and re-executes itself with the same flags (same pid and port),
which releases whatever that client left (sessions, steps blocked in an
all-reduce, their threads and memory) without aborting collectives. A bad
flag or TF_CONFIG is one message on stderr and exit status 2.

Library use, e.g. for parameter servers or in-process workers::

    import harness.server

    server = harness.server.start_server({"worker": [...], "ps": [...]},
                                         "ps", 0)

`cli.py` is the binary (flags, the task, `run`; `__main__.py` runs it),
`serve.py` starts the server and keeps it. Nothing else in harness imports
this package.
"""

import importlib as _importlib

# pylint: disable=unused-import
from harness.server.cli import run

__all__ = [
    # Starting a server from Python.
    "start_server",
    # The binary (`harness-server`, `python -m harness.server`).
    "run",
]


def __getattr__(name):
  # `start_server` loads TensorFlow: on first use, so that the binary's
  # --help answers without it.
  if name == "start_server":
    return _importlib.import_module("harness.server.serve").start_server
  raise AttributeError(f"module 'harness.server' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | {"start_server"})
