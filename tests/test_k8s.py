"""The k8s manifests agree with the code that runs in their pods.

Every shape is rendered, every object is validated offline against the
Kubernetes JSON schemas (kubernetes-validate), and for every pod (each role
and index) the test builds the environment Kubernetes would give it, computes
its TF_CONFIG the way its entrypoint does, and feeds that to harness.cluster.tf_config
and the container's args to harness.cli.flags.parse. Renaming a flag or changing
the TF_CONFIG layout without updating harness/k8s/ fails here.
"""

import io
import json
import os
import pathlib
import re
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized
import kubernetes_validate
import yaml

from harness import cluster
from harness import errors
from harness import k8s
from harness.cli import flags
from tests import _support

_REPO = pathlib.Path(__file__).resolve().parent.parent
_K8S_VERSION = "1.33"  # successPolicy and backoffLimitPerIndex are GA here.
_IMAGE = "registry.example.com/harness:0.1"
_LINEAR = ("--model_fn=linear", "--input_fn=constant", "--max_steps=20",
           "--eval_steps=2")

# name -> (K8sConfig kwargs, strategy kind for cluster.validate or None).
# These are today's Indexed Jobs (`output="jobs"`), standalone servers and
# TFJob; the JobSet and Kubeflow Trainer kinds are in test_k8s_jobset.py.
_SHAPES = {
    "one_worker": (dict(output="jobs", workers=1, num_gpus_per_worker=2,
                        model_dir="gs://bucket/one",
                        main_args=_LINEAR + ("--strategy=mirrored",)),
                   "mirrored"),
    "three_workers_evaluator": (
        dict(output="jobs", workers=3, evaluator=True, pvc="harness-model",
             tensorboard=True,
             main_args=_LINEAR + ("--strategy=collective", "--batch_size=12",
                                  "--exporters=latest", "--throttle_secs=0")),
        "collective"),
    "chief_two_workers_two_ps": (
        dict(output="jobs", workers=2, chief=True, ps=2, pvc="harness-model",
             main_args=_LINEAR + ("--strategy=parameter_server",)),
        "parameter_server"),
    "no_strategy_chief": (dict(output="jobs", workers=1, chief=True,
                               evaluator=True,
                               model_dir="gs://bucket/m", main_args=_LINEAR),
                          None),
    "standalone": (dict(workers=2, ps=1, output="servers",
                        num_gpus_per_worker=1, num_cpu_devices=2,
                        allow_cidr=("10.0.0.0/8",)),
                   "parameter_server"),  # What the remote client runs.
    "tfjob": (dict(workers=2, chief=True, ps=1, evaluator=True, output="tfjob",
                   namespace="team-a", pvc="harness-model",
                   main_args=_LINEAR + ("--strategy=parameter_server",)),
              "parameter_server"),
    "tfjob_gpus": (dict(workers=1, chief=True, ps=1, output="tfjob",
                        num_gpus_per_worker=1, model_dir="gs://bucket/g",
                        main_args=_LINEAR + ("--strategy=parameter_server",)),
                   "parameter_server"),
}


def _config(shape, **overrides):
  kwargs = dict(_SHAPES[shape][0], name="mnist", image=_IMAGE)
  kwargs.update(overrides)
  return k8s.K8sConfig(**kwargs)


def _validate(obj):
  """Schema-checks `obj` offline; a TFJob's pod templates as PodTemplates."""
  if obj["kind"] == "TFJob":  # A CRD: no schema ships with Kubernetes.
    for replica, spec in obj["spec"]["tfReplicaSpecs"].items():
      kubernetes_validate.validate(
          {"apiVersion": "v1", "kind": "PodTemplate",
           "metadata": {"name": f"{obj['metadata']['name']}-{replica}"},
           "template": spec["template"]}, _K8S_VERSION, strict=True)
    return
  kubernetes_validate.validate(obj, _K8S_VERSION, strict=True)


def _env(container, pod_labels):
  """The container's environment as Kubernetes resolves it for one pod."""
  env = {}
  for var in container.get("env", ()):
    if "value" in var:
      env[var["name"]] = var["value"]
    else:
      path = var["valueFrom"]["fieldRef"]["fieldPath"]
      label = path[len("metadata.labels['"):-2]
      assert path.startswith("metadata.labels['"), path
      env[var["name"]] = pod_labels[label]
  return env


def _tfjob_tf_config(obj, replica_type, index):
  """TF_CONFIG as the Kubeflow training operator builds it for a pod."""
  name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
  cluster_spec = {}
  for rtype, spec in obj["spec"]["tfReplicaSpecs"].items():
    if rtype == "Evaluator":
      continue
    port = next(p["containerPort"] for p in spec["template"]["spec"][
        "containers"][0]["ports"] if p["name"] == "tfjob-port")
    cluster_spec[rtype.lower()] = [
        f"{name}-{rtype.lower()}-{i}.{namespace}.svc:{port}"
        for i in range(spec["replicas"])]
  return json.dumps({"cluster": cluster_spec, "environment": "cloud",
                     "task": {"type": replica_type.lower(), "index": index}})


def _pods(objects):
  """Every pod the objects create: dicts with its identity and TF_CONFIG."""
  pods = []
  for obj in objects:
    kind, meta = obj["kind"], obj["metadata"]
    if kind == "Job":
      template, count = obj["spec"]["template"], obj["spec"]["completions"]
      for i in range(count):
        env = dict(_env(template["spec"]["containers"][0], {}),
                   **{k8s.JOB_INDEX_ENV: str(i)})
        pods.append(dict(hostname=f"{meta['name']}-{i}", template=template,
                         env=env, tf_config=k8s.tf_config_from_environ(env)))
    elif kind == "StatefulSet":
      template = obj["spec"]["template"]
      for i in range(obj["spec"]["replicas"]):
        labels = dict(template["metadata"]["labels"],
                      **{"apps.kubernetes.io/pod-index": str(i)})
        env = _env(template["spec"]["containers"][0], labels)
        pods.append(dict(hostname=f"{meta['name']}-{i}", template=template,
                         env=env, tf_config=k8s.tf_config_from_environ(env)))
    elif kind == "TFJob":
      for rtype, spec in obj["spec"]["tfReplicaSpecs"].items():
        for i in range(spec["replicas"]):
          pods.append(dict(
              hostname=f"{meta['name']}-{rtype.lower()}-{i}",
              template=spec["template"], env={},
              tf_config=_tfjob_tf_config(obj, rtype, i)))
  return pods


def _argv(container):
  return list(container.get("command", ())) + list(container["args"])


def _after(argv, module):
  """The flags after `python -m <module>` in a container's argv."""
  start = argv.index(module) + 1
  assert argv[start - 3:start] == ["python", "-m", module], argv
  return argv[start:]


def _parse_server_flags(arg_lists):
  """Parses harness.server flag lists in its own process (global flags)."""
  code = (
      "import json, sys\n"
      "from absl import flags\n"
      "from harness.server import cli\n"
      "holders = cli._define_flags()\n"
      "out = []\n"
      "for args in json.loads(sys.argv[1]):\n"
      "  flags.FLAGS.unparse_flags()\n"
      "  flags.FLAGS(['server'] + args)\n"
      "  out.append({n: getattr(holders, n).value for n in vars(holders)})\n"
      "print(json.dumps(out))\n")
  proc = subprocess.run([sys.executable, "-c", code, json.dumps(arg_lists)],
                        capture_output=True, text=True, timeout=60,
                        cwd=_REPO, check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return json.loads(proc.stdout)


class RenderTest(parameterized.TestCase):

  @parameterized.named_parameters((s, s) for s in _SHAPES)
  def test_every_object_validates_offline(self, shape):
    objects = k8s.render(_config(shape))
    self.assertNotEmpty(objects)
    for obj in objects:
      with self.subTest(obj=f"{obj['kind']}/{obj['metadata']['name']}"):
        _validate(obj)

  def test_validation_catches_a_bad_field(self):
    job = next(o for o in k8s.render(_config("one_worker"))
               if o["kind"] == "Job")
    job["spec"]["completionMode"] = 3
    with self.assertRaises(kubernetes_validate.ValidationError):
      _validate(job)

  @parameterized.named_parameters((s, s) for s in _SHAPES)
  def test_yaml_round_trips(self, shape):
    objects = k8s.render(_config(shape))
    text = k8s.to_yaml(objects, header="a\nb")
    self.assertTrue(text.startswith("# a\n# b\n---\n"))
    self.assertNotIn("&id", text)  # Plain YAML, no anchors/aliases.
    self.assertEqual(list(yaml.safe_load_all(text)), objects)

  @parameterized.named_parameters((s, s) for s in _SHAPES)
  def test_every_pod_gets_a_valid_tf_config_and_flags(self, shape):
    config = _config(shape)
    kind = _SHAPES[shape][1]
    pods = _pods(k8s.render(config))
    tasks = set()
    server_args = []
    for pod in pods:
      with self.subTest(pod=pod["hostname"]):
        info = cluster.parse_tf_config(pod["tf_config"])
        cluster.validate(info, has_strategy=kind is not None,
                         strategy_kind=kind)
        tasks.add((info.task_type, info.task_id))
        container = pod["template"]["spec"]["containers"][0]
        argv = _argv(container)
        if "harness.server" in argv:
          server_args.append(_after(argv, "harness.server"))
          continue
        environ = dict(pod["env"], TF_CONFIG=pod["tf_config"])
        gpus = container["resources"]["limits"].get("nvidia.com/gpu", 0)
        job = flags.parse(_after(argv, "harness.main"), environ=environ,
                          gpu_count=lambda n=gpus: n).job  # The pod's.
        self.assertEqual(job.model_dir, config.model_dir_path)
        self.assertEqual(job.num_gpus_per_worker, config.num_gpus_per_worker)
        self.assertEqual(job.max_steps, 20)
    expected = set(k8s.training_tasks(config))
    if config.evaluator:
      expected.add(("evaluator", 0))
    self.assertEqual(tasks, expected)  # Each task runs in exactly one pod.
    self.assertLen(pods, len(expected))
    if server_args:
      parsed = _parse_server_flags(server_args)
      self.assertEqual([p["num_cpu_devices"] for p in parsed],
                       [config.num_cpu_devices] * len(parsed))

  @parameterized.named_parameters(
      (s, s) for s in _SHAPES if not _SHAPES[s][0].get("output") == "tfjob")
  def test_each_task_address_is_its_pods_dns_name(self, shape):
    objects = k8s.render(_config(shape))
    services = {o["metadata"]["name"]: o for o in objects
                if o["kind"] == "Service" and o["spec"].get("clusterIP")
                == "None"}
    for pod in _pods(objects):
      info = cluster.parse_tf_config(pod["tf_config"])
      if info.task_type == "evaluator":
        continue
      spec = pod["template"]["spec"]
      subdomain = spec.get("subdomain") or next(
          o["spec"]["serviceName"] for o in objects
          if o["kind"] == "StatefulSet")
      host, port = info.task_address.rsplit(":", 1)
      self.assertEqual(host, f"{pod['hostname']}.{subdomain}")
      service = services[subdomain]  # The headless Service making the name.
      labels = pod["template"]["metadata"]["labels"]
      self.assertLessEqual(service["spec"]["selector"].items(),
                           labels.items())
      self.assertIn(int(port), [p["containerPort"] for p in spec[
          "containers"][0]["ports"]])

  @parameterized.named_parameters((s, s) for s in _SHAPES)
  def test_network_policy_admits_only_the_jobs_pods_to_the_tf_port(
      self, shape):
    config = _config(shape)
    objects = k8s.render(config)
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    selected = policy["spec"]["podSelector"]["matchLabels"].items()
    listening = [p for p in _pods(objects) if "ports" in p["template"][
        "spec"]["containers"][0]]
    self.assertNotEmpty(listening)
    for pod in listening:
      self.assertLessEqual(selected, pod["template"]["metadata"][
          "labels"].items())
    (rule,) = policy["spec"]["ingress"]
    self.assertEqual(rule["ports"], [{"protocol": "TCP",
                                      "port": config.port}])
    pod_peers = [p["podSelector"]["matchLabels"] for p in rule["from"]
                 if "podSelector" in p]
    self.assertEqual(pod_peers, [{"app.kubernetes.io/name": "harness",
                                  "app.kubernetes.io/instance": "mnist"}])
    cidrs = [p["ipBlock"]["cidr"] for p in rule["from"] if "ipBlock" in p]
    self.assertEqual(cidrs, list(config.allow_cidr))

  def test_gpu_limits_follow_num_gpus_per_worker(self):
    objects = k8s.render(_config("standalone"))
    limits = {o["metadata"]["name"]: o["spec"]["template"]["spec"][
        "containers"][0]["resources"]["limits"] for o in objects
              if o["kind"] == "StatefulSet"}
    self.assertEqual(limits["mnist-worker"]["nvidia.com/gpu"], 1)
    self.assertNotIn("nvidia.com/gpu", limits["mnist-ps"])
    job = next(o for o in k8s.render(_config("one_worker"))
               if o["kind"] == "Job")
    self.assertEqual(job["spec"]["template"]["spec"]["containers"][0][
        "resources"]["limits"]["nvidia.com/gpu"], 2)

  def test_ps_are_stopped_by_the_success_policy(self):
    config = _config("chief_two_workers_two_ps")
    job = next(o for o in k8s.render(config) if o["kind"] == "Job")
    self.assertEqual(job["spec"]["successPolicy"],
                     {"rules": [{"succeededIndexes": "0-2"}]})
    tasks = k8s.training_tasks(config)
    self.assertEqual([t for t, _ in tasks[3:]], ["ps", "ps"])
    self.assertNotIn("successPolicy", next(
        o for o in k8s.render(_config("three_workers_evaluator"))
        if o["kind"] == "Job")["spec"])

  def test_failed_pods_are_replaced_and_bad_flags_fail_the_job(self):
    for job in (o for o in k8s.render(_config("three_workers_evaluator"))
                if o["kind"] == "Job"):
      spec = job["spec"]
      self.assertEqual(spec["template"]["spec"]["restartPolicy"], "Never")
      self.assertEqual(spec["backoffLimitPerIndex"], 3)
      self.assertEqual(spec["podReplacementPolicy"], "Failed")
      actions = {r["action"]: r for r in spec["podFailurePolicy"]["rules"]}
      self.assertEqual(actions["FailJob"]["onExitCodes"]["values"],
                       [k8s.CONFIG_ERROR_EXIT_CODE])
      self.assertEqual(actions["Ignore"]["onPodConditions"][0]["type"],
                       "DisruptionTarget")

  def test_static_files_validate(self):
    for obj in yaml.safe_load_all((_REPO / "k8s" / "pvc.yaml").read_text()):
      _validate(obj)
    self.assertIn("FROM python:3.11-slim",
                  (_REPO / "k8s" / "Dockerfile").read_text())


class EntrypointTest(absltest.TestCase):

  def _pod_env(self, index):
    job = next(o for o in k8s.render(_config("chief_two_workers_two_ps"))
               if o["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    self.assertEqual(tuple(container["command"]), k8s.ENTRYPOINT)
    env = dict(os.environ, **_env(container, {}))
    env[k8s.JOB_INDEX_ENV] = str(index)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    env["PYTHONPATH"] = str(_REPO)
    return env

  def test_shell_entrypoint_exports_the_tf_config(self):
    env = self._pod_env(4)
    proc = subprocess.run(
        list(k8s.ENTRYPOINT) + ["python", "-c", "import os; print(os.environ"
                                "['TF_CONFIG'])"],
        env=env, capture_output=True, text=True, timeout=60, check=False)
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertEqual(json.loads(proc.stdout),
                     json.loads(k8s.tf_config_from_environ(env)))
    self.assertEqual(json.loads(proc.stdout)["task"],
                     {"type": "ps", "index": 1})

  def test_shell_entrypoint_fails_with_status_2_outside_the_cluster(self):
    env = self._pod_env(5)  # The Job has indexes 0..4.
    proc = subprocess.run(list(k8s.ENTRYPOINT) + ["true"], env=env,
                          capture_output=True, text=True, timeout=60,
                          check=False)
    self.assertEqual(proc.returncode, 2)
    self.assertIn("JOB_COMPLETION_INDEX=5 is outside", proc.stderr)

  def test_statefulset_index_falls_back_to_the_hostname(self):
    env = {k8s.CLUSTER_ENV: json.dumps({"worker": ["a:1", "b:1"]}),
           k8s.TASK_TYPE_ENV: "worker", k8s.TASK_INDEX_ENV: "",
           "HOSTNAME": "mnist-worker-1"}
    self.assertEqual(json.loads(k8s.tf_config_from_environ(env))["task"],
                     {"type": "worker", "index": 1})

  def test_missing_cluster_is_a_cluster_config_error(self):
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "neither HARNESS_K8S_CLUSTER, TF_CONFIG nor "
                                "HARNESS_JOBSET_NAME is set"):
      k8s.tf_config_from_environ({k8s.JOB_INDEX_ENV: "0"})


def _containers_of_type(objects, task_type):
  """The containers that run `task_type` tasks, in any output."""
  found = []
  for obj in objects:
    spec = obj["spec"]
    if obj["kind"] == "JobSet":
      found += [rj["template"]["spec"]["template"]["spec"]["containers"][0]
                for rj in spec["replicatedJobs"] if rj["name"] == task_type]
    elif obj["kind"] == "TFJob":
      replica = spec["tfReplicaSpecs"].get(
          {"ps": "PS"}.get(task_type, task_type.title()))
      found += replica["template"]["spec"]["containers"] if replica else []
    elif obj["kind"] == "Job" and obj["metadata"]["name"] == "mnist":
      found += obj["spec"]["template"]["spec"]["containers"]  # Every task.
  return found


class FlagsTest(parameterized.TestCase):

  def _run(self, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = k8s.main(["harness.k8s", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()

  def test_cli_prints_manifests_with_the_pod_layout(self):
    code, out, err = self._run(
        "--name=mnist", "--output=jobs", "--workers=2", "--chief",
        f"--image={_IMAGE}", "--model_dir=gs://b/m", "--", *_LINEAR)
    self.assertEqual(code, 0, err)
    self.assertIn("#   mnist-0 -> chief/0\n#   mnist-1 -> worker/0\n"
                  "#   mnist-2 -> worker/1\n", out)
    kinds = [o["kind"] for o in yaml.safe_load_all(out)]
    self.assertEqual(kinds, ["Service", "Job", "NetworkPolicy"])

  def test_cli_tf_config_subcommand(self):
    out, err = io.StringIO(), io.StringIO()
    code = k8s.main(["harness.k8s", "tf-config"], environ={
        k8s.CLUSTER_ENV: '{"chief": ["c:1"], "worker": ["w:1"]}',
        k8s.JOB_INDEX_ENV: "1"}, stdout=out, stderr=err)
    self.assertEqual(code, 0, err.getvalue())
    self.assertEqual(json.loads(out.getvalue())["task"],
                     {"type": "worker", "index": 0})

  @parameterized.named_parameters(
      ("bad_name", ["--name=MNIST", "--pvc=p"], "--name='MNIST'"),
      ("no_model_dir", ["--name=m"], "exactly one shared model_dir"),
      ("both_model_dirs", ["--name=m", "--pvc=p", "--model_dir=gs://b"],
       "exactly one shared model_dir"),
      ("model_dir_after_dashes", ["--name=m", "--pvc=p", "--",
                                  "--model_dir=/x"], "cannot follow `--`"),
      ("unknown_flag", ["--name=m", "--pvc=p", "--worker=2"], "worker"),
      ("standalone_evaluator", ["--name=m", "--output=servers",
                                "--evaluator"],
       "standalone cluster runs only servers"),
      ("standalone_main_args", ["--name=m", "--output=servers", "--",
                                "--x=1"], "runs no harness.main"),
      ("no_trainer", ["--name=m", "--pvc=p", "--workers=0"],
       "needs a chief or a worker"),
      ("gpu_mismatch", ["--name=m", "--pvc=p", "--num_gpus_per_worker=2",
                        "--", "--num_gpus_per_worker=1"], "must match"),
      ("bad_output", ["--name=m", "--pvc=p", "--output=tfjobs"],
       "--output='tfjobs': must be one of jobset, trainjob, jobs, tfjob, "
       "servers."),
      ("old_kind", ["--name=m", "--pvc=p", "--kind=jobs"],
       "flag '--kind=jobs': --kind was replaced by --output. Fix: write "
       "--output=jobs instead"),
      ("old_standalone", ["--name=m", "--standalone"],
       "--standalone was replaced by --output. Fix: write --output=servers"),
      ("old_tfjob", ["--name=m", "--pvc=p", "--tfjob"],
       "--tfjob was replaced by --output. Fix: write --output=tfjob"),
      ("unknown_gate", ["--name=m", "--pvc=p",
                        "--jobset_feature_gates=InPlaceRestart"],
       "'InPlaceRestart' is not a gate harness.k8s renders for: it needs "
       "JobSet's in-place-restart agent sidecar"),
      ("gate_without_jobset", ["--name=m", "--pvc=p", "--output=jobs",
                               "--jobset_feature_gates=RestartJob"],
       "only --output=jobset and trainjob run a JobSet"),
      ("grace_below_stop_bound", ["--name=m", "--pvc=p",
                                  "--termination_grace_secs=40", "--",
                                  "--stop_timeout_secs=30"],
       "--termination_grace_secs=40: leaves less than 20 s for the stop "
       "checkpoint after the 30 s stop bound"),
      ("image_with_space", ["--name=m", "--pvc=p", "--image=reg/h 0.1"],
       "--image='reg/h 0.1': is not an image reference"),
      ("memory_typo", ["--name=m", "--pvc=p", "--memory=4GB"],
       "--memory='4GB': is not a Kubernetes memory quantity"),
      ("memory_empty", ["--name=m", "--pvc=p", "--memory="],
       "--memory='': is not a Kubernetes memory quantity"),
      ("cpu_words", ["--name=m", "--pvc=p", "--cpu=two"],
       "--cpu='two': is not a Kubernetes CPU quantity"),
      ("metrics_on_tf_port", ["--name=m", "--pvc=p", "--metrics_port=2222"],
       "--metrics_port=2222: is the TF port"),
      ("metrics_port_range", ["--name=m", "--pvc=p", "--metrics_port=70000"],
       "--metrics_port=70000: must be a TCP port <= 65535."),
  )
  def test_bad_flags_exit_2_with_a_message(self, argv, message):
    code, out, err = self._run(f"--image={_IMAGE}", *argv)
    self.assertEqual(code, 2)
    self.assertEqual(out, "")
    self.assertIn(message, _support.flat(err))
    self.assertIn("Fix:", err)
    # One message, folded at 160 characters (log_format.fold).
    self.assertEqual(err.count("harness.k8s: error:"), 1, err)
    self.assertEqual(_support.long_lines(err), [], err)

  @parameterized.parameters("4Gi", "512Mi", "1G", "1.5Gi", "129e6", "4096")
  def test_memory_quantities_kubernetes_takes_are_accepted(self, memory):
    self.assertEqual(_config("one_worker", memory=memory).memory, memory)

  @parameterized.parameters("2", "500m", "0.5")
  def test_cpu_quantities_kubernetes_takes_are_accepted(self, cpu):
    self.assertEqual(_config("one_worker", cpu=cpu).cpu, cpu)

  def test_default_kind_is_a_jobset(self):
    code, out, err = self._run("--name=mnist", "--workers=2", "--evaluator",
                               f"--image={_IMAGE}", "--model_dir=gs://b/m",
                               "--", *_LINEAR)
    self.assertEqual(code, 0, err)
    self.assertEqual([o["kind"] for o in yaml.safe_load_all(out)],
                     ["JobSet", "NetworkPolicy"])
    self.assertIn("#   mnist-worker-0-1 -> worker/1\n"
                  "#   mnist-evaluator-0-0 -> evaluator/0\n", out)

  def test_help_says_what_is_rendered(self):
    code, out, err = self._run("--help")
    self.assertEqual(code, 0, err)
    text = " ".join(out.split())
    # The default is a JobSet (test_default_kind_is_a_jobset renders it).
    self.assertIn("By default (--output=jobset) one JobSet", text)
    self.assertNotIn("an Indexed Job for the training tasks", text)
    # ps pods get the GPUs too, except standard servers' ps.
    self.assertIn("nvidia.com/gpu limit of every training pod (chief, "
                  "worker, ps", text)
    for output in ("jobset", "jobs", "tfjob"):
      objects = k8s.render(_config("chief_two_workers_two_ps", output=output,
                                   num_gpus_per_worker=1))
      ps_limits = [c["resources"]["limits"]
                   for c in _containers_of_type(objects, "ps")]
      self.assertTrue(ps_limits, output)
      self.assertTrue(all(lim.get("nvidia.com/gpu") == 1 for lim in
                          ps_limits), (output, ps_limits))
    for old in ("--kind", "--standalone", "--tfjob"):
      self.assertNotIn(f"  {old}:", out)  # Replaced by --output.

  def test_renamed_main_flag_fails_the_check(self):
    config = _config("one_worker", main_args=("--train_step=5",))
    pod = _pods(k8s.render(config))[0]
    container = pod["template"]["spec"]["containers"][0]
    with self.assertRaises(errors.FlagError):
      flags.parse(_after(_argv(container), "harness.main"),
                  environ=dict(pod["env"], TF_CONFIG=pod["tf_config"]))



def _pod_templates(obj):
  """Every pod template of a rendered object (TFJob: one per replica type)."""
  if obj["kind"] == "TFJob":
    return [r["template"] for r in obj["spec"]["tfReplicaSpecs"].values()]
  if obj["kind"] in ("Job", "StatefulSet", "Deployment"):
    return [obj["spec"]["template"]]
  return []


class SecurityTest(parameterized.TestCase):
  """Every pod of every rendered shape: non-root, read-only, no privileges."""

  @parameterized.named_parameters((s, s) for s in _SHAPES)
  def test_every_pod_is_unprivileged_with_a_read_only_root(self, shape):
    objects = k8s.render(_config(shape, tensorboard=True) if shape not in (
        "standalone",) else _config(shape))
    kinds = {o["kind"] for o in objects}
    self.assertLessEqual(kinds, {"Service", "Job", "StatefulSet",
                                 "Deployment", "TFJob", "NetworkPolicy"})
    templates = [t for o in objects for t in _pod_templates(o)]
    self.assertNotEmpty(templates)
    for template in templates:
      spec = template["spec"]
      with self.subTest(pod=template["metadata"]["labels"]):
        pod_security = spec["securityContext"]
        self.assertIs(pod_security["runAsNonRoot"], True)
        self.assertGreater(pod_security["runAsUser"], 0)
        self.assertGreater(pod_security["runAsGroup"], 0)
        self.assertEqual(pod_security["seccompProfile"],
                         {"type": "RuntimeDefault"})
        self.assertIs(spec["automountServiceAccountToken"], False)
        volumes = {v["name"]: v for v in spec["volumes"]}
        for container in spec["containers"]:
          security = container["securityContext"]
          self.assertIs(security["readOnlyRootFilesystem"], True)
          self.assertIs(security["allowPrivilegeEscalation"], False)
          self.assertIs(security["runAsNonRoot"], True)
          self.assertEqual(security["capabilities"], {"drop": ["ALL"]})
          self.assertNotIn("add", security["capabilities"])
          self.assertNotIn("privileged", security)
          # The only writable paths: the scratch emptyDir (HOME, TMPDIR)
          # and the model volume.
          mounts = {m["mountPath"]: m["name"]
                    for m in container["volumeMounts"]}
          self.assertIn("emptyDir", volumes[mounts[k8s.SCRATCH_MOUNT]])
          env = {e["name"]: e.get("value") for e in container["env"]}
          self.assertEqual(env["HOME"], k8s.SCRATCH_MOUNT)
          self.assertEqual(env["TMPDIR"], k8s.SCRATCH_MOUNT)
          self.assertLessEqual(set(mounts), {k8s.SCRATCH_MOUNT,
                                             k8s.MODEL_MOUNT})
          self.assertNotIn("hostNetwork", spec)
          self.assertNotIn("hostPID", spec)

  @parameterized.named_parameters((s, s) for s in _SHAPES)
  def test_tf_port_is_admitted_only_from_the_job_and_given_ranges(self,
                                                                   shape):
    config = _config(shape)
    objects = k8s.render(config)
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    self.assertLen(policies, 1)
    spec = policies[0]["spec"]
    self.assertEqual(spec["policyTypes"], ["Ingress"])
    for rule in spec["ingress"]:
      self.assertNotEmpty(rule.get("from"))  # No rule admits everyone.
      self.assertEqual(rule["ports"], [{"protocol": "TCP",
                                        "port": config.port}])
      for peer in rule["from"]:
        if "ipBlock" in peer:
          self.assertIn(peer["ipBlock"]["cidr"], config.allow_cidr)
        else:
          self.assertEqual(peer["podSelector"]["matchLabels"][
              "app.kubernetes.io/instance"], config.name)
          self.assertNotIn("namespaceSelector", peer)
    # Every pod that opens the TF port is selected by the policy.
    selected = spec["podSelector"]["matchLabels"].items()
    for obj in objects:
      for template in _pod_templates(obj):
        ports = [p["containerPort"] for c in template["spec"]["containers"]
                 for p in c.get("ports", ())]
        if config.port in ports:
          self.assertLessEqual(selected, template["metadata"][
              "labels"].items())

  @parameterized.parameters("0.0.0.0/0", "::/0", "not-a-range")
  def test_allow_cidr_must_be_a_bounded_range(self, cidr):
    with self.assertRaisesRegex(errors.FlagError,
                                f"flag --allow_cidr='{re.escape(cidr)}'"):
      _config("standalone", allow_cidr=(cidr,))


if __name__ == "__main__":
  absltest.main()
