"""Tests of harness.launch and harness.launch.ports: real child processes, no TF."""

import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

from absl.testing import absltest
from absl.testing import parameterized

from harness import cluster
from harness import errors
from harness import launch
from harness.launch import ports
from tests import _processes
from tests import _support
from tests import conftest

# Every launch here ends in well under this; a hang fails the test instead.
_RUN_BOUND_SECS = 30
_LINE_RE = re.compile(r"^(\[(chief|worker|ps|evaluator)/\d\] .*|launch \| .*)$")


def _python(script):
  """A command running `script` (dedented) in this interpreter."""
  return [sys.executable, "-c", textwrap.dedent(script)]


# The task's role decides what it does; {dir} is a per-test directory.
_ROLE_SCRIPT = """
    import json, os, sys, time
    task = os.environ["HARNESS_TASK"]
    config = json.loads(os.environ["TF_CONFIG"])
    role = config["task"]["type"] + "/" + str(config["task"]["index"])
    runs_file = os.path.join({dir!r}, task.replace("/", "_") + ".runs")
    with open(runs_file, "a") as f:
      f.write(json.dumps({{"pid": os.getpid(), "tf_config": config,
                          "restarts": os.environ.get("HARNESS_TASK_RESTARTS")
                          }}) + "\\n")
    runs = sum(1 for _ in open(runs_file))
    print("role", role, "unbuffered", os.environ.get("PYTHONUNBUFFERED"))
    print("to stderr", file=sys.stderr)
    def wait_for_files(count):
      deadline = time.time() + 20
      while len(os.listdir({dir!r})) < count and time.time() < deadline:
        time.sleep(0.02)
    def mark(name):  # After this task's lines above were printed.
      open(os.path.join({dir!r}, name + ".mark"), "w").close()
    def wait_for_mark(name):  # Bounded: a missing mark fails the assertions.
      deadline = time.time() + 20
      path = os.path.join({dir!r}, name + ".mark")
      while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.02)
{body}
"""


def _runs(directory, task):
  """The JSON records a task's runs wrote, one a start."""
  path = os.path.join(directory, task.replace("/", "_") + ".runs")
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return [json.loads(line) for line in f]


def _gone(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return True
  return False


class BuildTfConfigsTest(parameterized.TestCase):

  def test_full_cluster(self):
    configs = launch.build_tf_configs(workers=2, chief=True, ps=1,
                                      evaluator=True)
    self.assertEqual(list(configs), ["chief/0", "worker/0", "worker/1",
                                     "ps/0", "evaluator/0"])
    the_cluster = configs["chief/0"]["cluster"]
    self.assertEqual(sorted(the_cluster), ["chief", "ps", "worker"])
    self.assertLen(the_cluster["worker"], 2)
    addresses = [a for job in the_cluster.values() for a in job]
    self.assertLen(set(addresses), 4)
    for name, config in configs.items():
      job, index = name.split("/")
      self.assertEqual(config["task"], {"type": job, "index": int(index)})
      self.assertEqual(config["cluster"], the_cluster)
      info = cluster.parse_tf_config(json.dumps(config), source=name)
      self.assertEqual((info.task_type, info.task_id), (job, int(index)))
      if job != "evaluator":
        self.assertTrue(info.task_address.startswith("127.0.0.1:"))
    self.assertIsNone(cluster.parse_tf_config(
        configs["evaluator/0"]).task_address)

  def test_given_ports_are_used(self):
    configs = launch.build_tf_configs(
        workers=2, host="localhost", ports_by_task={"worker/1": 4321})
    self.assertEqual(configs["worker/0"]["cluster"]["worker"][1],
                     "localhost:4321")

  @parameterized.named_parameters(
      ("no_chief_no_worker", dict(workers=0), "chief or at least one worker"),
      ("negative_ps", dict(workers=1, ps=-1), "`ps` must be an integer"),
      ("unknown_port_task", dict(workers=1, ports_by_task={"ps/0": 1}),
       "ps/0"))
  def test_bad_arguments(self, kwargs, message):
    with self.assertRaisesRegex(errors.ConfigError, message):
      launch.build_tf_configs(**kwargs)

  def test_pick_free_ports_are_distinct_and_bindable(self):
    picked = ports.pick_free_ports(5)
    self.assertLen(set(picked), 5)
    import socket  # pylint: disable=g-import-not-at-top
    with socket.socket() as sock:
      sock.bind(("127.0.0.1", picked[0]))
    self.assertEqual(ports.address("::1", 80), "[::1]:80")
    with self.assertRaises(errors.ConfigError):
      ports.pick_free_ports(-1)


class LaunchTest(parameterized.TestCase):

  def _launch(self, body, **kwargs):
    """Runs launch() with the role script; returns (status, lines, secs)."""
    directory = self.create_tempdir().full_path
    self.dir = directory
    out = io.StringIO()
    body = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    command = _python(_ROLE_SCRIPT.format(dir=directory, body=body))
    start = time.monotonic()
    status = launch.launch(command, output=out, **kwargs)
    secs = time.monotonic() - start
    lines = out.getvalue().splitlines()
    self.assertLess(secs, _RUN_BOUND_SECS, "\n".join(lines))
    for line in lines:
      self.assertRegex(line, _LINE_RE)
    return status, lines, secs

  def test_all_succeed_and_ps_is_stopped(self):
    # The others end only once ps/0 has printed: under load its start can
    # lag theirs, and launch stops it as soon as they have all exited.
    status, lines, _ = self._launch(
        """
        if task.startswith("ps/"):
          mark("ps_started")
          time.sleep(600)
        wait_for_mark("ps_started")
        """, workers=2, chief=True, ps=1, evaluator=True)
    text = "\n".join(lines)
    self.assertEqual(status, 0, text)
    for task in ("chief/0", "worker/0", "worker/1", "ps/0", "evaluator/0"):
      self.assertIn(f"[{task}] role {task} unbuffered 1", lines)
      self.assertIn(f"[{task}] to stderr", lines)
      self.assertLen(_runs(self.dir, task), 1)
    self.assertIn("launch | all chief/worker/evaluator tasks exited with 0 | "
                  "stopping 1 running tasks", lines)
    self.assertEqual(lines[-1], "launch | exit 0")
    self.assertTrue(_gone(_runs(self.dir, "ps/0")[0]["pid"]))
    evaluator = _runs(self.dir, "evaluator/0")[0]["tf_config"]
    self.assertNotIn("evaluator", evaluator["cluster"])
    self.assertEqual(evaluator["cluster"],
                     _runs(self.dir, "worker/1")[0]["tf_config"]["cluster"])

  def test_failing_worker_stops_the_others(self):
    status, lines, secs = self._launch(
        """
        if task == "worker/1":
          wait_for_files(4)  # Every task has started.
          sys.exit(3)
        time.sleep(600)
        """, workers=3, ps=1)
    text = "\n".join(lines)
    self.assertEqual(status, 3, text)
    self.assertIn("launch | worker/1 failed: exited with 3 | stopping 3 "
                  "running tasks", lines)
    self.assertLess(secs, 10, text)
    for task in ("worker/0", "worker/2", "ps/0"):
      self.assertTrue(_gone(_runs(self.dir, task)[0]["pid"]), task)

  def test_restarts_keep_tf_config(self):
    status, lines, _ = self._launch(
        """
        if task == "worker/1" and runs < 3:
          sys.exit(1)
        """, workers=2, max_restarts=2)
    text = "\n".join(lines)
    self.assertEqual(status, 0, text)
    self.assertIn("launch | worker/1 exited with 1 | restart 1/2", lines)
    self.assertIn("launch | worker/1 exited with 1 | restart 2/2", lines)
    runs = _runs(self.dir, "worker/1")
    self.assertLen(runs, 3)
    self.assertEqual(runs[0]["tf_config"], runs[2]["tf_config"])
    # Each restart says which it is (the task's live metrics report it).
    self.assertEqual([r["restarts"] for r in runs], [None, "1", "2"])
    self.assertLen(_runs(self.dir, "worker/0"), 1)

  def test_signal_death_uses_up_restarts(self):
    status, lines, _ = self._launch(
        """
        if task == "worker/0":
          os.kill(os.getpid(), 9)
        time.sleep(600)
        """, workers=2, max_restarts=1)
    text = "\n".join(lines)
    self.assertEqual(status, 128 + 9, text)
    self.assertIn("launch | worker/0 exited with -9 | restart 1/1", lines)
    self.assertIn("launch | worker/0 failed: exited with -9 after 1 restarts "
                  "| stopping 1 running tasks", lines)
    self.assertLen(_runs(self.dir, "worker/0"), 2)

  def test_timeout_kills_everything(self):
    status, lines, secs = self._launch(
        "time.sleep(600)", workers=1, ps=1, timeout_secs=1)
    self.assertEqual(status, launch.TIMEOUT_EXIT_CODE, "\n".join(lines))
    self.assertIn("launch | timeout after 1 s | stopping 2 running tasks",
                  lines)
    self.assertBetween(secs, 1, 10)
    self.assertTrue(_gone(_runs(self.dir, "worker/0")[0]["pid"]))

  def test_sigkill_after_grace_when_sigterm_is_ignored(self):
    status, lines, secs = self._launch(
        """
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open(runs_file[:-len(".runs")] + ".ignoring", "w").close()
        if task == "worker/1":
          wait_for_files(4)  # Both tasks ignore SIGTERM now.
          sys.exit(5)
        time.sleep(600)
        """, workers=2, grace_secs=1)
    self.assertEqual(status, 5, "\n".join(lines))
    self.assertBetween(secs, 1.0, 10)  # The whole grace period passed.
    self.assertTrue(_gone(_runs(self.dir, "worker/0")[0]["pid"]))

  def test_stop_event(self):
    stop = threading.Event()
    timer = threading.Timer(1.0, stop.set)
    timer.start()
    self.addCleanup(timer.cancel)
    status, lines, _ = self._launch("time.sleep(600)", workers=2,
                                    stop_event=stop)
    self.assertEqual(status, 130, "\n".join(lines))
    self.assertIn("launch | stop requested | stopping 2 running tasks", lines)

  def test_interleaved_output_keeps_whole_lines(self):
    status, lines, _ = self._launch(
        """
        for i in range(300):
          print(task, "line", i, "x" * 200)
          print(task, "err", i, file=sys.stderr)
        """, workers=3)
    self.assertEqual(status, 0)
    for task in ("worker/0", "worker/1", "worker/2"):
      own = [l for l in lines if l.startswith(f"[{task}] {task} line ")]
      self.assertEqual([l.split()[3] for l in own],
                       [str(i) for i in range(300)])
      self.assertLen([l for l in lines if l.startswith(f"[{task}] {task} err")],
                     300)

  # TF 2.21 prints its import-time C++ block whatever TF_CPP_MIN_LOG_LEVEL
  # says (seen on a CPU with AVX-512: the oneDNN line is 250 characters).
  _CPP_BLOCK = """
      for line in (
          "WARNING: All log messages before absl::InitializeLog() is called "
          "are written to STDERR",
          "I0000 00:00:1795869407.523347    5728 port.cc:153] oneDNN on",
          "W0000 00:00:1795869407.525594    5728 cpu_feature_guard.cc:9] w",
          "E0000 00:00:1795869407.525594    5728 cuda_driver.cc:40] cuInit",
          "F0000 00:00:1795869407.525594    5728 op.cc:1] fatal"):
        print(line, file=sys.stderr)
        print(line)
      """

  @parameterized.named_parameters(
      ("launcher_level_3", {}, ["F"]),
      ("user_level_1", {"TF_CPP_MIN_LOG_LEVEL": "1"},
       ["WARNING", "W", "E", "F"]),
      ("user_level_0", {"TF_CPP_MIN_LOG_LEVEL": "0"},
       ["WARNING", "I", "W", "E", "F"]),
      ("verbose", {"HARNESS_VERBOSITY": "debug"},
       ["WARNING", "I", "W", "E", "F"]))
  def test_cpp_lines_below_the_task_level_leave_stderr(self, env, kept):
    base = {k: v for k, v in os.environ.items()
            if k not in ("TF_CPP_MIN_LOG_LEVEL", "HARNESS_VERBOSITY")}
    status, lines, _ = self._launch(self._CPP_BLOCK, workers=1,
                                    env=dict(base, **env))
    self.assertEqual(status, 0, "\n".join(lines))
    task_lines = [l[len("[worker/0] "):] for l in lines
                  if l.startswith("[worker/0] ")
                  and not l.startswith("[worker/0] role ")
                  and l != "[worker/0] to stderr"]
    # stdout's copy of each line always stays; stderr's only when kept.
    first_words = sorted(l.split()[0].rstrip(":0") for l in task_lines)
    self.assertEqual(first_words,
                     sorted(["WARNING", "I", "W", "E", "F"] + kept),
                     "\n".join(lines))

  @parameterized.named_parameters(
      ("empty_command", dict(command=[]), "`command` is empty"),
      ("negative_restarts", dict(max_restarts=-1), "`max_restarts`"),
      ("negative_timeout", dict(timeout_secs=-1), "`timeout_secs`"))
  def test_bad_arguments(self, kwargs, message):
    kwargs = dict(dict(command=["true"], workers=1), **kwargs)
    command = kwargs.pop("command")
    with self.assertRaisesRegex(errors.ConfigError, message):
      launch.launch(command, output=io.StringIO(), **kwargs)


def _run_cli(args, timeout=_RUN_BOUND_SECS):
  return _support.run([sys.executable, "-m", "harness.launch", *args],
                      timeout_secs=timeout)


class LaunchCliTest(parameterized.TestCase):

  def test_exit_status_of_failing_task(self):
    # worker/1 fails only once worker/0 has printed (bounded): launch stops
    # the others at the failure, and under load worker/0 may start later.
    printed = os.path.join(self.create_tempdir().full_path, "printed")
    result = _run_cli(["--workers=2", "--", *_python(f"""
        import os, sys, time
        task = os.environ["HARNESS_TASK"]
        print("hello from", task, flush=True)
        if task == "worker/0":
          open({printed!r}, "w").close()
          sys.exit(0)
        deadline = time.time() + 20
        while not os.path.exists({printed!r}) and time.time() < deadline:
          time.sleep(0.02)
        sys.exit(7)
        """)])
    self.assertEqual(result.returncode, 7, result.stdout + result.stderr)
    self.assertIn("[worker/0] hello from worker/0", result.stdout)
    self.assertIn("launch | worker/1 failed: exited with 7", result.stdout)

  @parameterized.named_parameters(
      ("bad_int", ["--workers=two", "--", "true"], "flag --workers=two"),
      ("no_command", ["--workers=1"], "no command"),
      ("no_tasks", ["--workers=0", "--", "true"], "chief or at least one"),
      ("no_such_program", ["--", "/nonexistent/program"],
       "Cannot start task worker/0"),
      ("negative", ["--max_restarts=-1", "--", "true"], "--max_restarts"))
  def test_bad_flags_exit_2(self, args, message):
    result = _run_cli(args)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn(message, result.stderr)
    self.assertNotIn("Traceback", result.stderr)

  def test_sigterm_stops_all_tasks(self):
    pid_dir = self.create_tempdir().full_path
    proc = _processes.popen(
        [sys.executable, "-m", "harness.launch", "--workers=2", "--ps=1",
         "--", *_python(f"""
            import os, time
            path = os.path.join({pid_dir!r}, str(os.getpid()))
            open(path, "w").close()
            print("ready", flush=True)
            time.sleep(600)
            """)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=conftest.child_env(), cwd=conftest.REPO_ROOT)
    self.addCleanup(lambda: proc.poll() is None and proc.kill())
    _support.wait_for(lambda: len(os.listdir(pid_dir)) == 3,
                      _RUN_BOUND_SECS, "the 3 tasks to write their pid files")
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=_RUN_BOUND_SECS)
    self.assertEqual(proc.returncode, 128 + signal.SIGTERM, output)
    self.assertIn("launch | stop requested | stopping 3 running tasks", output)
    pids = [int(p) for p in os.listdir(pid_dir)]
    _support.wait_for(lambda: all(map(_gone, pids)), 5,
                      f"every task ({pids}) to be gone")


if __name__ == "__main__":
  absltest.main()
