"""Every rendering of `python -m harness.k8s`, admitted by the released engines.

Each output (jobset, trainjob, jobs, servers) of each shape goes through
tests/k8s_admission.py for every release in tests/data/k8s/crds/released/
(JobSet v0.11.1, v0.12.0; Kubeflow Trainer v2.2.1, v2.3.0) with the
releases' default feature gates: the CRD's defaults, strict schema and CEL
rules, then the webhooks' rules ported from the sources; a refusal fails
with the engine's own sentence. Built-in objects go through
kubernetes-validate (strict). Also: the exit-status contract of
harness/errors.py in every Job's failure policies, the restart attempt and
grace period in every pod, and the JobSet Kubeflow Trainer's controller
builds from harness's runtime, whose pods derive the same TF_CONFIG as the
JobSet rendering's.
"""

import copy
import dataclasses
import json
import os
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized
import kubernetes_validate

from harness import cluster
from harness import errors
from harness import k8s
from harness.cluster import restart_attempt
from tests import _processes
from tests import k8s_admission
from tests import k8s_trainer_admission
from tests.test_k8s_jobset import _jobset_pods

_IMAGE = "registry.example.com/harness:0.1"
_LINEAR = ("--model_fn=linear", "--input_fn=constant", "--max_steps=20")
_SHAPES = {
    "workers_only": dict(workers=2, model_dir="gs://b/m",
                         main_args=_LINEAR + ("--strategy=collective",)),
    "workers_evaluator": dict(workers=3, evaluator=True, pvc="harness-model",
                              tensorboard=True, metrics_port=9090,
                              main_args=_LINEAR),
    "chief_workers_ps_evaluator": dict(
        workers=2, chief=True, ps=1, evaluator=True, pvc="harness-model",
        num_gpus_per_worker=1,
        main_args=_LINEAR + ("--strategy=parameter_server",)),
    "servers": dict(workers=2, ps=1, output="servers"),
}
_OUTPUTS = ("jobset", "trainjob", "jobs")
_RELEASES = tuple(k8s_admission.RELEASES)
_GATED_ACTIONS = ("RestartJob", "RestartJobAndIgnoreMaxRestarts")


def _config(shape, output=None, **overrides):
  kwargs = dict(name="mnist", image=_IMAGE, namespace="team-a")
  kwargs.update(_SHAPES[shape])
  if output:
    kwargs["output"] = output
  kwargs.update(overrides)
  return k8s.K8sConfig(**kwargs)


def _renderings():
  """(name, config) of every output of every shape."""
  for shape in _SHAPES:
    for output in ((None,) if shape == "servers" else _OUTPUTS):
      yield f"{shape}_{output or 'servers'}", _config(shape, output)


def _jobs_of(objects):
  """(Job spec, pod spec) of every Job the objects make or hold."""
  for obj in objects:
    if obj["kind"] == "Job":
      yield obj["spec"], obj["spec"]["template"]["spec"]
    spec = obj["spec"]
    if obj["kind"] == "ClusterTrainingRuntime":
      spec = spec["template"]["spec"]
    for rj in spec.get("replicatedJobs", ()) if obj["kind"] in (
        "JobSet", "ClusterTrainingRuntime") else ():
      yield rj["template"]["spec"], rj["template"]["spec"]["template"]["spec"]


def _pod_specs(objects):
  specs = [pod for _, pod in _jobs_of(objects)]
  return specs + [o["spec"]["template"]["spec"] for o in objects
                  if o["kind"] in ("StatefulSet", "Deployment")]


class _ReleasedCrdsTest(parameterized.TestCase):
  """Skipped, saying why, where the released CRDs are absent."""

  def setUp(self):
    super().setUp()
    if not k8s_admission.RELEASED_DIR.is_dir():
      self.skipTest(f"the released CRDs are not here: "
                    f"{k8s_admission.RELEASED_DIR} is absent (the "
                    "repository ships them: restore tests/data)")


class AdmittedByEveryReleaseTest(_ReleasedCrdsTest):

  @parameterized.named_parameters(*_renderings())
  def test_admitted_with_default_gates(self, config):
    objects = k8s.render(config)
    for obj in objects:
      if obj["kind"] not in ("JobSet", "TrainJob", "ClusterTrainingRuntime"):
        kubernetes_validate.validate(obj, "1.33", strict=True)
    for release in _RELEASES:
      with self.subTest(release=release):
        if config.output == "trainjob" and release.startswith("jobset"):
          with self.assertRaisesRegex(k8s_admission.Refused,
                                      "has no ClusterTrainingRuntime CRD"):
            k8s_admission.admit(objects, release)
          continue
        try:
          admitted = k8s_admission.admit(objects, release)
        except k8s_admission.Refused as e:
          self.fail(str(e))
        kinds = [o["kind"] for o in admitted]
        if config.kind.jobset:  # Trainer's controller built one too.
          self.assertEqual(kinds.count("JobSet"), 1, kinds)

  @parameterized.named_parameters(*_renderings())
  def test_no_gated_field_without_its_flag(self, config):
    text = json.dumps(k8s.render(config))
    for action in _GATED_ACTIONS:
      self.assertNotIn(f'"action": "{action}"', text)
    self.assertNotIn("InPlaceRestart", text)
    unported = set(k8s_admission.CEL_ON_UNRENDERED_FIELDS.values())
    for obj in k8s.render(config):  # Their CEL rules are not ported.
      if obj["kind"] in ("JobSet", "TrainJob", "ClusterTrainingRuntime"):
        for part in (obj, obj["spec"], _spec(obj)):
          self.assertEqual(unported & set(part), set(), obj["kind"])

  @parameterized.parameters("jobset", "trainjob")
  def test_restart_job_only_behind_its_flag_and_gate(self, output):
    objects = k8s.render(_config("chief_workers_ps_evaluator", output,
                                 jobset_feature_gates="RestartJob"))
    v11 = "trainer-v2.2.1" if output == "trainjob" else "jobset-v0.11.1"
    v12 = "trainer-v2.3.0" if output == "trainjob" else "jobset-v0.12.0"
    with self.assertRaisesRegex(k8s_admission.Refused, (
        r"failurePolicy.rules.1.action: 'RestartJob' is not one of "
        r"\['FailJobSet', 'RestartJobSet', "
        r"'RestartJobSetAndIgnoreMaxRestarts'\]")):
      k8s_admission.admit(objects, v11)
    with self.assertRaisesRegex(k8s_admission.Refused, (
        "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy "
        "actions are not allowed when RestartJob feature gate is disabled")):
      k8s_admission.admit(objects, v12)
    admitted = k8s_admission.admit(objects, v12, gates=("RestartJob",))
    (js,) = [o for o in admitted if o["kind"] == "JobSet"]
    self.assertIn({"name": "evaluatorRestartsAlone", "action": "RestartJob",
                   "targetReplicatedJobs": ["evaluator"]},
                  js["spec"]["failurePolicy"]["rules"])

  def test_longest_name_harness_takes_is_admitted(self):
    """--name allows 40 characters: the longest pod name still fits."""
    config = _config("workers_evaluator", name="m" * 40, workers=12)
    for output in ("jobset", "trainjob"):
      objects = k8s.render(dataclasses.replace(config, output=output))
      for release in _RELEASES[2:] if output == "trainjob" else _RELEASES:
        k8s_admission.admit(objects, release)

  def test_no_create_time_cel_rule_is_unknown(self):
    for release in _RELEASES:
      for kind in ("JobSet",) if release.startswith("jobset") else (
          "TrainJob", "ClusterTrainingRuntime"):
        with self.subTest(release=release, kind=kind):
          self.assertEqual(k8s_admission.unknown_cel_rules(release, kind), [])


def _mutate(objects, kind, change):
  objects = copy.deepcopy(objects)
  change(next(o for o in objects if o["kind"] == kind))
  return objects


def _spec(obj):
  return obj["spec"]["template"]["spec"] if obj["kind"] == (
      "ClusterTrainingRuntime") else obj["spec"]


def _rjobs(obj):
  return _spec(obj)["replicatedJobs"]


class PortedRulesRefuseTest(_ReleasedCrdsTest):
  """Each ported rule refuses what the engine refuses (none is vacuous)."""

  @parameterized.named_parameters(
      ("depends_on_first", "JobSet", lambda o: _rjobs(o)[0].update(
          dependsOn=[{"name": "worker", "status": "Ready"}]),
       "DependsOn can't be set for the first ReplicatedJob"),
      ("depends_on_later", "JobSet", lambda o: _rjobs(o)[1].update(
          dependsOn=[{"name": "evaluator", "status": "Ready"}]),
       "replicatedJob: worker cannot depend on replicatedJob: evaluator"),
      ("startup_in_order", "JobSet", lambda o: _spec(o).update(
          startupPolicy={"startupPolicyOrder": "InOrder"}),
       "StartupPolicy and DependsOn APIs are mutually exclusive"),
      ("success_target", "JobSet", lambda o: _spec(o)["successPolicy"].update(
          targetReplicatedJobs=["trainer"]),
       "invalid replicatedJob name 'trainer' does not appear in"),
      ("rule_name", "JobSet", lambda o: _spec(o)["failurePolicy"]["rules"][
          0].update(name="bad-name"), "invalid failure policy rule name"),
      ("rule_twice", "JobSet", lambda o: _spec(o)["failurePolicy"]["rules"][
          1].update(name="badFlagsFailTheJobSet"),
       "rule names are not unique, rules with indices [0, 1]"),
      ("failure_reason", "JobSet", lambda o: _spec(o)["failurePolicy"][
          "rules"][0].update(onJobFailureReasons=["OOMKilled"]),
       "invalid job failure reason 'OOMKilled'"),
      ("in_place", "JobSet", lambda o: _spec(o)["failurePolicy"].update(
          restartStrategy="InPlaceRestart"),
       "InPlaceRestart restart strategy cannot be set when InPlaceRestart "
       "feature gate is disabled"),
      ("long_pod_name", "JobSet", lambda o: o["metadata"].update(
          name="m" * 50),
       "pod names generated for this JobSet will exceed 63 characters"),
      ("ancestor_replicas", "ClusterTrainingRuntime",
       lambda o: _rjobs(o)[0].update(replicas=2), "always must be 1"),
      ("ancestor_container", "ClusterTrainingRuntime",
       lambda o: _rjobs(o)[0]["template"]["spec"]["template"]["spec"][
           "containers"][0].update(name="harness"),
       "must contain the required container for the ancestor: trainer"),
      ("trainjob_name", "TrainJob", lambda o: o["metadata"].update(
          name="MNIST"), "metadata.name must match RFC 1035 DNS label"),
      ("runtime_missing", "TrainJob", lambda o: o["spec"]["runtimeRef"]
       .update(name="elsewhere"), "specified clusterTrainingRuntime must be "
       "created before the TrainJob is created"),
      # The oracle's own rules (issue 47: disabling any of these passed).
      ("strict_schema_jobset", "JobSet", lambda o: _spec(o).update(
          restartPolicy="Never"), "('restartPolicy' was unexpected)"),
      ("strict_schema_trainjob", "TrainJob", lambda o: o["spec"].update(
          numNodes=2), "Additional properties are not allowed ('numNodes'"),
      ("replicas_times_parallelism", "JobSet", lambda o: _rjobs(o)[1].update(
          replicas=2**30), "the product of replicas and parallelism must "
       "not exceed 2147483647 for replicatedJob 'worker'"),
      ("trainjob_name_length", "TrainJob", lambda o: o["metadata"].update(
          name="m" * 64), "metadata.name must be no more than 63 characters"),
      ("managed_by", "TrainJob", lambda o: o["spec"].update(
          managedBy="example.com/x"), "ManagedBy must be trainer.kubeflow."
       "org/trainjob-controller or kueue.x-k8s.io/multikueue if set"),
      ("one_ml_policy", "ClusterTrainingRuntime", lambda o: o["spec"].update(
          mlPolicy={"torch": {}, "mpi": {}}), "Only one of the policy"),
  )
  def test_rule_refuses(self, kind, change, sentence):
    output = "jobset" if kind == "JobSet" else "trainjob"
    objects = k8s.render(_config("chief_workers_ps_evaluator", output))
    releases = _RELEASES[:2] if kind == "JobSet" else _RELEASES[2:]
    for release in releases:
      with self.subTest(release=release):
        k8s_admission.admit(objects, release)  # As rendered: admitted.
        with self.assertRaises(k8s_admission.Refused) as caught:
          k8s_admission.admit(_mutate(objects, kind, change), release)
        self.assertIn(sentence, str(caught.exception))


class ExitStatusContractTest(parameterized.TestCase):
  """harness/errors.py's exit statuses, rendered into failure policies."""

  @parameterized.parameters(*_OUTPUTS)
  def test_every_job_fails_on_bad_config_and_ignores_preemption(self,
                                                                output):
    objects = k8s.render(_config("chief_workers_ps_evaluator", output))
    jobs = list(_jobs_of(objects))
    self.assertGreaterEqual(len(jobs), 2)
    for job, pod in jobs:
      rules = job["podFailurePolicy"]["rules"]
      names = {c["name"] for c in pod["containers"]}
      by_code = {tuple(r["onExitCodes"]["values"]): r for r in rules
                 if "onExitCodes" in r}
      self.assertEqual(by_code[(errors.EXIT_BAD_CONFIG,)]["action"],
                       "FailJob")
      self.assertEqual(by_code[(errors.EXIT_PREEMPTED,)]["action"], "Ignore")
      for rule in by_code.values():
        self.assertIn(rule["onExitCodes"]["containerName"], names)
      self.assertIn({"action": "Ignore", "onPodConditions": [
          {"type": "DisruptionTarget", "status": "True"}]}, rules)
      self.assertEqual(pod["restartPolicy"], "Never")  # podFailurePolicy's.
      self.assertNotIn(errors.EXIT_FAILED, sum(
          (r["onExitCodes"]["values"] for r in by_code.values()), []))

  @parameterized.parameters("jobset", "trainjob")
  def test_jobset_rules_in_order(self, output):
    objects = k8s.render(_config("chief_workers_ps_evaluator", output))
    spec = next(_spec(o) for o in objects if o["kind"] in (
        "JobSet", "ClusterTrainingRuntime"))
    rules = spec["failurePolicy"]["rules"]
    self.assertEqual([(r["action"], r.get("targetReplicatedJobs"),
                       r.get("onJobFailureReasons")) for r in rules], [
        ("FailJobSet", None, ["PodFailurePolicy"]),  # exit 2: fail it all
        ("FailJobSet", ["evaluator"], None),  # its own retries used up
        ("RestartJobSet", ["chief", "worker", "ps"], None)])
    backoff = {rj["name"]: rj["template"]["spec"]["backoffLimit"]
               for rj in spec["replicatedJobs"]}
    self.assertEqual(backoff, {"chief": 0, "worker": 0, "ps": 0,
                               "evaluator": 3})
    self.assertEqual(spec["failurePolicy"]["maxRestarts"], 3)
    self.assertEqual(spec["replicatedJobs"][-1]["dependsOn"],
                     [{"name": "chief", "status": "Ready"}])


class PodContractTest(parameterized.TestCase):

  @parameterized.named_parameters(*_renderings())
  def test_grace_period_in_every_pod(self, config):
    specs = _pod_specs(k8s.render(config))
    self.assertNotEmpty(specs)
    for spec in specs:
      self.assertEqual(spec["terminationGracePeriodSeconds"], 60)

  def test_grace_period_follows_the_flag_and_the_stop_bound(self):
    config = _config("workers_only", termination_grace_secs=75,
                     main_args=_LINEAR + ("--stop_timeout_secs=50",))
    for spec in _pod_specs(k8s.render(config)):
      self.assertEqual(spec["terminationGracePeriodSeconds"], 75)
    with self.assertRaisesRegex(errors.FlagError, "stop checkpoint"):
      _config("workers_only", termination_grace_secs=65,
              main_args=_LINEAR + ("--stop_timeout_secs=50",))

  @parameterized.parameters("jobset", "trainjob")
  def test_restart_attempt_reaches_every_pod(self, output):
    objects = k8s.render(_config("chief_workers_ps_evaluator", output))
    pods = _jobset_pods(objects, "mnist", restart_attempt=2)
    self.assertLen(pods, 5)
    for _, _, env in pods.values():
      self.assertEqual(env[restart_attempt.RESTART_ATTEMPT_ENV], "2")
    jobs = k8s.render(_config("chief_workers_ps_evaluator", "jobs"))
    self.assertNotIn(restart_attempt.RESTART_ATTEMPT_ENV, json.dumps(jobs))

  def test_entrypoint_execs_python_as_the_containers_process(self):
    """The shell `exec`s harness.main: it keeps the pod's PID (1)."""
    objects = k8s.render(_config("workers_only", "jobs"))
    job = next(o for o in objects if o["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env.update({v["name"]: v["value"] for v in container["env"]},
               JOB_COMPLETION_INDEX="1", PYTHONPATH=os.getcwd())
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    proc = _processes.popen(
        container["command"] + ["python", "-c",
                                "import os; print(os.getpid())"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    self.assertEqual(proc.returncode, 0, err)
    self.assertEqual(int(out), proc.pid)


class TrainerControllerTest(_ReleasedCrdsTest):
  """What Trainer v2.3.0 does with harness's runtime (its source, ported)."""

  def _built(self, shape, **trainjob_spec):
    objects = k8s.render(_config(shape, "trainjob"))
    runtime, trainjob = objects[0], copy.deepcopy(objects[1])
    trainjob["spec"].update(trainjob_spec)
    return k8s_trainer_admission.trainer_jobset(runtime, trainjob,
                                                gates=("TrainJobStatus",))

  @parameterized.parameters("workers_only", "workers_evaluator",
                            "chief_workers_ps_evaluator")
  def test_pods_derive_the_tf_config_of_the_jobset_rendering(self, shape):
    built = self._built(shape)
    k8s_admission.admit_jobset(built, "jobset-v0.12.0")
    jobset = k8s.render(_config(shape, "jobset"))
    expected = {task: json.loads(k8s.tf_config_from_environ(env))
                for task, (_, _, env) in _jobset_pods(jobset, "mnist").items()}
    derived = {task: json.loads(k8s.tf_config_from_environ(env))
               for task, (_, _, env) in _jobset_pods([built], "mnist").items()}
    self.assertEqual(derived, expected)

  def test_the_lead_gets_trainers_status_variables_nothing_else_changes(self):
    built = self._built("chief_workers_ps_evaluator")
    rjobs = {rj["name"]: rj for rj in built["spec"]["replicatedJobs"]}
    self.assertEqual(
        [n for n, rj in rjobs.items() if rj["template"]["metadata"][
            "labels"].get(k8s_trainer_admission.ANCESTOR_LABEL)], ["chief"])
    for name, rj in rjobs.items():
      (container,) = rj["template"]["spec"]["template"]["spec"]["containers"]
      env = {v["name"] for v in container["env"]}
      has = set(k8s_trainer_admission.TRAINER_STATUS_ENV) <= env
      self.assertEqual(has, name == "chief", name)
    self.assertEqual(built["metadata"]["name"], "mnist")  # The TrainJob's.
    self.assertEqual({n: rj["template"]["spec"]["parallelism"]
                      for n, rj in rjobs.items()},
                     {"chief": 1, "worker": 2, "ps": 1, "evaluator": 1})

  def test_num_nodes_would_resize_the_lead_and_its_pods_say_so(self):
    """Trainer's numNodes scales the trainer ancestor (plainml.go:56-60);
    harness renders none, and a pod outside the cluster fails clearly."""
    built = self._built("chief_workers_ps_evaluator",
                        trainer={"numNodes": 2})
    pods = _jobset_pods([built], "mnist")
    self.assertIn(("chief", 1), pods)
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "pod index 1 of 'chief' is outside its 1"):
      cluster.from_environ(pods[("chief", 1)][2])


if __name__ == "__main__":
  absltest.main()
