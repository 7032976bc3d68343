"""Bad input, end to end: each case runs a harness binary as a subprocess.

Every case checks what a user sees and what is left on disk: the exit status
(1 a problem found while running, 2 bad flags or TF_CONFIG), exactly one
error line from the binary on stderr naming the offending value and the fix,
no Python traceback, and nothing corrupt in `model_dir` (it is not created,
or its checkpoint files are unchanged). docs/ERRORS.md lists the same cases
with their messages. The broken model_fns and input_fns live in
tests/programs/bad_model_fns.py.
"""

import hashlib
import io
import os
import pathlib
import re
import sys

from absl.testing import absltest
from tests import _support
from tests import conftest

_TIMEOUT_SECS = 60
# A line of a C++ logger (absl/gRPC): "E1125 19:23:00.515470620   15016 ...".
_NATIVE_LOG_RE = re.compile(r"^[EWIF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ")
_BAD = "tests.programs.bad_model_fns"
_LINEAR = ["--model_fn=linear", "--input_fn=constant"]
# For cases that fail while flags are checked: resolving these imports no
# TensorFlow, so each such case takes well under a second.
_NO_TF = ["--model_fn=tests.programs.no_tf_fns:model_fn",
          "--input_fn=tests.programs.no_tf_fns:make_input_fn"]
_TRAIN = ["--mode=train", "--max_steps=2", "--verbosity=quiet"]


def _run(args, *, module="harness.main", env=None, timeout=_TIMEOUT_SECS):
  """Runs `python -m module args` from the repo root; (rc, stdout, stderr).

  TF_CONFIG is removed from the inherited environment unless `env` sets it;
  the repo root is on PYTHONPATH so that tests.programs.* import.
  """
  process = _support.run([sys.executable, "-m", module] + list(args),
                         timeout_secs=timeout,
                         env=conftest.child_env(extra=env))
  return process.returncode, process.stdout, process.stderr


_tf_config = _support.tf_config_environ


def _snapshot(directory):
  """{relative path: sha256} of the files in `directory`, event files aside.

  A failed run may add a TensorBoard event file; it must not change or add
  a checkpoint, the `checkpoint` state file or graph.pbtxt.
  """
  result = {}
  for path in sorted(pathlib.Path(directory).rglob("*")):
    if path.is_file() and "tfevents" not in path.name:
      result[str(path.relative_to(directory))] = hashlib.sha256(
          path.read_bytes()).hexdigest()
  return result


class BadInputTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.root = self.create_tempdir().full_path
    self.model_dir = os.path.join(self.root, "model")

  def assert_one_error(self, result, code, *words, prefix="harness.main:"):
    """Exit `code`, one `prefix` line holding `words`, no traceback."""
    rc, stdout, stderr = result
    report = (f"exit {rc}\nstdout tail:\n{stdout[-2000:]}\n"
              f"stderr tail:\n{stderr[-3000:]}")
    self.assertEqual(rc, code, report)
    error_lines = [l for l in stderr.splitlines() if l.startswith(prefix)]
    self.assertLen(error_lines, 1, report)
    self.assertNotIn("Traceback", stderr, report)
    # A long error is folded at spaces (log_format.fold): compare words.
    flat = " ".join(stderr.split())
    for word in words:
      self.assertIn(" ".join(word.split()), flat, report)
    # Issue 24: a person reads it; details belong in docs/ERRORS.md. Lines
    # of TensorFlow's own C++ loggers (TF 2.16's gRPC prints one of 1,400
    # characters for a port in use) are not harness's to shorten.
    ours = [line for line in (stdout + "\n" + stderr).splitlines()
            if not _NATIVE_LOG_RE.match(line)]
    self.assertEqual(_support.long_lines("\n".join(ours)), [], report)
    return stderr

  def assert_model_dir_not_created(self):
    self.assertFalse(os.path.exists(self.model_dir),
                     os.listdir(self.model_dir)
                     if os.path.isdir(self.model_dir) else "")

  def train_linear(self):
    """Trains `linear` into model_dir in this process (saves a TF start)."""
    from harness.cli import flags  # pylint: disable=g-import-not-at-top
    from harness.cli import job  # pylint: disable=g-import-not-at-top
    parsed = flags.parse(
        ["harness.main"] + _LINEAR + _TRAIN + [f"--model_dir={self.model_dir}"],
        environ={})
    result = job.run_job(parsed.job, plan=parsed.plan, out=io.StringIO())
    self.assertIsNotNone(result.latest_checkpoint)

  # ------------------------------------------------------------ TF_CONFIG

  def test_tf_config_malformed_json(self):
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={self.model_dir}"],
                  env={"TF_CONFIG": "{bad"})
    self.assert_one_error(result, 2, "TF_CONFIG is not valid JSON", "{bad",
                          "Fix:")
    self.assert_model_dir_not_created()

  # Without a strategy 2.15 wanted a chief first; these name a task wrongly.
  _CHIEF_WORKER = {"chief": ["127.0.0.1:2"], "worker": ["127.0.0.1:1"]}

  def test_tf_config_unknown_task_type(self):
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={self.model_dir}"],
                  env=_tf_config(self._CHIEF_WORKER, "boss", 0))
    self.assert_one_error(result, 2, "boss is not a valid task_type in the "
                          "cluster_spec:", "task type 'boss'",
                          "valid task types are ['chief', 'worker', "
                          "'evaluator']", "Fix:")
    self.assert_model_dir_not_created()

  def test_tf_config_index_out_of_range(self):
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={self.model_dir}"],
                  env=_tf_config(self._CHIEF_WORKER, "worker", 3))
    self.assert_one_error(result, 2, "3 is not a valid task_id for task_type "
                          "worker in the cluster_spec:",
                          '{"type": "worker", "index": 3}',
                          "valid index 0..0", "Fix:")
    self.assert_model_dir_not_created()

  def test_tf_config_task_type_not_in_cluster(self):
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={self.model_dir}"],
                  env=_tf_config(self._CHIEF_WORKER, "ps", 0))
    self.assert_one_error(result, 2, "task type 'ps' is not a job of the "
                          "cluster", "Fix:")
    self.assert_model_dir_not_created()

  def test_tf_config_model_dir_of_wrong_type(self):
    # Issue 37: `"model_dir": 5` ended in a TypeError traceback.
    for value, shown in ((5, "5 (a JSON number)"), ([], "[] (a JSON array)"),
                         (True, "true (a JSON boolean)")):
      with self.subTest(model_dir=value):
        result = _run(_NO_TF + _TRAIN + ["--dry_run"], env=_tf_config(
            self._CHIEF_WORKER, "chief", 0, model_dir=value))
        self.assert_one_error(result, 2, f'TF_CONFIG "model_dir" is {shown}'
                              ": it must be a string", 'Fix: write it as '
                              '"model_dir": "/path/to/dir"')

  def test_tf_config_master_under_a_strategy(self):
    # SageMaker's parameter-server TF_CONFIG names a legacy "master".
    cluster = {"master": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"],
               "worker": ["127.0.0.1:3"]}
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={self.model_dir}",
                                     "--strategy=parameter_server"],
                  env=_tf_config(cluster, "worker", 0, environment="cloud"))
    self.assert_one_error(result, 2, 'cluster has a legacy "master" job',
                          "the strategy is parameter_server",
                          "Fix: train without a strategy (--strategy=default")
    self.assert_model_dir_not_created()

  def test_tf_config_workers_only_without_a_strategy(self):
    # A TFJob without a Chief replica: worker 0 is the chief only under a
    # strategy (2.15 refused it without one).
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={self.model_dir}"],
                  env=_tf_config({"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
                                 "worker", 0, environment="cloud"))
    self.assert_one_error(result, 2, 'it must have one "chief" node',
                          "harness.main: --strategy=collective or "
                          "parameter_server")
    self.assert_model_dir_not_created()

  def test_tf_config_two_chiefs(self):
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={self.model_dir}"],
                  env=_tf_config({"chief": ["127.0.0.1:1", "127.0.0.1:2"]},
                                 "chief", 0))
    self.assert_one_error(result, 2, 'cluster["chief"] lists 2 addresses',
                          "only one", "Fix: keep one")
    self.assert_model_dir_not_created()

  # ---------------------------------------------------------------- flags

  def test_unknown_flag_suggests_the_right_one(self):
    result = _run(_NO_TF + _TRAIN + ["--max_step=3",
                                      f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 2, "flag --max_step: unknown flag",
                          "Did you mean --max_steps")
    self.assert_model_dir_not_created()

  def test_flag_value_of_the_wrong_type(self):
    result = _run(_NO_TF + ["--mode=train", "--max_steps=abc",
                             f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 2, "flag --max_steps=abc",
                          "Fix: give a whole number")
    self.assert_model_dir_not_created()

  def test_negative_max_steps(self):
    result = _run(_NO_TF + ["--mode=train", "--max_steps=-1",
                             f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 2, "flag --max_steps=-1: must be >= 1",
                          "Fix:")
    self.assert_model_dir_not_created()

  def test_zero_batch_size(self):
    # A zero batch is refused like --max_steps=0 (tests/test_failures.py).
    result = _run(_NO_TF + _TRAIN + ["--batch_size=0",
                                      f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 2, "flag --batch_size=0: must be >= 1",
                          "Fix: a positive global batch size")
    self.assert_model_dir_not_created()

  def test_mutually_exclusive_flags(self):
    result = _run(_NO_TF + _TRAIN + [
        "--save_checkpoints_steps=1", "--save_checkpoints_secs=5",
        f"--model_dir={self.model_dir}"])
    self.assert_one_error(
        result, 2, "save_checkpoints_steps=1, save_checkpoints_secs=5: are "
        "mutually exclusive", "Fix: give only one")
    self.assert_model_dir_not_created()

  def test_unknown_model_fn_name(self):
    result = _run(["--model_fn=resnet9000", "--input_fn=constant",
                   f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 2, "flag --model_fn=resnet9000: "
                          "unknown model_fn 'resnet9000'; use "
                          "canned_dnn_regressor, linear, mnist_cnn",
                          "package.module:function")
    self.assert_model_dir_not_created()

  def test_model_fn_module_without_that_function(self):
    module = "tests.programs.no_tf_fns"
    result = _run([f"--model_fn={module}:no_such_fn",
                   f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 2, "has no attribute 'no_such_fn'",
                          f"Fix: name the function as '{module}:<function>'")
    self.assert_model_dir_not_created()

  def test_rank_2_loss_is_the_model_fn_s_not_the_input_s(self):
    result = _run(["--model_fn=tests.programs.bad_model_fns:rank_2_loss",
                   "--input_fn=constant", "--mode=train", "--max_steps=2",
                   f"--model_dir={self.model_dir}"])
    self.assert_one_error(
        result, 1, "harness.main: ModelFnError: the model_fn's loss is not a "
        "scalar: Input to reshape is a tensor with 10 values",
        "Fix: return one value as EstimatorSpec(loss=...)")
    self.assertNotIn("input_fn yields", result[2])

  def test_too_long_folder_name(self):
    long_dir = os.path.join(self.model_dir, "a" * 300)
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={long_dir}"])
    self.assert_one_error(result, 1, "its folder name aaaaaaaaaaaaaaaaaaaa... "
                          "is 300 bytes long; this file system allows 255 "
                          "bytes per name", "Fix: shorten that folder name.")

  def test_unknown_params_key(self):
    result = _run(_NO_TF + _TRAIN + ["--params=learning_rat=0.1",
                                      f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 2, "unknown key 'learning_rat'",
                          "learning_rate")
    self.assert_model_dir_not_created()

  def test_positional_argument(self):
    result = _run(_NO_TF + _TRAIN + ["train"])
    self.assert_one_error(result, 2, "unexpected arguments ['train']",
                          "flags only")

  def test_launch_bad_flag(self):
    result = _run(["--workers=-1", "--", sys.executable, "-c", "pass"],
                  module="harness.launch")
    self.assert_one_error(result, 2, "flag --workers=-1",
                          prefix="launch: error:")

  # ------------------------------------------------------------- model_fn

  def test_model_fn_returns_a_dict(self):
    result = _run([f"--model_fn={_BAD}:returns_dict", "--input_fn=constant",
                   f"--model_dir={self.model_dir}"] + _TRAIN)
    self.assert_one_error(result, 1, "ModelFnError: model_fn should return "
                          "an EstimatorSpec. It returned dict")
    self.assert_model_dir_not_created()

  def test_train_spec_without_train_op(self):
    result = _run([f"--model_fn={_BAD}:train_spec_without_train_op",
                   "--input_fn=constant", f"--model_dir={self.model_dir}"]
                  + _TRAIN)
    self.assert_one_error(result, 1, "ModelFnError: Missing train_op",
                          "optimizer.minimize(loss")
    self.assert_model_dir_not_created()

  def test_model_fn_raises_value_error(self):
    args = [f"--model_fn={_BAD}:raises_value_error", "--input_fn=constant",
            f"--model_dir={self.model_dir}", "--mode=train", "--max_steps=2"]
    result = _run(args + ["--verbosity=quiet"])
    stderr = self.assert_one_error(
        result, 1, "ValueError: hidden_units must be positive, got -3",
        "raised in the model_fn at tests/programs/bad_model_fns.py:",
        "in raises_value_error", "--verbosity=debug")
    self.assert_model_dir_not_created()
    # Was test_failures.FailureLineTest.test_model_fn_raising's own run: the
    # error is the last line, once on stdout and stderr, with a Fix.
    line = _support.last_error(stderr)
    self.assertTrue(line.startswith(
        "harness.main: ValueError: hidden_units must be positive, got -3 "
        "(raised in the model_fn at tests/programs/bad_model_fns.py:"), line)
    self.assertIn("Fix:", line)
    self.assertNotIn("writable", line)
    self.assertEqual((result[1] + result[2]).count("harness.main:"), 1,
                     result[1][-2000:] + result[2][-3000:])
    # The user's own exception keeps its traceback under --verbosity=debug.
    rc, _, stderr = _run(args + ["--verbosity=debug"])
    self.assertEqual(rc, 1, stderr[-3000:])
    self.assertIn("Traceback", stderr)
    self.assertIn('bad_model_fns.py", line', stderr)

  def test_labels_shape_mismatch_in_model_fn(self):
    result = _run([f"--model_fn={_BAD}:labels_of_width_3",
                   "--input_fn=constant", f"--model_dir={self.model_dir}"]
                  + _TRAIN)
    self.assert_one_error(
        result, 1, "ValueError: Shapes (None, 1) and (None, 3) are "
        "incompatible", "in labels_of_width_3")
    self.assert_model_dir_not_created()

  # ------------------------------------------------------------- input_fn

  def test_input_fn_returns_a_list_of_3(self):
    result = _run(["--model_fn=linear",
                   f"--input_fn={_BAD}:make_list_of_3_input_fn",
                   f"--model_dir={self.model_dir}"] + _TRAIN)
    self.assert_one_error(result, 1, "InputFnError", "list of length 3",
                          "Fix: return features alone, or a (features, "
                          "labels) pair")
    self.assert_model_dir_not_created()

  def test_input_fn_raises(self):
    result = _run(["--model_fn=linear",
                   f"--input_fn={_BAD}:make_raising_input_fn",
                   f"--model_dir={self.model_dir}"] + _TRAIN)
    self.assert_one_error(result, 1, "KeyError: 'csv_columns'",
                          "raised in the input_fn at")
    self.assert_model_dir_not_created()

  def test_labels_shape_mismatch_at_run_time(self):
    result = _run(["--model_fn=linear",
                   f"--input_fn={_BAD}:make_wide_labels_input_fn",
                   f"--model_dir={self.model_dir}"] + _TRAIN)
    # Which op meets the mismatch first (forward or gradient) varies.
    self.assert_one_error(
        result, 1, "InvalidArgumentError: Incompatible shapes: [", "[10,1]",
        "[30,1]", "Fix: make the features and labels the input_fn yields "
        "match")
    # Only the step-0 checkpoint the session wrote before the first step.
    state = pathlib.Path(self.model_dir, "checkpoint").read_text()
    self.assertIn('model_checkpoint_path: "model.ckpt-0"', state)

  def test_missing_data_dir(self):
    data_dir = os.path.join(self.root, "no_such_data")
    result = _run(["--model_fn=mnist_mlp", "--input_fn=mnist_idx",
                   f"--data_dir={data_dir}", f"--model_dir={self.model_dir}"]
                  + _TRAIN)
    self.assert_one_error(result, 1, f"InputFnError: input_fns.mnist_idx: "
                          f"data_dir {data_dir} is not a folder",
                          "Fix: --data_dir=<IDX dir>")
    self.assert_model_dir_not_created()

  def test_data_dir_with_the_wrong_files(self):
    data_dir = self.create_tempdir().full_path
    pathlib.Path(data_dir, "train.csv").write_text("x,y\n1,1\n")
    result = _run(["--model_fn=mnist_mlp", "--input_fn=mnist_idx",
                   f"--data_dir={data_dir}", f"--model_dir={self.model_dir}"]
                  + _TRAIN)
    self.assert_one_error(result, 1, f"data_dir {data_dir} has no t10k "
                          "image/label pair", "Fix:")
    self.assert_model_dir_not_created()

  # ---------------------------------------------------------------- ports

  def test_server_port_in_use(self):
    port = _support.silent_listener(self).rsplit(":", 1)[1]  # Taken.
    result = _run([], module="harness.server",
                  env=_tf_config({"worker": [f"127.0.0.1:{port}"]},
                                 "worker", 0))
    self.assert_one_error(result, 2, f"127.0.0.1:{port}",
                          "check that no other process uses the port",
                          prefix="server: error:")

  def test_tf_config_task_port_in_use(self):
    port = _support.silent_listener(self).rsplit(":", 1)[1]  # Taken.
    result = _run(_LINEAR + _TRAIN + ["--strategy=collective",
                                      f"--model_dir={self.model_dir}"],
                  env=_tf_config({"worker": [f"127.0.0.1:{port}"]},
                                 "worker", 0))
    self.assert_one_error(result, 1, "ClusterConfigError",
                          f"worker/0 on '127.0.0.1:{port}'",
                          "Fix: free the port")
    self.assertEqual(_snapshot(self.model_dir) if os.path.isdir(
        self.model_dir) else {}, {})

  def test_unreachable_remote_cluster(self):
    cluster = _support.loopback_cluster(worker=1, ps=1)  # Nobody listens.
    result = _run(_LINEAR + _TRAIN + [
        "--strategy=parameter_server", "--remote_connect_timeout_secs=3",
        f"--remote_cluster={_support.cluster_spec(cluster)}",
        f"--model_dir={self.model_dir}"], timeout=120)
    self.assert_one_error(result, 1, "RemoteClusterError", "within 3 s",
                          *cluster["worker"], *cluster["ps"],
                          "Fix: start `python -m harness.server`")
    self.assertEqual(_snapshot(self.model_dir) if os.path.isdir(
        self.model_dir) else {}, {})

  # ------------------------------------------------- model_dir and files

  def test_model_dir_under_a_regular_file(self):
    a_file = os.path.join(self.root, "a_file")
    pathlib.Path(a_file).write_text("not a folder")
    model_dir = os.path.join(a_file, "model")
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={model_dir}"])
    self.assert_one_error(result, 1, f"ConfigError: --model_dir={model_dir}"
                          f" cannot be created or written: {a_file} is a "
                          "file", "Fix: pass a --model_dir in a writable")
    self.assertEqual(pathlib.Path(a_file).read_text(), "not a folder")

  def test_read_only_model_dir(self):
    if os.geteuid() == 0:
      self.skipTest("root ignores permissions: run the suite as a non-root "
                    "user to check it (as root, "
                    "test_model_dir_under_a_regular_file covers the case)")
    read_only = os.path.join(self.root, "read_only")
    os.mkdir(read_only, 0o500)
    self.addCleanup(os.chmod, read_only, 0o700)
    model_dir = os.path.join(read_only, "model")
    result = _run(_NO_TF + _TRAIN + [f"--model_dir={model_dir}"])
    self.assert_one_error(result, 1, f"--model_dir={model_dir}",
                          "is not writable", "Fix:")
    self.assertEmpty(os.listdir(read_only))

  def test_checkpoint_of_a_different_model(self):
    self.train_linear()
    before = _snapshot(self.model_dir)
    result = _run(["--model_fn=mnist_mlp", "--input_fn=synthetic",
                   "--mode=train", "--max_steps=4", "--verbosity=quiet",
                   f"--model_dir={self.model_dir}"])
    self.assert_one_error(
        result, 1, "CheckpointError", "does not fit this model",
        "not found in checkpoint", "linear/kernel",
        "Fix: train this model in a new --model_dir")
    self.assertEqual(_snapshot(self.model_dir), before)

  def test_evaluate_without_a_checkpoint(self):
    os.mkdir(self.model_dir)
    result = _run(_NO_TF + ["--mode=evaluate", "--eval_steps=2",
                             f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 1, "CheckpointError: --mode=evaluate: "
                          f"--model_dir={self.model_dir} holds no checkpoint",
                          "Fix: train first")
    self.assertEmpty(os.listdir(self.model_dir))

  def test_export_where_a_file_is_in_the_way(self):
    os.mkdir(self.model_dir)
    in_the_way = os.path.join(self.model_dir, "export")
    pathlib.Path(in_the_way).write_text("not a folder")
    result = _run(_NO_TF + ["--mode=export", "--verbosity=quiet",
                             f"--model_dir={self.model_dir}"])
    self.assert_one_error(result, 1, "ConfigError",
                          f"but {in_the_way} is a file",
                          "Fix: move that file away")
    self.assertEqual(os.listdir(self.model_dir), ["export"])
    self.assertEqual(pathlib.Path(in_the_way).read_text(), "not a folder")


if __name__ == "__main__":
  absltest.main()
