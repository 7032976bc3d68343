"""Pods of the rendered manifests, run as processes in network namespaces.

Each pod of `python -m harness.k8s --workers=3 --evaluator` becomes one
process in its own network namespace: a veth pair to a test bridge, an
address in a private /24 that no route of this machine covers, and an
`/etc/netns/<ns>/hosts` that resolves the pods' DNS names the way the
headless Service would. Every process runs the container's rendered command
and args with its rendered environment plus what Kubernetes adds
(`JOB_COMPLETION_INDEX`, `HOSTNAME`), so the entrypoint builds TF_CONFIG and
the job trains over real interfaces to max_steps while the evaluator writes
metrics and an export. The namespaces have no default route and the bridge
has no address, so no packet can leave them.

The JobSet rendering (`--output=jobset`, 2 workers + evaluator) runs the same
way: each pod's environment is what the JobSet controller and the downward
API give it (its JobSet, replicatedJob, Job index and completion index; no
TF_CONFIG), so every pod derives its TF_CONFIG from its place, and the
hosts files resolve the JobSet's stable names `mnist-worker-0-<i>.mnist`.
The Kubeflow Trainer rendering (`--output=trainjob`) runs the pods of the
JobSet Trainer's controller builds from the runtime when the TrainJob
arrives (tests/k8s_trainer_admission.py, ported from Trainer v2.3.0).

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and `ip`; skipped otherwise.
"""

import glob
import ipaddress
import os
import pathlib
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys

from absl.testing import absltest
import pytest

from harness import k8s
from harness.cluster import jobset_env
from tests import _processes
from tests import _support
from tests import k8s_trainer_admission

_REPO = pathlib.Path(__file__).resolve().parent.parent
_RUN_SECS = 420  # 3 workers + evaluator on 2 cores, TF start-up included.
_CMD_SECS = 20
_PORT = 2222
_MAX_STEPS = 20


def _ip(*args, check=True):
  proc = subprocess.run(["ip", *args], capture_output=True, text=True,
                        timeout=_CMD_SECS, check=False)
  if check and proc.returncode:
    raise RuntimeError(f"ip {' '.join(args)} failed ({proc.returncode}): "
                       f"{proc.stderr.strip()}")
  return proc


def _unavailable_reason(tag):
  """Why namespaces cannot be used here, or None."""
  if os.geteuid() != 0:
    return ("needs root to create network namespaces (ip netns add): run "
            "the suite as root")
  if shutil.which("ip") is None:
    return "the `ip` tool is not installed: install iproute2"
  probe = f"hk-probe-{tag}"
  proc = _ip("netns", "add", probe, check=False)
  if proc.returncode:
    return (f"cannot create a network namespace (no CAP_NET_ADMIN / "
            f"CAP_SYS_ADMIN?): {proc.stderr.strip()}; run the suite as root "
            "with those capabilities (a privileged container)")
  _ip("netns", "del", probe, check=False)
  return None


def _free_subnet():
  """A 10.x.y.0/24 that overlaps no address or route of this machine."""
  used = []
  for args in (("-4", "route", "show", "table", "all"), ("-4", "addr")):
    for token in re.findall(r"\b(\d+\.\d+\.\d+\.\d+(?:/\d+)?)",
                            _ip(*args).stdout):
      used.append(ipaddress.ip_network(token, strict=False))
  rng = random.Random()
  for _ in range(200):
    net = ipaddress.ip_network(
        f"10.{rng.randint(200, 250)}.{rng.randint(0, 255)}.0/24")
    if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
      return net
  raise RuntimeError(f"no free 10.x.y.0/24 among the routes {used}")


def _pods(objects):
  """(hostname, container, env) of each pod of the rendered Jobs."""
  pods = []
  for obj in objects:
    if obj["kind"] != "Job":
      continue
    container = obj["spec"]["template"]["spec"]["containers"][0]
    for i in range(obj["spec"]["completions"]):
      env = {v["name"]: v["value"] for v in container.get("env", ())}
      env[k8s.JOB_INDEX_ENV] = str(i)
      pods.append((f"{obj['metadata']['name']}-{i}", container, env,
                   obj["spec"]["template"]["spec"].get("subdomain")))
  return pods


def _jobset_pods(objects):
  """(hostname, container, env) of each pod of the rendered JobSet.

  The environment is the container's, its downward-API variables filled
  from the labels and annotations the JobSet and Job controllers set.
  """
  (jobset,) = [o for o in objects if o["kind"] == "JobSet"]
  name = jobset["metadata"]["name"]
  pods = []
  for rj in jobset["spec"]["replicatedJobs"]:
    container = rj["template"]["spec"]["template"]["spec"]["containers"][0]
    for i in range(rj["template"]["spec"]["completions"]):
      fields = {
          f"metadata.labels['{jobset_env.JOBSET_NAME_LABEL}']": name,
          f"metadata.labels['{jobset_env.REPLICATED_JOB_LABEL}']": rj["name"],
          f"metadata.labels['{jobset_env.JOB_INDEX_LABEL}']": "0",
          f"metadata.annotations['{jobset_env.POD_INDEX_ANNOTATION}']":
              str(i),
          "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']": "0"}
      env = {v["name"]: v["value"] if "value" in v else fields[
          v["valueFrom"]["fieldRef"]["fieldPath"]] for v in container["env"]}
      env[k8s.JOB_INDEX_ENV] = str(i)  # Kubernetes adds it too.
      pods.append((jobset_env.hostname(name, rj["name"], i), container, env))
  return pods


def _rmdir_if_empty(path):
  try:
    os.rmdir(path)
  except OSError:
    pass


def _tail(path, lines=40):
  try:
    return "\n".join(pathlib.Path(path).read_text(
        errors="replace").splitlines()[-lines:])
  except OSError as e:
    return f"<no log: {e}>"


@pytest.mark.slow
class PodsInNetnsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.tag = f"{os.getpid() % 1000:03d}{secrets.token_hex(2)}"
    reason = _unavailable_reason(self.tag)
    if reason:
      self.skipTest(reason)
    self.tmp = pathlib.Path(self.create_tempdir().full_path)
    self.procs = []

  # ---------------------------------------------------------- network --

  def _make_network(self, hostnames):
    """One namespace per hostname on a fresh bridge; returns {host: ip}."""
    subnet = _free_subnet()
    if not os.path.isdir("/etc/netns"):  # Leave /etc as it was found.
      self.addCleanup(_rmdir_if_empty, "/etc/netns")
    bridge = f"hkb{self.tag}"
    self.addCleanup(_ip, "link", "del", bridge, check=False)
    _ip("link", "add", bridge, "type", "bridge")
    _ip("link", "set", bridge, "up")
    addresses = {}
    for i, host in enumerate(hostnames):
      ns, veth, peer = (f"hk-{self.tag}-{i}", f"hkv{self.tag}{i}",
                        f"hkp{self.tag}{i}")
      etc_dir = pathlib.Path("/etc/netns") / ns
      self.addCleanup(shutil.rmtree, etc_dir, ignore_errors=True)
      self.addCleanup(_ip, "netns", "del", ns, check=False)
      self.addCleanup(_ip, "link", "del", veth, check=False)
      _ip("netns", "add", ns)
      _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
      _ip("link", "set", peer, "netns", ns)
      _ip("link", "set", veth, "master", bridge, "up")
      ip = str(subnet.network_address + 10 + i)
      _ip("-n", ns, "link", "set", peer, "name", "eth0")
      _ip("-n", ns, "addr", "add", f"{ip}/{subnet.prefixlen}", "dev", "eth0")
      _ip("-n", ns, "link", "set", "eth0", "up")
      _ip("-n", ns, "link", "set", "lo", "up")
      addresses[host] = (ns, ip)
      etc_dir.mkdir(parents=True, exist_ok=True)
    return addresses

  def _write_hosts(self, addresses, subdomain):
    """Per-namespace /etc/hosts: what the headless Service's DNS answers."""
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost"]
    for host, (_, ip) in addresses.items():
      lines.append(f"{ip} {host}.{subdomain}.default.svc.cluster.local "
                   f"{host}.{subdomain} {host}")
    for ns, _ in addresses.values():
      (pathlib.Path("/etc/netns") / ns / "hosts").write_text(
          "\n".join(lines) + "\n")

  def _check_connectivity(self, addresses, subdomain):
    """Namespace 1 reaches namespace 0 by name over the bridge, TCP."""
    (ns0, ip0), (ns1, _) = list(addresses.values())[:2]
    name0 = f"{next(iter(addresses))}.{subdomain}"
    server = _processes.popen(
        ["ip", "netns", "exec", ns0, sys.executable, "-c",
         "import socket; s = socket.create_server(('0.0.0.0', 9)); "
         "s.settimeout(90); c, _ = s.accept(); c.sendall(b'ok')"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
      client = subprocess.run(
          ["ip", "netns", "exec", ns1, sys.executable, "-c",
           "import socket, sys, time\n"
           # Until the server (started just now) listens; bounded.
           "deadline = time.monotonic() + 60\n"
           "while time.monotonic() < deadline:\n"
           "  try:\n"
           f"    c = socket.create_connection(('{name0}', 9), 2)\n"
           f"    print(socket.gethostbyname('{name0}'), "
           "c.recv(2).decode()); sys.exit(0)\n"
           "  except OSError as e:\n"
           "    err = e; time.sleep(0.2)\n"
           "sys.exit(f'cannot connect: {err}')"],
          capture_output=True, text=True, timeout=120, check=False)
    finally:
      server.kill()
      server.wait(timeout=_CMD_SECS)
    self.assertEqual(client.stdout.split(), [ip0, "ok"],
                     f"the bridge does not carry traffic between namespaces "
                     f"(br_netfilter/iptables?): {client.stderr}")

  # ------------------------------------------------------------- pods --

  def _start(self, ns, hostname, container, env):
    argv = list(container["command"]) + list(container["args"])
    full_env = {
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin",
        "HOME": str(self.tmp), "HOSTNAME": hostname, "LANG": "C.UTF-8",
        "PYTHONPATH": str(_REPO), "TF_CPP_MIN_LOG_LEVEL": "2",
        "CUDA_VISIBLE_DEVICES": "-1", **env}
    log_path = self.tmp / f"{hostname}.log"
    with open(log_path, "wb") as log:
      proc = _processes.popen(["ip", "netns", "exec", ns, *argv],
                              env=full_env, cwd=_REPO, stdout=log,
                              stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL,
                              start_new_session=True)
    self.procs.append((hostname, proc, log_path, argv))
    self.addCleanup(self._kill, proc)

  @staticmethod
  def _kill(proc):
    if proc.poll() is None:
      try:
        os.killpg(proc.pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
    try:
      proc.wait(timeout=_CMD_SECS)
    except subprocess.TimeoutExpired:
      pass

  def _report(self):
    return "\n".join(
        f"--- {host}: exit {proc.poll()} ---\n$ {' '.join(argv)}\n"
        f"{_tail(log)}" for host, proc, log, argv in self.procs)

  def _wait_all(self):
    def ended():  # "failed" at the first failure, "done" once all exit 0.
      codes = [proc.poll() for _, proc, _, _ in self.procs]
      if any(code not in (None, 0) for code in codes):
        return "failed"
      return "done" if all(code == 0 for code in codes) else None

    outcome = _support.poll_until(ended, _RUN_SECS, interval_secs=0.5)
    if outcome == "failed":
      self.fail(f"a pod failed:\n{self._report()}")
    if outcome is None:
      self.fail(f"pods still running after {_RUN_SECS}s:\n{self._report()}")

  def test_three_workers_and_evaluator_train_over_real_interfaces(self):
    model_dir = self.tmp / "model"
    config = k8s.K8sConfig(
        name="mnist", image="unused", output="jobs", workers=3, evaluator=True,
        model_dir=str(model_dir), main_args=(
            "--model_fn=linear", "--input_fn=constant", "--strategy=collective",
            f"--max_steps={_MAX_STEPS}", "--eval_steps=2", "--batch_size=12",
            "--save_checkpoints_steps=10", "--exporters=latest",
            "--throttle_secs=0"))
    pods = _pods(k8s.render(config))
    self.assertEqual([p[0] for p in pods],
                     ["mnist-0", "mnist-1", "mnist-2", "mnist-evaluator-0"])
    addresses = self._make_network([p[0] for p in pods])
    self._write_hosts(addresses, config.service)
    self._check_connectivity(addresses, config.service)
    for hostname, container, env, _ in pods:
      self._start(addresses[hostname][0], hostname, container, env)
    self._wait_all()
    self._check_finished(model_dir, "mnist-evaluator-0",
                         ("mnist-0", "mnist-1", "mnist-2"))

  def _check_finished(self, model_dir, evaluator, trainers):
    """The final checkpoint, evaluation and export; traffic over veths."""
    checkpoint = (model_dir / "checkpoint").read_text()
    self.assertIn(f'model_checkpoint_path: "model.ckpt-{_MAX_STEPS}"',
                  checkpoint)
    self.assertNotEmpty(glob.glob(str(model_dir / "eval*" /
                                      "events.out.tfevents.*")),
                        self._report())
    self.assertNotEmpty(glob.glob(str(model_dir / "export" / "**" /
                                      "saved_model.pb"), recursive=True),
                        self._report())
    evaluator_log = _tail(self.tmp / f"{evaluator}.log", 200)
    self.assertRegex(evaluator_log, rf"global_step {_MAX_STEPS}\b",
                     self._report())  # Its last evaluation, with metrics:
    self.assertRegex(evaluator_log, r"\bloss\b", self._report())
    for i, hostname in enumerate(trainers):
      # The workers talked over their veths (gRPC + collectives), not lo.
      sent = int(pathlib.Path(f"/sys/class/net/hkv{self.tag}{i}/statistics/"
                              "rx_bytes").read_text())
      self.assertGreater(sent, 10_000, f"{hostname}: {sent} bytes")

  def _run_jobset(self, config, jobset_objects):
    pods = _jobset_pods(jobset_objects)
    self.assertEqual([p[0] for p in pods], [
        "mnist-worker-0-0", "mnist-worker-0-1", "mnist-evaluator-0-0"])
    for _, _, env in pods:
      self.assertNotIn("TF_CONFIG", env)  # Each pod derives its own.
      self.assertIn(jobset_env.JOBSET_NAME_ENV, env)
    addresses = self._make_network([p[0] for p in pods])
    self._write_hosts(addresses, config.service)
    self._check_connectivity(addresses, config.service)
    for hostname, container, env in pods:
      self._start(addresses[hostname][0], hostname, container, env)
    self._wait_all()
    self._check_finished(pathlib.Path(config.model_dir_path),
                         "mnist-evaluator-0-0",
                         ("mnist-worker-0-0", "mnist-worker-0-1"))

  def test_kueue_suspend_and_resume_loses_no_step(self):
    """Kueue preempts by suspending the JobSet: every pod is deleted
    (SIGTERM), later every pod is created again from the same template."""
    max_steps = 3000
    config = k8s.K8sConfig(
        name="mnist", image="unused", workers=2, queue_name="team-a",
        model_dir=str(self.tmp / "model"), main_args=(
            "--model_fn=linear", "--input_fn=constant",
            "--strategy=collective", f"--max_steps={max_steps}",
            "--batch_size=12", "--save_checkpoints_steps=100000",
            "--log_step_count_steps=50"))
    (jobset,) = [o for o in k8s.render(config) if o["kind"] == "JobSet"]
    self.assertIs(jobset["spec"]["suspend"], True)  # Until Kueue admits it.
    pods = _jobset_pods([jobset])
    addresses = self._make_network([p[0] for p in pods])
    self._write_hosts(addresses, config.service)
    for hostname, container, env in pods:
      self._start(addresses[hostname][0], hostname, container, env)
    step = re.compile(rf"step (\d+)/{max_steps}")
    _support.wait_for(
        lambda: any(int(m) >= 100 for _, _, log, _ in self.procs
                    for m in step.findall(_tail(log, 20))),
        _RUN_SECS, "a worker to log step 100", details=self._report)
    for _, proc, _, _ in self.procs:  # Suspended: every pod deleted.
      os.killpg(proc.pid, signal.SIGTERM)
    codes = [proc.wait(timeout=_RUN_SECS) for _, proc, _, _ in self.procs]
    self.assertEqual(codes, [143, 143], self._report())
    checkpoint = (self.tmp / "model" / "checkpoint").read_text()
    stop_step = int(re.search(r'model_checkpoint_path: "model\.ckpt-(\d+)"',
                              checkpoint).group(1))
    logged = [int(m) for _, _, log, _ in self.procs
              for m in step.findall(_tail(log, 400))]
    self.assertGreaterEqual(stop_step, max(logged), self._report())
    self.assertLess(stop_step, max_steps)
    for _, _, log, _ in self.procs:
      log.rename(log.with_suffix(".suspended"))
    self.procs = []
    for hostname, container, env in pods:  # Resumed: every pod again.
      self._start(addresses[hostname][0], hostname, container, env)
    self._wait_all()
    for hostname, _, log, _ in self.procs:
      self.assertIn(f"starting at step {stop_step}", _tail(log, 400),
                    f"{hostname} lost steps after the stop checkpoint\n"
                    + self._report())
    checkpoint = (self.tmp / "model" / "checkpoint").read_text()
    self.assertIn(f'model_checkpoint_path: "model.ckpt-{max_steps}"',
                  checkpoint)

  def _config(self, output):
    return k8s.K8sConfig(
        name="mnist", image="unused", output=output, workers=2,
        evaluator=True, model_dir=str(self.tmp / "model"), main_args=(
            "--model_fn=linear", "--input_fn=constant",
            "--strategy=collective", f"--max_steps={_MAX_STEPS}",
            "--eval_steps=2", "--batch_size=12",
            "--save_checkpoints_steps=10", "--exporters=latest",
            "--throttle_secs=0"))

  def test_jobset_two_workers_and_evaluator_derive_tf_config_in_each_pod(
      self):
    config = self._config("jobset")
    self._run_jobset(config, k8s.render(config))

  def test_trainjob_pods_trainer_builds_train_over_real_interfaces(self):
    config = self._config("trainjob")
    runtime, trainjob, _ = k8s.render(config)
    built = k8s_trainer_admission.trainer_jobset(runtime, trainjob)
    self._run_jobset(config, [built])


if __name__ == "__main__":
  absltest.main()
