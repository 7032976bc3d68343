"""No output line of the main documented commands is over 160 characters.

Each test runs one command as README.md, docs/ERRORS.md or k8s/README.md
show it (fewer steps, temporary folders, free ports) and scans every line
it printed, log lines and errors included (`_support.long_lines`). The
docs' commands as written are scanned by tests/test_docs_commands.py (the
README's launch line by tests/test_readme_launch.py), the README's killed
and resumed standalone client included (tests/_docs_facts.py's
kill_the_client_first: both clients' lines and the servers'); here: what
they do not run, an error, the render.
"""

import sys

from absl.testing import absltest

from tests import _support

_MAIN = [sys.executable, "-m", "harness.main"]


class LineLengthTest(absltest.TestCase):

  def assert_short(self, output, description):
    long = _support.long_lines(output)
    self.assertEqual(long, [], f"{len(long)} line(s) over "
                     f"{_support.LINE_LIMIT} characters\n{description}")

  def test_one_line_error(self):  # docs/ERRORS.md: an unknown model_fn.
    result = _support.run(_MAIN + ["--model_fn=resnet9000",
                                   "--input_fn=constant"], timeout_secs=300)
    self.assertEqual(result.returncode, 2, result.description)
    self.assertIn("unknown model_fn", result.output)
    self.assert_short(result.output, result.description)

  def test_k8s_render(self):  # k8s/README.md's command.
    result = _support.run(
        [sys.executable, "-m", "harness.k8s", "--name=mnist", "--workers=4",
         "--evaluator", "--tensorboard",
         "--image=registry.example.com/harness:0.1", "--pvc=harness-model",
         "--", "--model_fn=mnist_mlp", "--input_fn=mnist",
         "--strategy=collective", "--max_steps=10000", "--batch_size=256",
         "--exporters=latest"], timeout_secs=300)
    self.assertEqual(result.returncode, 0, result.description)
    self.assertIn("# Rendered by: python -m harness.k8s", result.output)
    self.assert_short(result.output, result.description)


if __name__ == "__main__":
  absltest.main()
