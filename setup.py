"""Packaging for harness: the Estimator-style training harness for TF 2.16+."""

import pathlib

import setuptools

_HERE = pathlib.Path(__file__).parent


def _for_python_310(*requirements):
  """Requirements that apply on Python 3.10 only (an environment marker)."""
  return [f'{r}; python_version < "3.11"' for r in requirements]

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
    # The MNIST test split the main job reads by default (input_fns.mnist_idx
    # DEFAULT_DATA_DIR), in wheels and non-editable installs too; MANIFEST.in
    # puts it in the sdist.
    package_data={"input_fns": ["data/mnist/*.gz", "data/mnist/README.md"]},
    install_requires=[
        # .ci/run tests 2.21 (whole suite), 2.16 and the newest 2.22
        # pre-release (fast suite); pip takes a pre-release it finds
        # installed or is asked for by version, never one on its own.
        "tensorflow>=2.16,<2.23",
        # TF1 layers and Keras 2 (tf.compat.v1.layers needs TF_USE_LEGACY_KERAS=1).
        # No tf-keras admits TF 2.22 yet (2.21 requires tensorflow<2.22): .ci/run
        # installs 2.21 with --no-deps beside the pre-release.
        "tf-keras>=2.16,<2.23",
        "absl-py>=1.0",
        "tensorflow-datasets>=4.9",
        # TensorFlow no longer depends on TensorBoard (2.22 dropped it from
        # its requirements too); harness prints its command and serves it
        # (--tensorboard). Same range as TF's.
        "tensorboard>=2.16,<2.23",
        "numpy",
        # --metrics_port: the live Prometheus endpoint
        # (harness.telemetry.live_metrics).
        "prometheus_client>=0.17",
        # Python 3.10: the newest releases of these (transitive) dependencies
        # need Python >= 3.11, or (protobuf) conflict with what
        # tensorflow-metadata asks on 3.10. An index that does not publish
        # Requires-Python sends pip 23 (3.10's venv pip) backtracking
        # through hundreds of releases; these bounds keep it on the path.
        # Each is the last release admitting 3.10; bench/docfigs/install_time.py
        # measures the install on every Python the README names.
        *_for_python_310("keras<3.13", "markdown<3.11", "etils<1.14",
                         "protobuf<=6.32"),
    ],
    extras_require={
        "test": ["pytest>=7", "kubernetes-validate>=1.28", "jsonschema>=4",
                 "pyyaml",
                 # The README's test command runs the suite on 2 workers.
                 "pytest-xdist>=3",
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
