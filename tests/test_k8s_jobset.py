"""JobSet and Kubeflow Trainer v2 renderings, and TF_CONFIG from a pod's place.

Custom objects (JobSet, ClusterTrainingRuntime, TrainJob) are validated with
`jsonschema` against the CRDs' openAPIV3Schema in tests/data/k8s/crds/ (made
strict: an unknown field fails, as `kubectl apply --validate=strict` does);
built-in kinds and every pod template with kubernetes-validate, strict.
Each pod's environment is built the way the JobSet controller and the
downward API fill it (no TF_CONFIG), and the TF_CONFIG harness derives from
it is compared with the one today's `--output=jobs` template writes.
"""

import copy
import dataclasses
import functools
import json
import os
import pathlib
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized
import jsonschema
import kubernetes_validate
import yaml

from harness import cluster
from harness import errors
from harness import k8s
from harness.cli import flags
from harness.cluster import jobset_env
from harness.k8s import config as config_lib
from tests import conftest

_REPO = pathlib.Path(__file__).resolve().parent.parent
_CRDS = conftest.K8S_CRDS_DIR
_CRD_FILES = {
    "JobSet": "jobset.x-k8s.io_jobsets.yaml",
    "TrainJob": "trainer.kubeflow.org_trainjobs.yaml",
    "ClusterTrainingRuntime":
        "trainer.kubeflow.org_clustertrainingruntimes.yaml",
}
_K8S_VERSION = "1.33"
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's
_IMAGE = "registry.example.com/harness:0.1"
_LINEAR = ("--model_fn=linear", "--input_fn=constant", "--max_steps=20",
           "--eval_steps=2")
# name -> (K8sConfig kwargs, strategy kind for cluster.validate or None).
_SHAPES = {
    "chief_two_workers_ps_evaluator": (
        dict(workers=2, chief=True, ps=1, evaluator=True, pvc="harness-model",
             num_gpus_per_worker=1,
             main_args=_LINEAR + ("--strategy=parameter_server",)),
        "parameter_server"),
    "three_workers_evaluator": (
        dict(workers=3, evaluator=True, model_dir="gs://bucket/m",
             tensorboard=True, main_args=_LINEAR + ("--strategy=collective",
                                                    "--batch_size=12")),
        "collective"),
    "one_worker": (dict(workers=1, model_dir="gs://bucket/one",
                        main_args=_LINEAR + ("--strategy=mirrored",)),
                   "mirrored"),
    "chief_no_strategy": (dict(workers=1, chief=True, model_dir="gs://b/m",
                               main_args=_LINEAR), None),
}
_KINDS = ("jobset", "trainjob")


def _config(shape, kind="jobset", **overrides):
  kwargs = dict(_SHAPES[shape][0], name="mnist", image=_IMAGE, output=kind,
                namespace="team-a")
  kwargs.update(overrides)
  return k8s.K8sConfig(**kwargs)


def _strict(schema):
  """`schema` with unknown fields refused where the CRD lists the fields."""
  if isinstance(schema, list):
    return [_strict(s) for s in schema]
  if not isinstance(schema, dict):
    return schema
  result = {k: _strict(v) for k, v in schema.items()}
  if ("properties" in schema and "additionalProperties" not in schema
      and not schema.get("x-kubernetes-preserve-unknown-fields")):
    result["additionalProperties"] = False
  return result


@functools.lru_cache(maxsize=None)  # A CRD's YAML is up to 800 kB: once.
def _crd_validator(kind):
  path = _CRDS / _CRD_FILES[kind]
  crd = yaml.load(path.read_text(), Loader=_YAML_LOADER)
  (version,) = [v for v in crd["spec"]["versions"] if v["served"]]
  schema = _strict(version["schema"]["openAPIV3Schema"])
  api = f"{crd['spec']['group']}/{version['name']}"
  return api, jsonschema.Draft7Validator(schema)


def _validate(obj):
  """A custom object against its CRD; a built-in one (and every pod
  template inside a custom object) with kubernetes-validate, strict."""
  if obj["kind"] not in _CRD_FILES:
    kubernetes_validate.validate(obj, _K8S_VERSION, strict=True)
    return
  api, validator = _crd_validator(obj["kind"])
  if obj["apiVersion"] != api:
    raise AssertionError(f"{obj['kind']}: apiVersion {obj['apiVersion']} is "
                         f"not the CRD's {api}")
  validator.validate(obj)
  for i, template in enumerate(_pod_templates(obj)):
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "PodTemplate",
         "metadata": {"name": f"{obj['metadata']['name']}-{i}"},
         "template": template}, _K8S_VERSION, strict=True)


def _jobset_spec(obj):
  if obj["kind"] == "JobSet":
    return obj["spec"]
  if obj["kind"] == "ClusterTrainingRuntime":
    return obj["spec"]["template"]["spec"]
  return None


def _pod_templates(obj):
  spec = _jobset_spec(obj)
  if spec is None:
    return ([obj["spec"]["template"]] if obj["kind"] == "Deployment"
            else [])
  return [rj["template"]["spec"]["template"] for rj in spec["replicatedJobs"]]


def _pod_env(template, labels, annotations):
  """The container's variables as the downward API fills them."""
  env = {}
  for var in template["spec"]["containers"][0]["env"]:
    if "value" in var:
      env[var["name"]] = var["value"]
      continue
    path = var["valueFrom"]["fieldRef"]["fieldPath"]
    source, _, key = path.partition("['")
    env[var["name"]] = {"metadata.labels": labels,
                        "metadata.annotations": annotations}[source][key[:-2]]
  return env


def _jobset_pods(objects, jobset_name, restart_attempt=0):
  """{(task type, index): (template, env)} of every pod of the JobSet.

  Labels and annotations as the JobSet controller sets them (v0.11.1
  pkg/controllers/jobset_controller.go:863-922: labelAndAnnotateObject).
  """
  (spec,) = [s for s in map(_jobset_spec, objects) if s is not None]
  pods = {}
  for rj in spec["replicatedJobs"]:
    template = rj["template"]["spec"]["template"]
    for job_index in range(rj["replicas"]):
      for pod_index in range(rj["template"]["spec"]["completions"]):
        place = {jobset_env.JOBSET_NAME_LABEL: jobset_name,
                 jobset_env.REPLICATED_JOB_LABEL: rj["name"],
                 jobset_env.JOB_INDEX_LABEL: str(job_index)}
        labels = dict(template["metadata"]["labels"], **place)
        annotations = dict(place, **{
            jobset_env.POD_INDEX_ANNOTATION: str(pod_index),
            "jobset.sigs.k8s.io/restart-attempt": str(restart_attempt)})
        env = _pod_env(template, labels, annotations)
        env[jobset_env.COMPLETION_INDEX_ENV] = str(pod_index)
        pods[(rj["name"], pod_index)] = (template, labels, env)
  return pods


def _jobs_tf_configs(config):
  """{(task type, index): TF_CONFIG dict} that `--output=jobs` writes."""
  jobs = k8s.render(dataclasses.replace(config, output="jobs"))
  result = {}
  for job in (o for o in jobs if o["kind"] == "Job"):
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {v["name"]: v["value"] for v in container["env"]}
    for i in range(job["spec"]["completions"]):
      tf_config = json.loads(k8s.tf_config_from_environ(
          dict(env, **{k8s.JOB_INDEX_ENV: str(i)})))
      task = tf_config["task"]
      result[(task["type"], task["index"])] = tf_config
  return result


def _renamed(tf_config, renames):
  result = copy.deepcopy(tf_config)
  result["cluster"] = {job: [renames[a] for a in addresses]
                       for job, addresses in tf_config["cluster"].items()}
  return result


class SchemaTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    if not _CRDS.is_dir():
      self.skipTest(f"the CRD schemas are not here: {_CRDS} is absent "
                    "(the repository ships them: restore tests/data)")

  @parameterized.product(shape=tuple(_SHAPES), kind=_KINDS)
  def test_every_object_validates_against_its_schema(self, shape, kind):
    objects = k8s.render(_config(shape, kind))
    kinds = [o["kind"] for o in objects]
    self.assertIn("JobSet" if kind == "jobset" else "TrainJob", kinds)
    for obj in objects:
      with self.subTest(obj=f"{obj['kind']}/{obj['metadata']['name']}"):
        _validate(obj)

  def test_metrics_port_renders_valid_objects(self):
    for kind in _KINDS + ("jobs",):
      for obj in k8s.render(_config("chief_two_workers_ps_evaluator", kind,
                                    metrics_port=9090)):
        with self.subTest(kind=kind, obj=obj["kind"]):
          _validate(obj)

  @parameterized.parameters(
      ("JobSet", ("spec", "network", "enableDNSHostname"), True),  # Typo.
      ("JobSet", ("spec", "failurePolicy", "rules", 0, "action"),
       "RestartGroup"),
      ("JobSet", ("spec", "successPolicy", "operator"), "Most"),
      ("TrainJob", ("spec", "runtimeRef", "name"), 3),
      ("ClusterTrainingRuntime", ("spec", "template", "spec",
                                  "replicatedJobs", 0, "replicas"), "one"),
  )
  def test_validation_catches_a_bad_field(self, kind, path, value):
    objects = k8s.render(_config("chief_two_workers_ps_evaluator",
                                 "jobset" if kind == "JobSet"
                                 else "trainjob"))
    obj = next(o for o in objects if o["kind"] == kind)
    _validate(obj)
    target = obj
    for key in path[:-1]:
      target = target[key]
    target[path[-1]] = value
    with self.assertRaises(jsonschema.ValidationError):
      _validate(obj)


class JobSetTest(parameterized.TestCase):

  def _spec(self, shape, **overrides):
    (jobset,) = [o for o in k8s.render(_config(shape, **overrides))
                 if o["kind"] == "JobSet"]
    return jobset["spec"]

  def test_a_replicated_job_per_task_type_each_one_indexed_job(self):
    spec = self._spec("chief_two_workers_ps_evaluator")
    self.assertEqual(
        [(rj["name"], rj["replicas"], rj["template"]["spec"]["completions"],
          rj["template"]["spec"]["parallelism"])
         for rj in spec["replicatedJobs"]],
        [("chief", 1, 1, 1), ("worker", 1, 2, 2), ("ps", 1, 1, 1),
         ("evaluator", 1, 1, 1)])
    self.assertEqual(spec["network"], {"enableDNSHostnames": True,
                                       "publishNotReadyAddresses": True})

  def test_success_is_the_chief_and_the_evaluator(self):
    self.assertEqual(self._spec("chief_two_workers_ps_evaluator")[
        "successPolicy"], {"operator": "All",
                           "targetReplicatedJobs": ["chief", "evaluator"]})
    self.assertEqual(self._spec("one_worker")["successPolicy"],
                     {"operator": "All", "targetReplicatedJobs": ["worker"]})

  def test_trainer_failure_restarts_the_group_never_the_evaluator(self):
    spec = self._spec("chief_two_workers_ps_evaluator", restarts_per_task=5)
    policy = spec["failurePolicy"]
    self.assertEqual(policy["maxRestarts"], 5)
    rules = policy["rules"]
    # Rules apply in order, the first match wins: bad flags first.
    self.assertEqual(rules[0], {"name": "badFlagsFailTheJobSet",
                                "action": "FailJobSet",
                                "onJobFailureReasons": ["PodFailurePolicy"]})
    group = [r for r in rules if r["action"].startswith("RestartJobSet")]
    self.assertEqual([r["targetReplicatedJobs"] for r in group],
                     [["chief", "worker", "ps"]])
    evaluator = [r for r in rules if "evaluator" in r.get(
        "targetReplicatedJobs", ())]
    # Without gates: its Job retried the pod; then the JobSet fails.
    self.assertEqual([r["action"] for r in evaluator], ["FailJobSet"])
    gated = self._spec("chief_two_workers_ps_evaluator",
                       jobset_feature_gates="RestartJob")["failurePolicy"]
    self.assertEqual([r["action"] for r in gated["rules"] if "evaluator" in
                      r.get("targetReplicatedJobs", ())], ["RestartJob"])
    jobs = {rj["name"]: rj["template"]["spec"]
            for rj in spec["replicatedJobs"]}
    for name, job in jobs.items():
      self.assertEqual(job["backoffLimit"], 5 if name == "evaluator" else 0)
      fail_job = job["podFailurePolicy"]["rules"][0]
      self.assertEqual((fail_job["action"], fail_job["onExitCodes"][
          "values"]), ("FailJob", [errors.EXIT_BAD_CONFIG]))

  def test_every_task_holds_the_gpus_and_the_evaluator_no_port(self):
    spec = self._spec("chief_two_workers_ps_evaluator")
    containers = {rj["name"]: rj["template"]["spec"]["template"]["spec"][
        "containers"][0] for rj in spec["replicatedJobs"]}
    gpus = {n: c["resources"]["limits"].get("nvidia.com/gpu", 0)
            for n, c in containers.items()}
    # harness.main checks --num_gpus_per_worker in every task, ps too.
    self.assertEqual(gpus, {"chief": 1, "worker": 1, "ps": 1,
                            "evaluator": 1})
    self.assertNotIn("ports", containers["evaluator"])
    self.assertEqual(containers["ps"]["ports"], [
        {"name": "tf", "containerPort": 2222, "protocol": "TCP"}])

  def test_trainjob_refers_to_a_tensorflow_runtime_holding_the_jobset(self):
    config = _config("chief_two_workers_ps_evaluator", "trainjob")
    runtime, trainjob, policy = k8s.render(config)
    self.assertEqual(runtime["kind"], "ClusterTrainingRuntime")
    self.assertEqual(runtime["metadata"]["labels"][
        "trainer.kubeflow.org/framework"], "tensorflow")
    self.assertNotIn("namespace", runtime["metadata"])  # Cluster-scoped.
    self.assertEqual(trainjob["spec"]["runtimeRef"], {
        "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime",
        "name": runtime["metadata"]["name"]})
    # The JobSet's spec, but the chief's Job is Trainer's `trainer`
    # ancestor, whose container Trainer's runtime webhook wants as `node`.
    spec = runtime["spec"]["template"]["spec"]
    chief = spec["replicatedJobs"][0]
    self.assertEqual(chief["template"]["metadata"]["labels"].pop(
        "trainer.kubeflow.org/trainjob-ancestor-step"), "trainer")
    pod = chief["template"]["spec"]["template"]["spec"]
    self.assertEqual(pod["containers"][0]["name"], "node")
    pod["containers"][0]["name"] = k8s.CONTAINER
    for rule in chief["template"]["spec"]["podFailurePolicy"]["rules"]:
      if "onExitCodes" in rule:
        self.assertEqual(rule["onExitCodes"]["containerName"], "node")
        rule["onExitCodes"]["containerName"] = k8s.CONTAINER
    self.assertEqual(spec, self._spec("chief_two_workers_ps_evaluator"))
    self.assertEqual(policy["kind"], "NetworkPolicy")

  @parameterized.parameters(*_KINDS)
  def test_network_policy_selects_the_jobset_pods(self, kind):
    config = _config("chief_two_workers_ps_evaluator", kind,
                     allow_cidr=("10.1.2.3/32",))
    objects = k8s.render(config)
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    by_jobset = {jobset_env.JOBSET_NAME_LABEL: "mnist"}
    self.assertEqual(policy["spec"]["podSelector"],
                     {"matchLabels": by_jobset})
    (rule,) = policy["spec"]["ingress"]
    self.assertEqual(rule, {"from": [{"podSelector": {
        "matchLabels": by_jobset}}, {"ipBlock": {"cidr": "10.1.2.3/32"}}],
                            "ports": [{"protocol": "TCP", "port": 2222}]})
    for template, labels, _ in _jobset_pods(objects, "mnist").values():
      self.assertLessEqual(by_jobset.items(), labels.items())
      self.assertNotIn(jobset_env.JOBSET_NAME_LABEL,
                       template["metadata"]["labels"])  # The controller's.

  @parameterized.parameters(*_KINDS)
  def test_every_pod_is_hardened(self, kind):
    for template in (t for o in k8s.render(_config(
        "three_workers_evaluator", kind)) for t in _pod_templates(o)):
      spec = template["spec"]
      self.assertIs(spec["automountServiceAccountToken"], False)
      self.assertIs(spec["securityContext"]["runAsNonRoot"], True)
      self.assertGreater(spec["securityContext"]["runAsUser"], 0)
      for container in spec["containers"]:
        security = container["securityContext"]
        self.assertIs(security["readOnlyRootFilesystem"], True)
        self.assertIs(security["allowPrivilegeEscalation"], False)
        self.assertEqual(security["capabilities"], {"drop": ["ALL"]})

  def test_model_dir_claim_is_mounted_in_every_pod(self):
    spec = self._spec("chief_two_workers_ps_evaluator")
    for rj in spec["replicatedJobs"]:
      pod = rj["template"]["spec"]["template"]["spec"]
      self.assertIn({"name": "model", "persistentVolumeClaim": {
          "claimName": "harness-model"}}, pod["volumes"])
      self.assertIn({"name": "model", "mountPath": k8s.MODEL_MOUNT},
                    pod["containers"][0]["volumeMounts"])

  @parameterized.parameters("jobset", "trainjob", "jobs")
  def test_metrics_port_is_passed_and_declared(self, kind):
    objects = k8s.render(_config("chief_two_workers_ps_evaluator", kind,
                                 metrics_port=9090, tensorboard=True))
    main_containers = [c for o in objects for t in (
        _pod_templates(o) or ([o["spec"]["template"]] if o["kind"] == "Job"
                              else [])) for c in t["spec"]["containers"]
                       if "harness.main" in c["args"]]
    self.assertLen(main_containers, 4 if kind != "jobs" else 2)
    for container in main_containers:
      self.assertEqual(container["args"][-2:], ["--metrics_port=9090",
                                                "--metrics_bind=0.0.0.0"])
      self.assertIn({"name": "metrics", "containerPort": 9090,
                     "protocol": "TCP"}, container["ports"])
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    self.assertIn({"from": [{"namespaceSelector": {}}],
                   "ports": [{"protocol": "TCP", "port": 9090}]},
                  policy["spec"]["ingress"])
    (board,) = [o for o in objects if o["kind"] == "Deployment"]
    self.assertNotIn("metrics", json.dumps(board))  # No harness.main there.

  def test_no_metrics_by_default(self):
    text = json.dumps(k8s.render(_config("three_workers_evaluator")))
    self.assertNotIn("metrics", text)


class TfConfigFromPlaceTest(parameterized.TestCase):

  @parameterized.product(shape=tuple(_SHAPES), kind=_KINDS)
  def test_each_pod_derives_the_tf_config_of_the_jobs_template(self, shape,
                                                               kind):
    config = _config(shape, kind)
    pods = _jobset_pods(k8s.render(config), "mnist")
    expected = _jobs_tf_configs(config)
    # The same task's address in either rendering: mnist-<i>.mnist:2222
    # (Indexed Job) -> mnist-<type>-0-<index>.mnist:2222 (JobSet).
    jobs_cluster = config_lib.cluster_addresses(dataclasses.replace(
        config, output="jobs"))
    renames = {address: config_lib.cluster_addresses(config)[job][i]
               for job, addresses in jobs_cluster.items()
               for i, address in enumerate(addresses)}
    self.assertLen(set(renames.values()), len(renames))
    self.assertEqual(set(pods), set(expected))  # Every task, one pod each.
    for task, (_, _, env) in pods.items():
      with self.subTest(task=task):
        self.assertNotIn("TF_CONFIG", env)
        derived = json.loads(k8s.tf_config_from_environ(env))
        self.assertEqual(derived, _renamed(expected[task], renames))
        info = cluster.from_environ(env)  # The one parse path.
        self.assertEqual(json.loads(info.to_json()), derived)
        self.assertEqual(info.source, jobset_env.SOURCE)
        # What harness.main reads to export it for TensorFlow's readers.
        self.assertTrue(info.from_pod_place)
        self.assertFalse(cluster.from_environ(
            {"TF_CONFIG": info.to_json()}).from_pod_place)

  def test_acceptance_tasks_and_addresses(self):
    pods = _jobset_pods(k8s.render(_config(
        "chief_two_workers_ps_evaluator")), "mnist")
    port = 2222
    cluster_spec = {
        "chief": [f"mnist-chief-0-0.mnist:{port}"],
        "worker": [f"mnist-worker-0-0.mnist:{port}",
                   f"mnist-worker-0-1.mnist:{port}"],
        "ps": [f"mnist-ps-0-0.mnist:{port}"]}
    for task in (("chief", 0), ("worker", 1), ("ps", 0), ("evaluator", 0)):
      env = pods[task][2]
      self.assertEqual(json.loads(k8s.tf_config_from_environ(env)), {
          "cluster": cluster_spec,
          "task": {"type": task[0], "index": task[1]}})

  @parameterized.product(shape=tuple(_SHAPES), kind=_KINDS)
  def test_every_pods_flags_parse_with_the_derived_tf_config(self, shape,
                                                             kind):
    config = _config(shape, kind)
    strategy = _SHAPES[shape][1]
    for task, (template, _, env) in _jobset_pods(
        k8s.render(config), "mnist").items():
      with self.subTest(task=task):
        container = template["spec"]["containers"][0]
        args = container["args"]
        self.assertEqual(args[:3], ["python", "-m", "harness.main"])
        gpus = container["resources"]["limits"].get("nvidia.com/gpu", 0)
        job, plan = flags.parse(args[3:], environ=env,
                                gpu_count=lambda n=gpus: n)
        info = plan.cluster_info
        self.assertEqual((info.task_type, info.task_id), task)
        cluster.validate(info, has_strategy=strategy is not None,
                         strategy_kind=strategy)
        self.assertEqual(job.model_dir, config.model_dir_path)

  def test_explicit_tf_config_wins(self):
    pods = _jobset_pods(k8s.render(_config("one_worker")), "mnist")
    env = dict(pods[("worker", 0)][2], TF_CONFIG=json.dumps(
        {"cluster": {"worker": ["elsewhere:1"]},
         "task": {"type": "worker", "index": 0}}))
    info = cluster.from_environ(env)
    self.assertEqual(info.cluster, {"worker": ["elsewhere:1"]})
    self.assertEqual(json.loads(k8s.tf_config_from_environ(env))["cluster"],
                     {"worker": ["elsewhere:1"]})

  def test_outside_a_jobset_nothing_is_derived(self):
    self.assertIsNone(cluster.from_environ({"TF_CONFIG": ""}))
    self.assertIsNone(jobset_env.tf_config_dict({}))

  def test_pod_command_exports_the_derived_tf_config(self):
    """The rendered entrypoint, run with a JobSet pod's environment."""
    pods = _jobset_pods(k8s.render(_config(
        "chief_two_workers_ps_evaluator")), "mnist")
    template, _, pod_env = pods[("ps", 0)]
    container = template["spec"]["containers"][0]
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env.update(pod_env, PYTHONPATH=str(_REPO))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    proc = subprocess.run(
        container["command"] + ["python", "-c", "import os; print(os.environ"
                                "['TF_CONFIG'])"],
        env=env, capture_output=True, text=True, timeout=60, check=False)
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertEqual(json.loads(proc.stdout),
                     json.loads(k8s.tf_config_from_environ(pod_env)))
    self.assertEqual(json.loads(proc.stdout)["task"],
                     {"type": "ps", "index": 0})

  def test_harness_main_exports_the_derived_tf_config(self):
    """TensorFlow's strategies read TF_CONFIG themselves: main sets it."""
    from harness import main  # lazy: keeps the other tests' imports light
    pods = _jobset_pods(k8s.render(_config("chief_no_strategy")), "mnist")
    environ = dict(pods[("worker", 0)][2])
    code = main.main(["harness.main", "--model_fn=linear",
                      "--input_fn=constant", "--model_dir=gs://b/m",
                      "--dry_run"], environ=environ)
    self.assertEqual(code, 0)
    self.assertEqual(json.loads(environ["TF_CONFIG"]), {
        "cluster": {"chief": ["mnist-chief-0-0.mnist:2222"],
                    "worker": ["mnist-worker-0-0.mnist:2222"]},
        "task": {"type": "worker", "index": 0}})

  def _env(self, **changes):
    env = dict(_jobset_pods(k8s.render(_config(
        "chief_two_workers_ps_evaluator")), "mnist")[("worker", 1)][2])
    for name, value in changes.items():
      if value is None:
        env.pop(name, None)
      else:
        env[name] = value
    return env

  @parameterized.named_parameters(
      ("unknown_replicated_job", {jobset_env.REPLICATED_JOB_ENV: "trainer"},
       "HARNESS_JOBSET_REPLICATED_JOB='trainer' is none of the task types"),
      ("no_replicated_job", {jobset_env.REPLICATED_JOB_ENV: None},
       "HARNESS_JOBSET_REPLICATED_JOB='' is none of the task types"),
      ("bad_tasks", {jobset_env.TASKS_ENV: '{"worker": 0}'},
       "must be a JSON object mapping chief, worker or ps"),
      ("tasks_not_json", {jobset_env.TASKS_ENV: "worker=2"},
       "HARNESS_JOBSET_TASKS='worker=2'"),
      ("bad_port", {jobset_env.PORT_ENV: "http"}, "is not a TCP port"),
      ("second_job", {jobset_env.JOB_INDEX_ENV: "1"},
       "HARNESS_JOBSET_JOB_INDEX=1: harness runs each task type as ONE"),
      ("pod_outside", {jobset_env.POD_INDEX_ENV: "2"},
       "pod index 2 of 'worker' is outside its 2 task(s)"),
      ("no_index", {jobset_env.POD_INDEX_ENV: None,
                    jobset_env.COMPLETION_INDEX_ENV: None},
       "HARNESS_JOBSET_POD_INDEX / JOB_COMPLETION_INDEX is not set."),
      ("bad_index", {jobset_env.POD_INDEX_ENV: "-1"},
       "HARNESS_JOBSET_POD_INDEX='-1' is not a non-negative integer."),
  )
  def test_a_broken_environment_is_one_clear_error(self, changes, message):
    with self.assertRaises(errors.ClusterConfigError) as caught:
      cluster.from_environ(self._env(**changes))
    text = str(caught.exception)
    self.assertIn(message, text)
    self.assertIn("Fix:", text)
    self.assertNotIn("\n", text)

  def test_completion_index_is_the_fallback(self):
    env = self._env(**{jobset_env.POD_INDEX_ENV: None})
    self.assertEqual(cluster.from_environ(env).task_id, 1)


if __name__ == "__main__":
  absltest.main()
