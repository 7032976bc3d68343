"""Cluster facts: TF_CONFIG text -> `ClusterInfo`, its rules, addresses, ports.

Import rule: nothing here imports TensorFlow (`harness._tf`) or any other
harness folder; only `harness.errors` and this folder. `python -m
harness.launch` and the TF_CONFIG parser start in milliseconds because of it.
The modules: `tf_config` (parsing, `ClusterInfo`), `tf_config_rules`
(validation), `env_knobs`, `ports`, `listen`, `netns`, `peer_wait`.
"""

# tf_config and tf_config_rules import each other (the rules use the
# parser's helpers; the parser re-exports the rules, imported at its end):
# loading tf_config first, whichever module is asked for, keeps that order.
from harness.cluster import tf_config as _tf_config  # pylint: disable=unused-import,g-bad-import-order
