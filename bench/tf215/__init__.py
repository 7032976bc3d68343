"""harness beside real tf.estimator 2.15: speed (`vs215`), 2.15's own tests
(`compat215`) and the side venv both run 2.15 in (bench/README.md,
"`tf215/`")."""
