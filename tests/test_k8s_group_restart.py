"""`python -m harness.k8s --restart_policy=group`: a disruption restarts
the whole JobSet, without spending its restart budget.

A trainer pod with the `DisruptionTarget` condition (evicted, preempted)
fails its Job through the podFailurePolicy (`FailJob`); the JobSet's first
failurePolicy rule matches that failure by reason (`PodFailurePolicy`) and
by Kubernetes' message ("... has condition DisruptionTarget matching
FailJob rule ...") and restarts the group with
`RestartJobSetAndIgnoreMaxRestarts`. The rendering must be admitted by
JobSet v0.11.1 and v0.12.0 and Kubeflow Trainer v2.2.1 and v2.3.0 with
default feature gates (tests/k8s_admission.py). `_outcome` plays the
rendered policies the way the Job and JobSet controllers apply them (first
matching rule) for each kind of pod end.
"""

import re

from absl.testing import absltest
from absl.testing import parameterized
import kubernetes_validate

from harness import errors
from harness import k8s
from tests import k8s_admission

_IMAGE = "registry.example.com/harness:0.1"
_MAIN = ("--model_fn=linear", "--input_fn=constant", "--max_steps=20",
         "--strategy=collective")


def _config(output="jobset", **overrides):
  kwargs = dict(name="mnist", image=_IMAGE, workers=2, evaluator=True,
                pvc="harness-model", output=output, main_args=_MAIN)
  kwargs.update(overrides)
  return k8s.K8sConfig(**kwargs)


def _jobset_spec(objects):
  for obj in objects:
    if obj["kind"] == "JobSet":
      return obj["spec"]
    if obj["kind"] == "ClusterTrainingRuntime":
      return obj["spec"]["template"]["spec"]
  raise AssertionError("no JobSet spec rendered")


def _job_message(rule_index, rule, pod):
  """The Job failure message Kubernetes writes for a `FailJob` match
  (pkg/controller/job/pod_failure_policy.go)."""
  if "onPodConditions" in rule:
    return (f"Pod default/{pod} has condition DisruptionTarget matching "
            f"FailJob rule at index {rule_index}")
  return (f"Container harness for pod default/{pod} failed with exit code "
          f"{rule['onExitCodes']['values'][0]} matching FailJob rule at "
          f"index {rule_index}")


def _outcome(spec, replicated_job, exit_code, disrupted):
  """What the controllers do when one pod of `replicated_job` ends so."""
  rj = next(r for r in spec["replicatedJobs"] if r["name"] == replicated_job)
  job = rj["template"]["spec"]
  for i, rule in enumerate(job["podFailurePolicy"]["rules"]):
    codes = rule.get("onExitCodes", {}).get("values", ())
    if exit_code in codes or (disrupted and "onPodConditions" in rule):
      action = rule["action"]
      break
  else:
    action = "Count"
  if action == "Ignore":
    return "pod replaced"
  if action == "FailJob":
    reason, message = "PodFailurePolicy", _job_message(i, rule, "p")
  elif job["backoffLimit"] == 0:
    reason, message = "BackoffLimitExceeded", "backoff limit"
  else:
    return "pod retried"
  for rule in spec["failurePolicy"]["rules"]:
    if (reason in rule.get("onJobFailureReasons", [reason])
        and replicated_job in rule.get("targetReplicatedJobs",
                                       [replicated_job])
        and (not rule.get("onJobFailureMessagePatterns") or any(
            re.search(p, message)
            for p in rule["onJobFailureMessagePatterns"]))):
      return rule["action"]
  return "RestartJobSet"


class GroupRestartTest(parameterized.TestCase):

  @parameterized.parameters("jobset", "trainjob")
  def test_disruption_restarts_the_group_uncounted(self, output):
    spec = _jobset_spec(k8s.render(_config(output, restart_policy="group")))
    self.assertEqual(_outcome(spec, "worker", 143, disrupted=True),
                     "RestartJobSetAndIgnoreMaxRestarts")
    self.assertEqual(_outcome(spec, "worker", 137, disrupted=True),
                     "RestartJobSetAndIgnoreMaxRestarts")
    # The rest of the contract is unchanged.
    self.assertEqual(_outcome(spec, "worker", 2, disrupted=False),
                     "FailJobSet")
    self.assertEqual(_outcome(spec, "worker", 143, disrupted=False),
                     "pod replaced")
    self.assertEqual(_outcome(spec, "worker", 1, disrupted=False),
                     "RestartJobSet")
    # The evaluator is not in the group: its disrupted pod is replaced.
    self.assertEqual(_outcome(spec, "evaluator", 143, disrupted=True),
                     "pod replaced")

  def test_pod_policy_is_the_default_and_replaces_the_pod(self):
    config = _config()
    self.assertEqual(config.restart_policy, "pod")
    spec = _jobset_spec(k8s.render(config))
    self.assertEqual(_outcome(spec, "worker", 143, disrupted=True),
                     "pod replaced")
    self.assertNotIn("RestartJobSetAndIgnoreMaxRestarts", repr(spec))

  @parameterized.parameters("jobset", "trainjob")
  def test_admitted_by_every_release_with_default_gates(self, output):
    objects = k8s.render(_config(output, restart_policy="group", chief=True,
                                 ps=1, queue_name="team-a"))
    for release in k8s_admission.RELEASES:
      if output == "trainjob" and release.startswith("jobset"):
        continue  # No TrainJob without Trainer (test_k8s_admission).
      with self.subTest(release=release):
        try:
          admitted = k8s_admission.admit(objects, release)
        except k8s_admission.Refused as e:
          self.fail(str(e))
        (jobset,) = [o for o in admitted if o["kind"] == "JobSet"]
        first = jobset["spec"]["failurePolicy"]["rules"][0]
        self.assertEqual(first["action"], "RestartJobSetAndIgnoreMaxRestarts")
    for rj in _jobset_spec(objects)["replicatedJobs"]:  # Built-in Jobs.
      kubernetes_validate.validate(
          {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": f"mnist-{rj['name']}"},
           "spec": rj["template"]["spec"]}, "1.33", strict=True)

  @parameterized.parameters("jobs", "tfjob", "servers")
  def test_outputs_without_a_jobset_refuse_group(self, output):
    overrides = dict(evaluator=False, pvc=None, main_args=()) if (
        output == "servers") else {}
    with self.assertRaisesRegex(errors.FlagError,
                                r"--restart_policy='group'.*only a JobSet"):
      _config(output, restart_policy="group", **overrides)

  def test_an_unknown_policy_is_refused(self):
    with self.assertRaisesRegex(errors.FlagError,
                                r"--restart_policy='job'.*must be pod"):
      _config(restart_policy="job")


if __name__ == "__main__":
  absltest.main()
