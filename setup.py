"""Packaging for harness: the Estimator-style training harness for TF 2.16+."""

import pathlib

import setuptools

_HERE = pathlib.Path(__file__).parent

setuptools.setup(
    name="harness",
    version="0.1.0",
    description=(
        "tf.estimator-compatible training harness (model_fn / input_fn / "
        "train_and_evaluate) for current TensorFlow."
    ),
    long_description=(_HERE / "README.md").read_text(encoding="utf-8")
    if (_HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=setuptools.find_packages(
        include=["harness", "harness.*", "model_fns", "model_fns.*",
                 "input_fns", "input_fns.*"]),
    install_requires=[
        # .ci/run tests both ends: 2.21 (whole suite), 2.16 (fast suite).
        "tensorflow>=2.16,<2.22",
        # TF1 layers and Keras 2 (tf.compat.v1.layers needs TF_USE_LEGACY_KERAS=1).
        "tf-keras>=2.16,<2.22",
        "absl-py>=1.0",
        "tensorflow-datasets>=4.9",
        # TensorFlow 2.16+ no longer depends on TensorBoard; harness prints
        # its command and serves it (--tensorboard). Same range as TF's.
        "tensorboard>=2.16,<2.22",
        "numpy",
        # --metrics_port: the live Prometheus endpoint (harness.core.live_metrics).
        "prometheus_client>=0.17",
    ],
    extras_require={
        "test": ["pytest>=7", "kubernetes-validate>=1.28", "jsonschema>=4",
                 "pyyaml",
                 # tests/test_python_versions: python_requires is honoured.
                 "vermin>=1.6"],
        # docs/MUTATION.md: mutation testing of the TF_CONFIG parsing and the
        # TaskPlan (setup.cfg [mutmut]); a test tool, never needed to run.
        "mutation": ["mutmut>=3,<4"],
    },
    entry_points={
        "console_scripts": [
            "harness-main=harness.main:run",
            "harness-server=harness.server:run",
            "harness-launch=harness.launch:run",
        ],
    },
)
