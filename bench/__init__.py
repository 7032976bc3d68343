"""The measurements behind the docs' figures: throughput and reliability
benchmarks (`bench.perf`), the comparison with tf.estimator 2.15
(`bench.tf215`) and the scripts that write the docs' figures
(`bench.docfigs`), on a shared base here (report, sections, configs,
figures). See bench/README.md.
"""
