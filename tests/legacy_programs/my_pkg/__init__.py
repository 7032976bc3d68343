"""A package of tf.estimator 2.15 code, for tests/test_failures.py."""
