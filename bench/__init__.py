"""Training-throughput benchmark of harness vs. graph mode and Keras.

Run `python -m bench.run`; see bench/README.md.
"""
