"""Shared test fixtures: paths to ../shared data, made importable for tests."""

import os
import pathlib

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DIR = pathlib.Path(
    os.environ.get("HARNESS_SHARED_DIR", REPO_ROOT.parent / "shared"))
MNIST_DIR = SHARED_DIR / "data" / "mnist"
FIXTURES_DIR = SHARED_DIR / "fixtures"

# absltest's create_tempdir() reads --test_tmpdir; under pytest nobody parses
# absl flags, so parse an empty command line once (defaults only).
from absl import flags as _absl_flags  # pylint: disable=g-import-not-at-top

if not _absl_flags.FLAGS.is_parsed():
  _absl_flags.FLAGS(["pytest"], known_only=True)
