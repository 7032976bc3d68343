"""Cluster facts: TF_CONFIG text -> `ClusterInfo`, its rules, addresses, ports.

Import rule: nothing here imports TensorFlow (`harness._tf`) or any other
harness folder; only `harness.errors` and this folder. `python -m
harness.launch` and the TF_CONFIG parser start in milliseconds because of it.
The modules: `tf_config` (parsing, `ClusterInfo`), `tf_config_rules`
(validation), `env_knobs`, `ports`, `listen`, `netns`, `peer_wait`.
"""
