"""Helpers several test files share (one copy each; issue 13 part 5).

    from tests import _support

    self.assertEqual(_support.checkpoint_steps(model_dir), [0, 50, 100])
    _support.wait_for(lambda: os.path.exists(path), 30, f"{path} to appear")
    result = _support.run([sys.executable, "-m", "harness.main", ...],
                          timeout_secs=300)
    self.assertEqual(result.returncode, 0, result.description)

The child-process environment stays `tests.conftest.child_env` (with the
shared paths; conftest is what pytest loads first). Free ports come from the
product's own `harness.launch.ports.pick_free_ports`. Importing this module
loads no TensorFlow (tests of TF-free modules such as harness.launch use
it); the helpers that need TensorFlow import it when called.
"""

import ast
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from harness.launch import ports
from tests import _processes
from tests import conftest

# ------------------------------------------------------------------ waiting


def poll_until(predicate, timeout_secs, interval_secs=0.05):
  """predicate()'s first truthy value within timeout_secs, else None."""
  deadline = time.monotonic() + timeout_secs
  while True:
    value = predicate()
    if value or time.monotonic() >= deadline:
      return value or None
    time.sleep(interval_secs)


def wait_for(predicate, timeout_secs, what, *, details=None,
             interval_secs=0.05):
  """Waits until predicate() is truthy and returns that value.

  Args:
    predicate: the marker to wait on (a file, a line, a port answering).
    timeout_secs: the bound.
    what: what is awaited, for the failure message ("worker/0 to log a step").
    details: optional callable giving context for the failure (a log tail).
    interval_secs: seconds between two looks.

  Raises:
    AssertionError: naming `what` and the bound, when time runs out.
  """
  value = poll_until(predicate, timeout_secs, interval_secs)
  if value is None:
    extra = f"\n{details()}" if details else ""
    raise AssertionError(
        f"timed out after {timeout_secs:g} s waiting for {what}{extra}")
  return value


# ------------------------------------------------------ model_dir readers


def checkpoint_steps(model_dir):
  """Global steps of the `model.ckpt-N` checkpoints on disk, ascending."""
  return sorted(int(p.rsplit("-", 1)[1].split(".")[0]) for p in
                glob.glob(os.path.join(model_dir, "model.ckpt-*.index")))


def checkpoint_step(model_dir):
  """The global step of model_dir's latest checkpoint; None without one."""
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  path = tf.train.latest_checkpoint(model_dir)
  return None if path is None else int(
      tf.train.load_variable(path, "global_step"))


def steps_logged(output, task):
  """Steps of the `train | <task> | step N/...` lines in `output`."""
  return [int(s) for s in re.findall(
      rf"train \| {re.escape(task)} \| step (\d+)/", output)]


# ---------------------------------------------- toy input_fns, model_fns


def constant_input_fn():
  """Endless batches of 4 copies of ({"x": [1.0]}, [2.0])."""
  from harness._tf import tf  # pylint: disable=g-import-not-at-top
  return tf.data.Dataset.from_tensors(({"x": [1.0]}, [2.0])).repeat().batch(4)


def scalar_weight_model_fn(learning_rate=0.1):
  """A model_fn: predictions = x @ w (one weight "w", from 0), squared loss,
  plain SGD at `learning_rate`; EVAL adds "mae" and "mean_pred" (a Keras
  metric, whose variables are in no collection)."""
  def model_fn(features, labels, mode):
    from harness import spec  # pylint: disable=g-import-not-at-top
    from harness._tf import tf  # pylint: disable=g-import-not-at-top
    weight = tf.compat.v1.get_variable(
        "w", [1, 1], initializer=tf.zeros_initializer())
    predictions = tf.matmul(features["x"], weight)
    loss = tf.reduce_mean(tf.square(predictions - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(
        learning_rate).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
    metrics = {}
    if mode == spec.ModeKeys.EVAL:
      keras_mean = tf.keras.metrics.Mean()
      keras_mean.update_state(predictions)
      metrics = {"mae": tf.compat.v1.metrics.mean_absolute_error(
          labels, predictions), "mean_pred": keras_mean}
    return spec.EstimatorSpec(
        mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=metrics)
  return model_fn


# ------------------------------------------------------ clusters, ports


def tf_config_environ(cluster=None, task_type=None, index=None, **extra):
  """{"TF_CONFIG": json} from its parts; a None part is left out."""
  config = dict(extra)
  if cluster is not None:
    config["cluster"] = cluster
  if task_type is not None or index is not None:
    config["task"] = {k: v for k, v in (("type", task_type),
                                        ("index", index)) if v is not None}
  return {"TF_CONFIG": json.dumps(config)}


def loopback_cluster(**num_tasks):
  """{job: ["127.0.0.1:PORT", ...]} with free ports, e.g. worker=2, ps=1."""
  free = iter(ports.pick_free_ports(sum(num_tasks.values())))
  return {job: [f"127.0.0.1:{next(free)}" for _ in range(count)]
          for job, count in num_tasks.items()}


def cluster_spec(cluster):
  """The `--remote_cluster` / `--cluster_spec` text of a cluster dict."""
  return ";".join(f"{job}={','.join(a)}" for job, a in cluster.items())


def silent_listener(test):
  """"127.0.0.1:PORT" of a socket that accepts and never speaks (not a
  TensorFlow server); closed when `test` ends."""
  listener = socket.socket()
  listener.bind(("127.0.0.1", 0))
  listener.listen(16)
  listener.settimeout(0.2)
  held = []
  stop = threading.Event()

  def accept():
    while not stop.is_set():
      try:
        held.append(listener.accept()[0])
      except OSError:
        continue

  thread = threading.Thread(target=accept, daemon=True)
  thread.start()

  def close():
    stop.set()
    thread.join(5)
    for conn in held:
      conn.close()
    listener.close()

  test.addCleanup(close)
  return f"127.0.0.1:{listener.getsockname()[1]}"


# ------------------------------------------------------------- processes


LINE_LIMIT = 160  # The most characters a line a person reads may have.


def flat(text):
  """`text` with every run of whitespace one space: a binary's final error
  may be folded over lines (`harness.cli.log_format.fold`)."""
  return " ".join(text.split())


def last_error(output):
  """The last unindented non-empty line of `output` with the indented lines
  after it (a folded error's continuations), as one line (`flat`)."""
  lines = [line for line in output.splitlines() if line.strip()]
  start = len(lines) - 1
  while start > 0 and lines[start][:1].isspace():
    start -= 1
  return flat(" ".join(lines[start:])) if lines else ""


def long_lines(text, limit=LINE_LIMIT):
  """The lines of `text` over `limit` characters, as "<length>: <line>".

  A line is measured as a user would see it: the run's temporary folder
  (conftest's, under the machine's own) counts as the machine's folder."""
  root = os.environ.get(conftest.TEMP_ROOT_ENV)
  seen = [(len(line.replace(root, os.path.dirname(root)) if root else line),
           line) for line in text.splitlines()]
  return [f"{length}: {line}" for length, line in seen if length > limit]


def run_timed(command, *, timeout_secs, env=None):
  """Runs `command` from the repository root, stdin closed, stderr into
  stdout; returns (exit code or None past `timeout_secs` (its process tree
  killed), [(arrival monotonic time, line)], monotonic time it ended)."""
  proc = _processes.popen(
      command, env=conftest.child_env() if env is None else env,
      cwd=conftest.REPO_ROOT, stdin=subprocess.DEVNULL,
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  lines = []

  def read():
    for line in proc.stdout:
      lines.append((time.monotonic(), line.rstrip("\n")))

  reader = threading.Thread(target=read, daemon=True)
  reader.start()
  try:
    code = proc.wait(timeout=timeout_secs)
  except subprocess.TimeoutExpired:
    _processes.kill_tree(proc)
    code = None
  ended = time.monotonic()
  reader.join(30)
  return code, lines, ended


def run(command, *, timeout_secs, env=None, cwd=None):
  """Runs `command` to completion (bounded), from the repository root.

  Args:
    command: argv list.
    timeout_secs: the bound (subprocess.TimeoutExpired past it, the
      command and every process it started killed first).
    env: the child's environment; default `conftest.child_env()`.
    cwd: default the repository root.

  Returns:
    The CompletedProcess (text), with `output` (stdout + stderr) and
    `description` (command, exit status, output tails) for failure messages.
  """
  proc = _processes.popen(
      command, cwd=cwd or conftest.REPO_ROOT,
      env=conftest.child_env() if env is None else env,
      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True)
  try:
    stdout, stderr = proc.communicate(timeout=timeout_secs)
  except BaseException:  # The bound (or Ctrl-C): the whole tree goes.
    _processes.kill_tree(proc)
    proc.communicate(timeout=_processes.KILL_WAIT_SECS)
    raise
  process = subprocess.CompletedProcess(command, proc.returncode, stdout,
                                        stderr)
  process.output = process.stdout + process.stderr
  process.description = (
      f"command: {command}\nexit: {process.returncode}\n"
      f"stdout tail:\n{process.stdout[-3000:]}\n"
      f"stderr tail:\n{process.stderr[-3000:]}")
  return process


class ChildProcess:
  """`python ARGS` in its own process group, output collected as it runs;
  killed with its descendants when the test ends (tests/_processes.py).

      server = ChildProcess(["-m", "harness.server", ...], "server worker/0")
      test.addCleanup(server.kill_group)
      test.assertTrue(server.wait_for_text("listening on", 90),
                      server.describe())
  """

  def __init__(self, args, name, tf_config=None, env=None, program=None):
    """`program` (an argv prefix) replaces this Python, e.g. ["bash", "-c"]."""
    self.args, self.name = list(args), name
    self.lines = []
    self.times = []  # Arrival time (time.monotonic()) of each of `lines`.
    self.ended = None  # time.monotonic() when wait() saw the exit.
    self.proc = _processes.popen(
        [*(program or [sys.executable]), *self.args],
        env=conftest.child_env(tf_config) if env is None else env,
        cwd=conftest.REPO_ROOT, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()

  def _read(self):
    for line in self.proc.stdout:
      self.times.append(time.monotonic())
      self.lines.append(line.rstrip("\n"))

  @property
  def output(self):
    return "\n".join(self.lines)

  def describe(self):
    tail = "\n".join(self.lines[-40:])
    return (f"{self.name}: {' '.join(self.args)}\nexit code: "
            f"{self.proc.poll()}\nlog tail:\n{tail}")

  def wait_for(self, predicate, timeout_secs):
    """True once predicate() holds; False on timeout or when the process
    exits without it."""
    poll_until(lambda: predicate() or self.proc.poll() is not None,
               timeout_secs, interval_secs=0.1)
    if self.proc.poll() is not None:
      self._reader.join(timeout=5)
    return bool(predicate())

  def wait_for_text(self, text, timeout_secs):
    """wait_for a line containing `text`."""
    return self.wait_for(lambda: any(text in line for line in self.lines),
                         timeout_secs)

  def search(self, pattern):
    """The first match of `pattern` (a compiled regex) in the lines so far."""
    for line in list(self.lines):
      match = pattern.search(line)
      if match:
        return match
    return None

  def wait_for_match(self, pattern, timeout_secs):
    """search(pattern) once a line matches; None on timeout or exit."""
    self.wait_for(lambda: self.search(pattern), timeout_secs)
    return self.search(pattern)

  def wait(self, timeout_secs):
    """The exit status; None (and the group killed) past the bound."""
    try:
      code = self.proc.wait(timeout=timeout_secs)
      self.ended = time.monotonic()
    except subprocess.TimeoutExpired:
      self.kill_group()
      code = None
    self._reader.join(timeout=5)
    return code

  def stop(self, signum, timeout_secs):
    """Sends `signum`; (exit status or None if still running, seconds)."""
    start = time.monotonic()
    self.proc.send_signal(signum)
    try:
      code = self.proc.wait(timeout=timeout_secs)
    except subprocess.TimeoutExpired:
      code = None
    self._reader.join(timeout=5)
    return code, time.monotonic() - start

  def terminate_group(self, timeout_secs=30):
    """SIGTERM to the group (it may clean up), SIGKILL past the bound."""
    if self.proc.poll() is None:
      try:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=timeout_secs)
      except ProcessLookupError:
        pass
      except subprocess.TimeoutExpired:
        self.kill_group()

  def kill_group(self):
    """SIGKILL to the group and every descendant's (bounded)."""
    _processes.kill_tree(self.proc)


def start_servers(add_cleanup, cluster, num_cpu_devices=1, start_secs=90):
  """One `python -m harness.server` per task of `cluster`, each listening
  (waited for, bounded); `add_cleanup` (a test's `addCleanup`, or a class's
  `addClassCleanup` for one cluster shared by its tests) kills each by
  process group."""
  spec = cluster_spec(cluster)
  servers = []
  for job, addresses in cluster.items():
    for index in range(len(addresses)):
      server = ChildProcess(
          ["-m", "harness.server", f"--cluster_spec={spec}",
           f"--job_name={job}", f"--task_index={index}",
           f"--num_cpu_devices={num_cpu_devices}"], f"server {job}/{index}")
      add_cleanup(server.kill_group)
      servers.append(server)
  for server in servers:
    if not server.wait_for_text("listening on", start_secs):
      raise AssertionError(f"not listening after {start_secs} s: "
                           f"{server.describe()}")
  return servers


# ------------------------------------------------------- estimator state


def linear_estimator(model_dir, save_checkpoints_steps, **config):
  """An Estimator of tests/programs/cluster_job.py's linear model_fn (use
  with constant_input_fn): checkpoints every `save_checkpoints_steps` steps
  only, seeded; `config` adds RunConfig fields."""
  import harness  # pylint: disable=g-import-not-at-top
  from tests.programs import cluster_job  # pylint: disable=g-import-not-at-top
  return harness.Estimator(cluster_job.model_fn, config=harness.RunConfig(
      model_dir=model_dir, save_checkpoints_steps=save_checkpoints_steps,
      save_checkpoints_secs=None, tf_random_seed=1, **config))


def variable_values(estimator):
  """{variable name: value} of the estimator's latest checkpoint."""
  return {name: estimator.get_variable_value(name)
          for name in estimator.get_variable_names()}


def copy_model_dir_files(source_dir, model_dir):
  """Copies source_dir's files (a checkpoint to start from) into model_dir."""
  for name in os.listdir(source_dir):
    if os.path.isfile(os.path.join(source_dir, name)):
      shutil.copy(os.path.join(source_dir, name), model_dir)


def printed_literal(output, tag):
  """The Python literal after `tag ` on the first line of `output` that
  starts so (a test program's printed result)."""
  for line in output.splitlines():
    if line.startswith(tag + " "):
      return ast.literal_eval(line[len(tag) + 1:])
  raise AssertionError(f"no '{tag} ...' line in:\n{output[-3000:]}")
