"""Issue 51 item 6's one-liners: each line says what is true.

- a `grpc://host:port` TF_CONFIG address gets "drop the scheme", not "put
  the IPv6 host in brackets";
- a TF_CONFIG nested deeper than Python's JSON parser allows is a bad
  TF_CONFIG (exit 2, one message), not a RecursionError traceback (exit 1);
- a TensorFlow error with no case of its own (a string loss: "Cast string
  to float") no longer says "see TensorFlow's reason above" with nothing
  above;
- the chief's stop line names the step of its final checkpoint, not the
  global step that a ps cluster's other workers moved on since.
(A foreign lease's `refresh_secs: 1e9`: tests/test_lease_race.py.)
"""

import json
import os
import subprocess
import sys
import types

from absl.testing import absltest

from harness import errors
from harness._tf import tf
from harness.cli import diagnose
from harness.cluster import tf_config
from harness.cluster import tf_config_checks
from harness.guard import guard_hook
from tests import conftest


def _deep_tf_config(depth=50000):
  # Python 3.13 parses 5000 levels; 50000 is past every parser from 3.10 to
  # 3.13 and, at 100 KB, still under Linux's 128 KB limit on one variable.
  return ('{"cluster": {"chief": ["127.0.0.1:1"]}, "task": {"type": "chief", '
          '"index": 0}, "deep": ' + "[" * depth + "]" * depth + "}")


class TfConfigTest(absltest.TestCase):

  def test_a_grpc_scheme_is_told_to_go(self):
    with self.assertRaises(errors.ClusterConfigError) as raised:
      tf_config_checks.check_addresses(
          {"chief": ["grpc://10.0.0.1:2222"], "worker": ["10.0.0.2:2222"]},
          "TF_CONFIG")
    text = str(raised.exception)
    self.assertIn('Fix: drop the "grpc://": write it as "10.0.0.1:2222"',
                  text)
    self.assertNotIn("IPv6", text)

  def test_a_deeply_nested_tf_config_is_a_config_error(self):
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "nests its JSON deeper than Python's parser"):
      tf_config.parse_tf_config(_deep_tf_config())

  def test_the_binary_exits_2_with_one_message(self):
    env = conftest.child_env(extra={"TF_CONFIG": _deep_tf_config()})
    proc = subprocess.run(
        [sys.executable, "-m", "harness.main", "--model_fn=linear",
         "--input_fn=constant", "--dry_run",
         f"--model_dir={self.create_tempdir().full_path}"],
        capture_output=True, text=True, timeout=300, check=False, env=env,
        cwd=conftest.REPO_ROOT)
    self.assertEqual(proc.returncode, errors.EXIT_BAD_CONFIG, proc.stderr)
    self.assertNotIn("Traceback", proc.stderr)
    self.assertIn("TF_CONFIG nests its JSON deeper", proc.stderr)


class TensorFlowReasonTest(absltest.TestCase):

  def test_no_reason_above_when_there_is_none(self):
    error = tf.errors.UnimplementedError(
        None, None, "Cast string to float is not supported (op Cast)")
    label, message = diagnose.explain(error, None)
    self.assertEqual(label, "UnimplementedError")
    self.assertNotIn("above", message)
    self.assertIn("Fix: TensorFlow's reason starts this line; check the "
                  "dtypes and shapes the model_fn's Cast op gets", message)


class StopLineStepTest(absltest.TestCase):

  def test_the_chief_names_the_saved_step(self):
    model_dir = self.create_tempdir().full_path
    with tf.Graph().as_default():
      step = tf.compat.v1.train.create_global_step()
      weight = tf.compat.v1.get_variable("w", initializer=1.0)
      saver = tf.compat.v1.train.Saver([step, weight])
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(step.assign(5))
        saver.save(session, os.path.join(model_dir, "model.ckpt"),
                   global_step=5)
        session.run(step.assign(6))  # Another worker's step, after the save.
        guard = types.SimpleNamespace(
            is_chief=True, model_dir=model_dir, label="chief/0",
            peer_timeout_secs=None, multi_task=True, vote_group_size=0)
        hook = guard_hook.GuardHook(guard)
        hook.begin()
        hook._stop_requested = True  # pylint: disable=protected-access
        with self.assertRaises(errors.TrainingPreemptedError) as raised:
          hook.end(session)
    self.assertIn("stopped at step 5, saved in a checkpoint",
                  str(raised.exception))


if __name__ == "__main__":
  absltest.main()
