"""One process's graph and session: input_fn -> graph -> MonitoredSession.

    from harness.core import trainer

    trainer.train(model, input_fn, hooks=[], steps=None, max_steps=1000,
                  saving_listeners=[], context=context)  # a TrainModel

`Estimator.train`, `distribute.roles` and `distribute.remote` train through
that one entry (`train_graph` builds, `train_loop` runs); `evaluation` and
`prediction` hold the other two modes' session loops. core/ never imports
distribute/, cli/, `estimator`, `training`, `hooks` or a binary
(tests/test_layering.py); docs/ARCHITECTURE.md has a line per module.
"""
