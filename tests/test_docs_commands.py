"""Every command in the docs' fenced shell blocks runs as written (issue 24).

The commands are read from README.md, docs/*.md and k8s/README.md at test
time, so a block added to those files is tested without touching this file.
Each runs with `bash -c` from the repository root, with this venv's `bin`
first on PATH (as after `source .venv/bin/activate`) and exits 0. What is
changed, and why, is the table `_REWRITES`; what cannot run here is
`_SKIP`, with the reason the test reports.

A `harness.server` line is a server the reader starts in another terminal:
its own case starts it, waits for `listening on` and stops it (exit 0); the
later commands of its block run with it serving. When a later command of its
block is run, that command's case makes those checks of its servers instead,
after the command (one start of each server).

Every case also scans what the command printed: no line over 160
characters (`_support.LINE_LIMIT`), log lines, warnings and errors included.
Some cases check more of the same run (what other test files ran the
command again for): tests/_docs_facts.py, which also holds what runs first
(the README's client killed before it is run again).
"""

import dataclasses
import os
import re
import shutil
import signal
import sys
import tempfile

from absl.testing import absltest
from absl.testing import parameterized
import pytest

from harness.launch import ports
from tests import _docs_facts
from tests import _support
from tests import conftest

_DOC_GLOBS = ("README.md", "k8s/README.md", "docs/*.md")
_SHELL_LANGS = ("bash", "sh", "shell", "console")
_FENCE_RE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S")

# Commands no test here can run: (regex searched in the command, why; what
# covers it). They are listed, not skipped (test_commands_not_run_...).
_SKIP = (
    (r"-m pytest", "the test suite itself, which holds this test"),
    (r"^docker ", "needs docker and an image registry"),
    (r"^kubectl ", "needs a Kubernetes cluster"),
    (r"grpc://localhost:2222", "talks to a Kubernetes cluster through the "
     "kubectl port-forward above"),
    (r"--data_dir=~/tensorflow_datasets",
     "downloads MNIST through tensorflow-datasets: needs network"),
    (r"legacy_train\.py", "a placeholder for the reader's own script"),
    (r"\s\.\.\.", "elided (`...`): the reader completes it"),
    (r"^curl .*/metrics", "reads the endpoint of the job the line above runs; "
     "tests/test_live_metrics.py scrapes a running job"),
    (r"^nice -n 19 mutmut run", "mutation testing: minutes to hours of "
     "test runs (docs/MUTATION.md); not a check of the docs"),
    (r"-m bench\.docfigs\.mutation_report", "reads the results of `mutmut "
     "run` above; tests/test_mutation_report.py runs it on result files"),
    (r"pip install --no-deps tensorflow-ranking",
     "installs a third-party library from PyPI (network)"),
    (r"tests/programs/tfr_ranking\.py", "needs tensorflow-ranking (the line "
     "above); tests/test_tf_ranking.py runs it when it is installed"),
    (r"pip install (--no-deps (tensorflow-privacy|adanet)|scipy mpmath)",
     "installs third-party libraries from PyPI into the venv; .ci/run's "
     "library leg does"),
    (r"^python -m harness\.launch --workers=2 --evaluator -- +python -m "
     r"harness\.main --strategy=collective --num_gpus_per_worker=2 "
     r"--cpu_stand_in +--model_fn=mnist_mlp --input_fn=synthetic "
     r"--model_dir=/tmp/mw --max_steps=200$",
     "tests/test_readme_launch.py runs this line as written, makes the same "
     "checks and times the launcher's end"),
    (r"tests/programs/(tfp_dp_dnn|adanet_ensemble)\.py", "needs TF Privacy / "
     "AdaNet (the lines above); tests/test_tf_privacy.py and "
     "tests/test_adanet.py run it when they are installed"),
)

# What changes before a command runs: (pattern, replacement, why).
_REWRITES = (
    (r"^python3 -m venv \.venv && \.venv/bin/pip install -e '\.\[test\]' && ",
     "", "the install: this checkout's venv is used"),
    (r"\s*\|\s*kubectl .*$", "",
     "the rendering before `| kubectl` runs; kubectl needs a cluster"),
    (r"/tmp/", "{tmp}/", "model_dirs in a temporary folder of the test"),
    (r"--tensorboard(?![=_\w])", "--tensorboard=0",
     "a free port: 6006 may be taken by a run beside this one"),
)
_PORT_RE = re.compile(r"127\.0\.0\.1:(\d{4,5})")  # Fixed ports -> free ones.
_KEPT_PID_RE = re.compile(r"stop it with: kill (\d+)")

_SERVER_START_SECS = 240
_SERVER_STOP_SECS = 60
_FAST_SECS = 300
_SLOW_SECS = 600


@dataclasses.dataclass(frozen=True)
class _Command:
  doc: str          # e.g. "README.md:171" (the block's first line)
  text: str         # the command as written (continuations joined)
  prelude: tuple    # the block's variable assignments before it
  servers: tuple    # the block's server commands before it

  @property
  def is_server(self):
    return "harness.server" in self.text

  @property
  def skip_reason(self):
    for pattern, reason in _SKIP:
      if re.search(pattern, self.text):
        return reason
    return None

  @property
  def slow(self):
    trains = ("harness.main" in self.text and "--dry_run" not in self.text)
    return trains or "harness.launch" in self.text


def _block_commands(body):
  """The commands of one shell block: continuations joined, no comments."""
  joined = re.sub(r"\\\n\s*", " ", body)
  for line in joined.splitlines():
    line = line.strip()
    if line and not line.startswith("#"):
      yield line


def _doc_commands():
  """Every command of every fenced shell block of the docs, in order.

  A command that two docs show alike (same words, same variables and
  servers before it: README's standalone-client block is docs/REMOTE.md's
  walkthrough) is one case, its `doc` naming every place.
  """
  paths = []
  for pattern in _DOC_GLOBS:
    paths += sorted(conftest.REPO_ROOT.glob(pattern))
  commands, first = [], {}
  for path in paths:
    text = path.read_text()
    name = path.relative_to(conftest.REPO_ROOT).as_posix()
    for match in _FENCE_RE.finditer(text):
      if match.group(1) not in _SHELL_LANGS:
        continue
      where = f"{name}:{text[:match.start()].count(chr(10)) + 1}"
      prelude, servers = [], []
      for line in _block_commands(match.group(2)):
        if _ASSIGN_RE.match(line):
          prelude.append(line)
          continue
        command = _Command(where, line, tuple(prelude), tuple(servers))
        if command.is_server:
          servers.append(line)
        key = _same_run_key(command)
        if key in first:  # Already a case: this place joins its `doc`.
          index = first[key]
          commands[index] = dataclasses.replace(
              commands[index], doc=f"{commands[index].doc}, {where}")
          continue
        first[key] = len(commands)
        commands.append(command)
  return _fold_servers(commands)


def _fold_servers(commands):
  """Drops a server's own case when a later command of its block runs it.

  That command's case starts the server the same way and, once the command
  has passed, stops it and checks what the server's case checked (exit 0
  on SIGTERM, short lines): one start of each server, not one per case.
  """
  started = set()
  for command in commands:
    if command.is_server or command.skip_reason:
      continue
    for index, line in enumerate(command.servers):
      started.add(_same_run_key(_Command(
          command.doc, line, command.prelude, command.servers[:index])))
  return [c for c in commands
          if not (c.is_server and _same_run_key(c) in started)]


def _same_run_key(command):
  """What a run depends on; spacing between words does not count."""
  words = lambda text: " ".join(text.split())
  return (words(command.text), tuple(map(words, command.prelude)),
          tuple(map(words, command.servers)))


_COMMANDS = _doc_commands()


def _rewrite(text, tmp, port_map):
  for pattern, replacement, _ in _REWRITES:
    text = re.sub(pattern, replacement.format(tmp=tmp), text)
  return _PORT_RE.sub(
      lambda m: "127.0.0.1:" + str(port_map.setdefault(
          m.group(1), ports.pick_free_port())), text)


def _env(tmp):
  bin_dir = os.path.dirname(sys.executable)  # This venv's, as activated.
  env = conftest.child_env(extra={
      "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
      "VIRTUAL_ENV": os.path.dirname(bin_dir), "TMPDIR": tmp})
  # A reader's shell has none: harness._tf sets it in this test process
  # once any test imported it, which hid TensorFlow's C++ lines by order.
  env.pop("TF_CPP_MIN_LOG_LEVEL", None)
  return env


def _case_name(index, command):
  words = re.sub(r"[^A-Za-z0-9]+", "_", command.text)[:60].strip("_")
  return f"{index:02d}_{words}"


def _params(slow):
  """The cases: every command a test can run here (the others are listed
  by `test_commands_not_run_each_match_a_reason`, not skipped: no setting
  of this suite would run them)."""
  return [(_case_name(i, c), c) for i, c in enumerate(_COMMANDS)
          if c.slow == slow and not c.skip_reason]


class _CommandTestCase(parameterized.TestCase):
  """Runs one documented command (`_check`)."""

  def _shell(self, command, tmp, port_map):
    lines = [_rewrite(line, tmp, port_map) for line in command.prelude]
    last = _rewrite(command.text, tmp, port_map)
    if command.is_server:  # The server itself gets the stop signal.
      last = "exec " + last
    return "; ".join(lines + [last])

  def _start(self, command, tmp, port_map, env, name):
    server = _support.ChildProcess(
        [self._shell(command, tmp, port_map)], name, env=env,
        program=["bash", "-c"])
    self.addCleanup(server.kill_group)
    self.assertTrue(server.wait_for_text("listening on", _SERVER_START_SECS),
                    f"{command.doc}: {command.text}\n{server.describe()}")
    return server

  def _check(self, command):
    # A short folder (/tmp/hdXXXXXXXX), near the docs' /tmp/NAME: the long
    # per-test folders of absl would push paths past the 160 scanned below.
    tmp = tempfile.mkdtemp(prefix="hd")
    self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
    env, port_map = _env(tmp), {}
    servers = [self._start(_Command(command.doc, line, command.prelude, ()),
                           tmp, port_map, env, f"server for {command.doc}")
               for line in command.servers]
    if command.is_server:
      server = self._start(command, tmp, port_map, env, command.doc)
      code, _ = server.stop(signal.SIGTERM, _SERVER_STOP_SECS)
      self.assertEqual(code, 0, server.describe())
      self._assert_short(server.output, command, server.describe())
      return
    shell = self._shell(command, tmp, port_map)
    # Never into this venv: a changed install line must change _REWRITES.
    self.assertNotRegex(shell, r"pip install|-m venv",
                        f"{command.doc}: the install rewrite no longer "
                        f"matches `{command.text}`")
    start = lambda name: self._run(shell, env, name)
    before = [first(self, start, command) for pattern, first
              in _docs_facts.BEFORE if re.search(pattern, command.text)]
    child = start(command.doc)
    code = child.wait(_SLOW_SECS if command.slow else _FAST_SECS)
    kept = child.search(_KEPT_PID_RE)
    if kept:  # --tensorboard_keep: the server it left running.
      self.addCleanup(_stop_kept, int(kept.group(1)))
    detail = (f"{command.doc}: {command.text}\nran: {shell}\n"
              f"{child.describe()}")
    self.assertEqual(code, 0, detail)
    self.assertNotIn("Traceback (most recent call last)", child.output,
                     detail)
    for earlier in before + [child]:
      self._assert_short(earlier.output, command, detail)
    for pattern, fact in _docs_facts.FACTS:  # More of the same run.
      if re.search(pattern, command.text):
        fact(self, child, tmp, env)
    for server in servers:  # The checks of the servers' folded cases.
      code, _ = server.stop(signal.SIGTERM, _SERVER_STOP_SECS)
      self.assertEqual(code, 0, server.describe())
      self._assert_short(server.output, command, server.describe())

  def _run(self, shell, env, name):
    child = _support.ChildProcess([shell], name, env=env,
                                  program=["bash", "-c"])
    self.addCleanup(child.kill_group)
    return child

  def _assert_short(self, output, command, detail):
    """Issue 24: no line a person reads is over 160 characters."""
    long = _support.long_lines(output)
    self.assertEqual(long, [], f"{command.doc}: {len(long)} line(s) over "
                     f"{_support.LINE_LIMIT} characters\n{detail}")


class DocsCommandsTest(_CommandTestCase):

  def test_commands_are_found(self):
    docs = {place.split(":")[0] for c in _COMMANDS
            for place in c.doc.split(", ")}
    self.assertIn("README.md", docs)
    self.assertIn("k8s/README.md", docs)
    self.assertIn("docs/REMOTE.md", docs)
    first = _COMMANDS[0]
    self.assertTrue(first.text.startswith("python3 -m venv .venv"), first)
    # Continuation lines are joined: no command ends with a backslash.
    self.assertFalse([c for c in _COMMANDS if c.text.endswith("\\")])

  def test_commands_not_run_each_match_a_reason(self):
    # Documented commands no test here can run (docker, a Kubernetes
    # cluster, PyPI, the suite itself) are no cases: each has its reason
    # in _SKIP, and each reason still matches a documented command.
    not_run = [c for c in _COMMANDS if c.skip_reason]
    self.assertNotEmpty(not_run)
    for pattern, reason in _SKIP:
      with self.subTest(reason=reason):
        self.assertTrue([c for c in not_run if re.search(pattern, c.text)],
                        f"no documented command matches {pattern!r}: drop "
                        "it from _SKIP")

  @parameterized.named_parameters(*_params(slow=False))
  def test_fast_command(self, command):
    self._check(command)


class FirstContactDocsTest(absltest.TestCase):
  """Issue 39: what a new user reads can be run as written, anywhere."""

  def test_readme_training_commands_each_have_their_own_model_dir(self):
    # Run one after another, two commands on one model_dir: the second
    # resumes at the first's last step and trains nothing.
    seen = {}
    for command in _COMMANDS:
      if not command.doc.startswith("README.md") or not command.slow:
        continue
      if "--dry_run" in command.text:
        continue
      for model_dir in re.findall(r"--model_dir=(\S+)", command.text):
        self.assertNotIn(
            model_dir, seen, f"{command.doc}: `{command.text}` trains in "
            f"{model_dir}, as `{seen.get(model_dir)}` does")
        seen[model_dir] = command.text
    self.assertGreaterEqual(len(seen), 5, seen)

  def test_first_command_reads_the_shipped_mnist(self):
    first = _COMMANDS[0].text
    self.assertIn("--input_fn=mnist_idx", first)
    self.assertNotIn("--data_dir", first)
    shipped = conftest.REPO_ROOT / "input_fns" / "data" / "mnist"
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
      self.assertTrue((shipped / name).is_file(), shipped / name)
    notice = " ".join((shipped / "README.md").read_text().split())
    self.assertIn("Creative Commons Attribution-Share Alike 3.0", notice)

  def test_ci_runs_the_readmes_test_command_as_written(self):
    # CI's first leg is the contributor's loop: the same command, the same
    # flags (-n 2 included), or its time is not the README's.
    readme = (conftest.REPO_ROOT / "README.md").read_text()
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    test_command = block.strip().splitlines()[1]
    self.assertIn("-m pytest", test_command)
    ci_lines = [line.strip() for line in
                (conftest.REPO_ROOT / ".ci" / "run").read_text().splitlines()]
    self.assertIn(f"run_pytest {test_command} || main_status=$?", ci_lines)

  def test_users_read_nothing_of_the_shared_folder(self):
    # ../shared is this project's development machine, not the user's.
    found = []
    for pattern in _DOC_GLOBS + ("harness/**/*.py", "input_fns/**/*.py",
                                 "model_fns/**/*.py"):
      for path in sorted(conftest.REPO_ROOT.glob(pattern)):
        for number, line in enumerate(path.read_text().splitlines(), 1):
          if re.search(r"\.\./shared|shared/data", line):
            found.append(f"{path.relative_to(conftest.REPO_ROOT)}:{number}:"
                         f" {line.strip()}")
    self.assertEqual(found, [])


@pytest.mark.slow  # On the class: absl's parameterized methods lose marks.
class SlowDocsCommandsTest(_CommandTestCase):

  @parameterized.named_parameters(*_params(slow=True))
  def test_slow_command(self, command):
    self._check(command)


def _stop_kept(pid):
  """SIGTERM to the kept TensorBoard's group (a child of this test's run)."""
  try:
    os.killpg(pid, signal.SIGTERM)
  except ProcessLookupError:
    return
  _support.poll_until(lambda: not _alive(pid), 30)


def _alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  return True


if __name__ == "__main__":
  absltest.main()
