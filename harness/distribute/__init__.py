"""Running across tasks: strategies, TF_CONFIG roles, remote clients.

`strategies` (strategy objects, per-task configuration), `roles` (chief /
worker / master / ps runners), `remote` (standalone-client mode),
`server_claim` (one client per set of servers), `evaluator` (evaluation
driven by new checkpoints).

Import rule: may import core/, state/, cluster/ and the top-level API
modules; never cli/ or the binaries.
"""
