"""Cluster facts: TF_CONFIG text -> `ClusterInfo`, its rules, addresses, ports.

Import rule: nothing here imports TensorFlow (`harness._tf`) or any other
harness folder; only `harness.errors` and this folder. `python -m
harness.launch` and the TF_CONFIG parser start in milliseconds because of it.
The modules: `tf_config` (parsing, `ClusterInfo`; re-exports the next
three), `jobs` (job names, task labels), `task_facts` (what a task derives
from TF_CONFIG), `tf_config_rules` (validation), `tf_config_checks` (the
shared message helpers and shape checks), `strategy_kind` (`StrategyKind`),
`env_knobs`, `ports`, `listen`, `netns`, `peer_wait`.
"""

