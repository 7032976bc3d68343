"""Throughput and reliability benchmarks of harness (bench/README.md,
"`perf/`"): each writes its section of bench/RESULTS.md or prints."""
