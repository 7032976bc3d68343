"""The built package carries the shipped MNIST split (issue 39).

`pip install -e .` reads input_fns/data/mnist from the checkout; a
non-editable install reads it from the wheel, which holds it only through
setup.py's package_data. The test builds the wheel as pip would install it.
"""

import glob
import subprocess
import sys
import zipfile

from absl.testing import absltest
import pytest

from tests import conftest

_SHIPPED = ("input_fns/data/mnist/t10k-images-idx3-ubyte.gz",
            "input_fns/data/mnist/t10k-labels-idx1-ubyte.gz",
            "input_fns/data/mnist/README.md")


@pytest.mark.slow  # Builds a wheel: about 10 s.
class WheelTest(absltest.TestCase):

  def test_wheel_holds_the_mnist_split_byte_for_byte(self):
    out_dir = self.create_tempdir().full_path
    build_dir = self.create_tempdir().full_path
    # --no-build-isolation: offline, with this venv's setuptools. The build
    # folder is the test's, not the checkout's build/.
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps",
         "--no-build-isolation", "-q", "-w", out_dir,
         str(conftest.REPO_ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
        env=conftest.child_env(extra={"TMPDIR": build_dir}))
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    wheels = glob.glob(f"{out_dir}/harness-*.whl")
    self.assertLen(wheels, 1)
    with zipfile.ZipFile(wheels[0]) as wheel:
      for name in _SHIPPED:
        self.assertIn(name, wheel.namelist())
        self.assertEqual(wheel.read(name),
                         (conftest.REPO_ROOT / name).read_bytes(), name)


if __name__ == "__main__":
  absltest.main()
