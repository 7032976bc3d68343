"""model_dir on any tf.io.gfile filesystem (issue 12.1) and its normal form.

* A guard fails when harness code uses local-only file access (`os.path`
  queries, `glob`, `open`, `shutil`, `tempfile`, `pathlib`) outside the few
  places that are local by nature (each named below with its reason, or
  marked `# local-fs: <reason>` on the line).
* One in-process run on TensorFlow's `ram://` filesystem: train, resume,
  evaluate, export, exporters' garbage collection, the evaluator loop,
  the corrupt-checkpoint fallback and the shape check.
* `--model_dir` / `Estimator(model_dir=)` normalised once (issue 19.3).
"""

import ast
import os
import pathlib
import re
import shlex
import sys
import uuid

from absl.testing import absltest
import numpy as np
import pytest

from harness import errors
from harness._tf import tf
from harness.cli import flags as flags_lib
from harness.cli import results_text
from harness.distribute import evaluator as evaluator_lib
from harness.state import checkpoint_reader
from harness.state import checkpoints
from harness.state import paths
from harness.state import run_state
import harness
from tests import _support
from tests import conftest

HARNESS_DIR = pathlib.Path(harness.__file__).parent
_TIMEOUT_SECS = 300

# ------------------------------------------------------------ the guard

_FORBIDDEN_MODULES = {"glob", "shutil", "tempfile", "pathlib"}
_FORBIDDEN_OS_PATH = {"exists", "lexists", "isdir", "isfile", "islink",
                      "getsize", "getmtime", "getctime", "getatime",
                      "abspath", "realpath", "expanduser", "samefile",
                      "ismount"}
_FORBIDDEN_OS = {"makedirs", "mkdir", "remove", "unlink", "rename", "replace",
                 "rmdir", "removedirs", "listdir", "scandir", "stat", "lstat",
                 "walk", "access", "chmod", "open", "fdopen", "truncate"}
_PRAGMA = re.compile(r"#\s*local-fs:\s*\S")
# (module file, function): why its local file access never touches a
# model_dir on another filesystem.
_LOCAL_BY_NATURE = {
    ("_tf.py", "_import_tensorflow_quietly"):
        "a temporary file that captures fd 2 while TensorFlow imports",
    ("cli/preflight.py", "existing_ancestor"):
        "local paths only: preflight and the disk-full message skip URLs",
    ("cli/preflight.py", "_unwritable_reason"):
        "preflight before TensorFlow is imported; URL model_dirs skip it",
    ("cli/preflight.py", "preflight"):
        "local model_dirs only: it returns first for any scheme:// path",
    ("cli/diagnose.py", "_user_frame"): "source files of a traceback",
    ("cli/diagnose.py", "_py_function_error"): "source files of a traceback",
    ("cli/diagnose.py", "_library_dirs"): "Python's own installation folders",
    ("cli/diagnose.py", "_mount_point"):
        "the local mount of a path whose disk is full (ENOSPC is local)",
    ("cli/diagnose.py", "_unwritable"):
        "walks up local paths only (`local` excludes scheme:// paths)",
    ("cli/flags.py", "visible_gpu_count"): "/dev/nvidia* device nodes",
    ("run.py", "_run_script"): "the user's script file",
    ("_tf_private/training.py", "remove_autograph_files"):
        "AutoGraph's source files in this machine's temporary folder",
}


def _dotted(node):
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  if not isinstance(node, ast.Name):
    return None
  return ".".join([node.id] + parts[::-1])


def _is_forbidden(name):
  head, _, rest = name.partition(".")
  if name == "open" or (head in _FORBIDDEN_MODULES and rest):
    return True
  if name.startswith("os.path."):
    return name[len("os.path."):] in _FORBIDDEN_OS_PATH
  return head == "os" and rest in _FORBIDDEN_OS


def local_file_access(source, filename="<snippet>"):
  """Unjustified local-only file access in `source`: "file:line: name"."""
  lines = source.splitlines()
  found = []

  def visit(node, function):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      function = node.name
    names = []
    if isinstance(node, ast.Call):
      names.append(_dotted(node.func) or "")
    elif isinstance(node, ast.ImportFrom) and node.module:
      names += [f"{node.module}.{a.name}" for a in node.names]
    for name in names:
      if not _is_forbidden(name) or (
          (filename, function) in _LOCAL_BY_NATURE):
        continue
      span = lines[node.lineno - 1:node.end_lineno]
      if not any(_PRAGMA.search(line) for line in span):
        found.append(f"{filename}:{node.lineno}: {name}")
    for child in ast.iter_child_nodes(node):
      visit(child, function)

  visit(ast.parse(source), None)
  return found


class FileAccessGuardTest(absltest.TestCase):

  def test_harness_uses_gfile_for_model_dir_files(self):
    found = []
    for path in sorted(HARNESS_DIR.rglob("*.py")):
      found += local_file_access(path.read_text(),
                                 str(path.relative_to(HARNESS_DIR)))
    self.assertEqual(found, [], "local-only file access in harness/: use "
                     "tf.io.gfile (harness.state.storage), or mark a path that is "
                     "local by nature with `# local-fs: <reason>`")

  def test_guard_catches_each_kind_of_violation(self):
    snippet = "\n".join([
        "import glob, os, shutil, tempfile",
        "from os.path import exists",
        "def save(model_dir):",
        "  with open(os.path.join(model_dir, 'x')) as f: pass",
        "  os.path.exists(model_dir)",
        "  glob.glob(model_dir + '/*.index')",
        "  shutil.rmtree(model_dir)",
        "  tempfile.mkstemp(dir=model_dir)",
        "  os.makedirs(model_dir)",
        "  os.replace(model_dir + '/a', model_dir + '/b')",
        "  tf.io.gfile.exists(os.path.join(model_dir, 'ok'))",
        "  open('/proc/self/status')  # local-fs: a /proc file",
    ])
    found = local_file_access(snippet)
    self.assertEqual([f.split(": ")[1] for f in found], [
        "os.path.exists", "open", "os.path.exists", "glob.glob",
        "shutil.rmtree", "tempfile.mkstemp", "os.makedirs", "os.replace"])
    # The function allow-list applies to its own (file, function) only.
    self.assertLen(local_file_access(snippet, "run.py"), 8)


# ---------------------------------------------- one run on ram://


def _model_fn(features, labels, mode, params):
  weights = tf.compat.v1.get_variable("w", [2, params.get("width", 1)])
  predictions = tf.matmul(features["x"], weights)
  if mode == harness.ModeKeys.PREDICT:
    return harness.EstimatorSpec(mode, predictions={"y": predictions})
  loss = tf.reduce_mean(tf.square(predictions - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return harness.EstimatorSpec(mode, loss=loss, train_op=train_op,
                               predictions={"y": predictions})


def _input_fn():
  return tf.data.Dataset.from_tensors((
      {"x": np.ones([4, 2], np.float32)}, np.ones([4, 1], np.float32)
  )).repeat()


def _eval_input_fn():
  return _input_fn().take(2)


def _receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
  return harness.export.ServingInputReceiver({"x": x}, {"x": x})


def _step(path):
  return int(checkpoint_reader.open_reader(path).get_tensor("global_step"))


def _gfile_names(directory):
  return sorted(n.rstrip("/") for n in tf.io.gfile.listdir(directory))


def _remove_ram_dir(model_dir):
  """Frees the test's ram:// files (ram:// folders are only name prefixes)."""
  for root, _, names in list(tf.io.gfile.walk(model_dir)):
    for name in names:
      try:
        tf.io.gfile.remove(f"{root.rstrip('/')}/{name}")
      except tf.errors.NotFoundError:
        pass


class RamModelDirTest(absltest.TestCase):
  """Issue 12's reproduction and the whole lifecycle on `ram://`."""

  def setUp(self):
    super().setUp()
    self.model_dir = f"ram://storage-{uuid.uuid4().hex[:8]}/m1/"
    self.addCleanup(_remove_ram_dir, self.model_dir)
    self.config = harness.RunConfig(save_checkpoints_steps=10,
                                    keep_checkpoint_max=3)
    self.est = harness.Estimator(_model_fn, model_dir=self.model_dir,
                                 config=self.config)

  def test_train_resume_evaluate_export_gc_and_evaluator_loop(self):
    self.assertEqual(self.est.model_dir, self.model_dir)  # URL unchanged.
    self.est.train(_input_fn, max_steps=30)
    self.assertEqual(self.est.latest_checkpoint(), self.model_dir +
                     "model.ckpt-30")
    self.assertEqual(tf.train.latest_checkpoint(self.model_dir),
                     self.model_dir + "model.ckpt-30")
    # Leftovers of a killed save and a killed export, then a resume.
    base = self.model_dir + "export/latest"
    tf.io.gfile.makedirs(self.model_dir + "model.ckpt-35_temp")
    tf.io.gfile.makedirs(base + "/.temp-1700000000-999")
    with self.assertLogs(logger="absl", level="INFO") as logs:
      self.est.train(_input_fn, steps=10)
    text = "\n".join(logs.output)
    self.assertIn("starting at step 30", text)
    self.assertIn(f"cleanup | removed {self.model_dir}model.ckpt-35_temp",
                  text)
    self.assertEqual(_step(self.est.latest_checkpoint()), 40)
    self.assertEqual(self.est.get_variable_value("global_step"), 40)
    # keep_checkpoint_max=3 counted the first run's checkpoints.
    self.assertEqual(
        [n for n in _gfile_names(self.model_dir) if n.endswith(".index")],
        ["model.ckpt-20.index", "model.ckpt-30.index", "model.ckpt-40.index"])

    metrics = self.est.evaluate(_eval_input_fn, name="ram")
    self.assertEqual(metrics["global_step"], 40)
    self.assertTrue(tf.io.gfile.glob(self.model_dir + "eval_ram/events.*"))

    exporter = harness.LatestExporter("latest", _receiver_fn,
                                      exports_to_keep=1)
    first = exporter.export(self.est, base, self.est.latest_checkpoint(),
                            metrics, False)
    self.assertTrue(tf.io.gfile.exists(
        os.fsdecode(first) + "/saved_model.pb"))
    self.assertTrue(tf.io.gfile.exists(
        os.fsdecode(first) + "/variables/variables.index"))
    self.assertNotIn(".temp-1700000000-999", _gfile_names(base))
    self.est.train(_input_fn, steps=10)
    # The evaluator loop: evaluates step 50 = max_steps, exports, exits;
    # exports_to_keep=1 removed the first export.
    last_metrics, exports = evaluator_lib.run_continuous(
        self.est, harness.TrainSpec(_input_fn, max_steps=50),
        harness.EvalSpec(_eval_input_fn, exporters=[exporter],
                         start_delay_secs=0, throttle_secs=0),
        idle_timeout_secs=30)
    self.assertEqual(last_metrics["global_step"], 50)
    self.assertEqual(_gfile_names(base),
                     [os.path.basename(os.fsdecode(exports[0]))])
    loaded = tf.saved_model.load(os.fsdecode(exports[0]))
    self.assertIn("serving_default", loaded.signatures)

    # Run-state markers live there too.
    run_state.write_training_stopped(self.model_dir, "max_steps", 50)
    self.assertEqual(run_state.read_training_stopped(
        self.model_dir)["global_step"], 50)
    run_state.clear_training_stopped(self.model_dir)
    self.assertIsNone(run_state.read_training_stopped(self.model_dir))

  def test_corrupt_newest_falls_back_and_shape_check_refuses(self):
    self.est.train(_input_fn, max_steps=20)
    newest = self.model_dir + "model.ckpt-20"
    data = newest + ".data-00000-of-00001"
    content = tf.io.gfile.GFile(data, "rb").read()
    tf.io.gfile.remove(data)  # ram:// appends on "wb" to an existing file.
    with tf.io.gfile.GFile(data, "wb") as f:
      f.write(content[:len(content) // 2])
    checkpoint_reader._VERDICTS.clear()  # pylint: disable=protected-access
    with self.assertLogs(logger="absl", level="WARNING") as logs:
      self.assertEqual(self.est.latest_checkpoint(),
                       self.model_dir + "model.ckpt-10")
    text = "\n".join(logs.output)
    self.assertIn(f"skipping unusable checkpoint {newest}: data file", text)
    self.assertIn(f"the state file names {newest}, which is unusable", text)
    with self.assertLogs(logger="absl", level="INFO") as logs:
      self.est.train(_input_fn, steps=5)
    self.assertIn("starting at step 10", "\n".join(logs.output))

    wider = harness.Estimator(_model_fn, model_dir=self.model_dir,
                              config=self.config, params={"width": 3})
    with self.assertRaisesRegex(errors.CheckpointError,
                                r"does not fit this model: 1 variable"):
      wider.train(_input_fn, steps=1)


# ------------------------------------------------- one model_dir form


class NormalizeModelDirTest(absltest.TestCase):

  def test_normal_forms(self):
    home = os.path.expanduser("~")
    self.assertEqual(paths.normalize_model_dir("~/m"), home + "/m")
    self.assertEqual(paths.normalize_model_dir("rel2/m"),
                     os.path.join(os.getcwd(), "rel2/m"))
    self.assertEqual(paths.normalize_model_dir(pathlib.PurePath("a/../b")),
                     os.path.join(os.getcwd(), "b"))
    for url in ("gs://bucket/m", "ram://m1/", "hdfs://nn:8020/a/../m"):
      self.assertEqual(paths.normalize_model_dir(url), url)
    self.assertIsNone(paths.normalize_model_dir(None))

  def test_edges_normalise(self):
    job = flags_lib.parse(["--model_fn=tests.programs.no_tf_fns:model_fn",
                           "--input_fn=tests.programs.no_tf_fns:"
                           "make_input_fn", "--model_dir=~/runs/m"],
                          environ={}).job
    self.assertEqual(job.model_dir, os.path.expanduser("~/runs/m"))
    est = harness.Estimator(_model_fn, model_dir="rel/m")
    self.assertEqual(est.model_dir, os.path.join(os.getcwd(), "rel/m"))
    self.assertEqual(est.config.model_dir, est.model_dir)

  def test_merge_rule_and_its_sources(self):
    merge = paths.merge_model_dirs
    self.assertEqual(merge(), (None, paths.FROM_NOTHING))
    self.assertEqual(merge(argument="/a", run_config="/a", tf_config="/a"),
                     ("/a", paths.FROM_ARGUMENT))
    self.assertEqual(merge(run_config="/b", tf_config="/b"),
                     ("/b", paths.FROM_RUN_CONFIG))
    self.assertEqual(merge(argument="/c/", tf_config="/c"),
                     ("/c", paths.FROM_ARGUMENT))
    self.assertEqual(merge(tf_config="rel"),
                     (os.path.join(os.getcwd(), "rel"), paths.FROM_TF_CONFIG))
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "must have the same value as the model_dir "
                                "in TF_CONFIG"):
      merge(argument="/x", run_config="/y", tf_config="/z")
    with self.assertRaisesRegex(errors.ConfigError,
                                "set both in constructor and `RunConfig`"):
      merge(argument="/x", tf_config="/z")
    with self.assertRaisesRegex(errors.ConfigError, "should be non-empty"):
      merge(run_config="")

  def test_no_model_dir_makes_one_temporary_dir_with_one_log_line(self):
    # The Estimator and harness.main share storage.resolve_model_dir.
    with self.assertLogs(level="INFO") as logs:
      est = harness.Estimator(_model_fn, config=harness.RunConfig(environ={}))
    self.assertTrue(os.path.isdir(est.model_dir), est.model_dir)
    self.assertEqual(est.config.model_dir, est.model_dir)
    lines = [l for l in logs.output if "model_dir |" in l]
    self.assertEqual(lines, [
        f"WARNING:absl:model_dir | {est.model_dir} (temporary: nothing named "
        "one)"])
    tf.io.gfile.rmtree(est.model_dir)

  def test_tensorboard_line_is_shell_quoted(self):
    result = type("R", (), dict(
        task="local", model_dir="/tmp/my runs/it's", latest_checkpoint=None,
        export_paths=[], predictions_path=None, model_dir_removed=False))()
    job = type("J", (), {"mode": "train"})()
    line = [l for l in results_text.summary(result, job).splitlines()
            if "tensorboard:" in l][0]
    command = line.split("tensorboard:", 1)[1].strip()
    argv = shlex.split(command)
    # The program is this environment's TensorBoard (harness.cli.tensorboard_server).
    self.assertIn("tensorboard", " ".join(argv[:-2]))
    self.assertEqual(argv[-2:], ["--logdir", "/tmp/my runs/it's"])


def _run_main(args, *, cwd, home):
  command = [sys.executable, "-m", "harness.main", "--model_fn=linear",
             "--input_fn=constant", "--mode=train"] + args
  return _support.run(command, timeout_secs=_TIMEOUT_SECS, cwd=cwd,
                      env=conftest.child_env(extra={"HOME": home}))


@pytest.mark.slow  # Three runs of the binary.
class BinaryModelDirTest(absltest.TestCase):
  """Issue 19.3 through `python -m harness.main`."""

  def test_relative_and_home_model_dirs(self):
    cwd = self.create_tempdir().full_path
    home = self.create_tempdir().full_path
    for max_steps in (4, 8):
      process = _run_main(["--model_dir=rel2/m", f"--max_steps={max_steps}",
                           "--save_checkpoints_steps=2"], cwd=cwd, home=home)
      self.assertEqual(process.returncode, 0, process.description)
      self.assertNotIn("skipping unusable", process.stderr)
      self.assertNotIn("rel2/m/rel2/m", process.stderr)
    self.assertIn("starting at step 4", process.stderr)
    self.assertIn(f"model_dir:          {cwd}/rel2/m", process.stdout)

    process = _run_main(["--model_dir=~/my models", "--max_steps=2"],
                        cwd=cwd, home=home)
    self.assertEqual(process.returncode, 0, process.description)
    self.assertTrue(os.path.isfile(os.path.join(home, "my models",
                                                "checkpoint")))
    self.assertFalse(os.path.exists(os.path.join(cwd, "~")))
    line = [l for l in process.stdout.splitlines() if "tensorboard:" in l][0]
    argv = shlex.split(line.split("tensorboard:", 1)[1])
    self.assertIn("tensorboard", " ".join(argv[:-2]))  # This env's program.
    self.assertEqual(argv[-2:], ["--logdir", f"{home}/my models"])


if __name__ == "__main__":
  absltest.main()
