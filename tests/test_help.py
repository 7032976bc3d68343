"""`--help` of every binary: exit 0, user-facing text, every flag listed."""

import sys

from absl.testing import absltest
from absl.testing import parameterized

from tests import _support
from tests import conftest

# Binary -> flags its help must list (one of each kind: bool, int, string).
_BINARIES = {
    "main": ("--model_fn", "--[no]dry_run", "--max_steps"),
    "launch": ("--workers", "--[no]evaluator", "--network_isolation"),
    "server": ("--cluster_spec", "--task_index", "--num_cpu_devices"),
    "k8s": ("--output", "--[no]evaluator", "--workers"),
}


class HelpTest(parameterized.TestCase):

  @parameterized.parameters(*[(b, a) for b in _BINARIES
                              for a in ("--help", "-h", "--helpfull")])
  def test_help_exits_0_with_user_text(self, binary, arg):
    proc = _support.run([sys.executable, "-m", f"harness.{binary}", arg],
                        timeout_secs=300)
    detail = proc.description
    self.assertEqual(proc.returncode, 0, detail)
    self.assertEqual(proc.stderr.strip(), "", detail)
    self.assertNotIn("Traceback", proc.output, detail)
    self.assertNotIn(str(conftest.REPO_ROOT), proc.output, detail)
    self.assertNotIn(".py:", proc.output, detail)  # No source-file headings.
    self.assertIn(f"python -m harness.{binary}", proc.stdout, detail)
    self.assertIn("\nflags:\n", proc.stdout, detail)
    for flag in _BINARIES[binary]:
      self.assertIn(f"  {flag}: ", proc.stdout, detail)

  @parameterized.parameters("main", "run", "server", "launch", "k8s")
  def test_help_loads_no_tensorflow(self, binary):
    # Issue 39: `harness.run --help` and `harness.server --help` imported
    # TensorFlow (8-17 s, 47 s on a loaded machine). The binary runs as
    # `python -m` would run it; at exit this process reports whether
    # TensorFlow was imported (-X importtime cannot: harness._tf sends
    # fd 2 elsewhere while TensorFlow imports).
    code = (
        "import atexit, runpy, sys\n"
        "atexit.register(lambda: sys.__stdout__.write(\n"
        "    '\\nTENSORFLOW_LOADED=%s\\n' % ('tensorflow' in sys.modules)))\n"
        f"sys.argv = ['harness.{binary}', '--help']\n"
        f"runpy.run_module('harness.{binary}', run_name='__main__',"
        " alter_sys=True)\n")
    proc = _support.run([sys.executable, "-c", code], timeout_secs=300,
                        env=conftest.child_env())
    self.assertEqual(proc.returncode, 0, proc.description)
    self.assertIn(f"python -m harness.{binary}", proc.stdout,
                  proc.description)
    self.assertIn("TENSORFLOW_LOADED=False", proc.stdout, proc.description)

  def test_help_after_dashes_is_the_commands(self):
    # launch's `--` ends its own flags: `--help` after it is the task's.
    proc = _support.run(
        [sys.executable, "-m", "harness.launch", "--timeout_secs=120",
         "--network_isolation=none", "--", sys.executable, "-c",
         "import sys; print('task argv', sys.argv[1:])", "--help"],
        timeout_secs=300)
    self.assertEqual(proc.returncode, 0, proc.description)
    self.assertIn("task argv ['--help']", proc.stdout, proc.description)
    self.assertNotIn("flags:", proc.stdout, proc.description)


if __name__ == "__main__":
  absltest.main()
