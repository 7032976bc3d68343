"""Running across tasks: strategies, TF_CONFIG roles, remote clients.

    from harness.distribute import strategies

    strategy = strategies.make_strategy(
        "collective", num_devices_per_worker=2, device_type="CPU",
        cluster={"worker": ["h1:2222", "h2:2222"]})

`train_and_evaluate` hands each task to its runner here (`roles` for
chief / worker / master / ps, `evaluator` for the evaluator, `remote` for a
standalone client). distribute/ may import core/, state/, cluster/ and the
API modules, never cli/ or a binary; docs/ARCHITECTURE.md has a line per
module.
"""
