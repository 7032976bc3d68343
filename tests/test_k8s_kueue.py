"""`python -m harness.k8s --queue_name=Q`: every workload queued in Kueue.

Kueue admits a JobSet, TrainJob, batch Job, TFJob or StatefulSet by its
`kueue.x-k8s.io/queue-name` label; the kinds that have a suspend flag are
rendered suspended (Kueue unsuspends them once admitted, and suspends them
again to preempt). Each rendering must still be admitted by the released
JobSet and Kubeflow Trainer rules (tests/k8s_admission.py) and validate as
built-in objects (kubernetes-validate, strict).
"""

from absl.testing import absltest
from absl.testing import parameterized
import kubernetes_validate

from harness import errors
from harness import k8s
from tests import k8s_admission

_IMAGE = "registry.example.com/harness:0.1"
_LINEAR = ("--model_fn=linear", "--input_fn=constant", "--max_steps=20")
_QUEUE = "team-a"
_LABEL = "kueue.x-k8s.io/queue-name"
# Output -> {kind: its suspend flag's path, or None (no such flag)}.
_WORKLOADS = {
    "jobset": {"JobSet": ("spec",)},
    "trainjob": {"TrainJob": ("spec",)},
    "jobs": {"Job": ("spec",)},
    "tfjob": {"TFJob": ("spec", "runPolicy"), "Job": ("spec",)},
    "servers": {"StatefulSet": None},
}


def _config(output, **overrides):
  kwargs = dict(name="mnist", image=_IMAGE, namespace="team-a", workers=2,
                output=output)
  if output != "servers":
    kwargs.update(evaluator=True, pvc="harness-model", tensorboard=True,
                  main_args=_LINEAR + ("--strategy=collective",))
  kwargs.update(overrides)
  return k8s.K8sConfig(**kwargs)


def _suspend(obj, path):
  for key in path:
    obj = obj[key]
  return obj.get("suspend")


class QueueNameTest(parameterized.TestCase):

  @parameterized.parameters(*_WORKLOADS)
  def test_every_workload_is_labelled_and_suspended(self, output):
    objects = k8s.render(_config(output, queue_name=_QUEUE))
    kinds = _WORKLOADS[output]
    queued = [o for o in objects if o["kind"] in kinds]
    self.assertNotEmpty(queued)
    # Every Job the rendering makes (the evaluator's too) is in the queue.
    self.assertEqual(len(queued), sum(1 for o in objects
                                      if o["kind"] in kinds))
    for obj in objects:
      labels = obj["metadata"].get("labels", {})
      if obj["kind"] not in kinds:  # Services, policies, the runtime,
        self.assertNotIn(_LABEL, labels, obj["kind"])  # TensorBoard.
        continue
      self.assertEqual(labels[_LABEL], _QUEUE, obj["kind"])
      if kinds[obj["kind"]] is not None:
        self.assertIs(_suspend(obj, kinds[obj["kind"]]), True, obj["kind"])
      if obj["kind"] not in ("JobSet", "TrainJob", "TFJob"):
        kubernetes_validate.validate(obj, "1.33", strict=True)

  @parameterized.parameters(*_WORKLOADS)
  def test_without_a_queue_nothing_changes(self, output):
    objects = k8s.render(_config(output))
    text = repr(objects)
    self.assertNotIn(_LABEL, text)
    self.assertNotIn("'suspend'", text)

  @parameterized.parameters("jobset", "trainjob")
  def test_admitted_by_every_release(self, output):
    objects = k8s.render(_config(output, queue_name=_QUEUE))
    for release in k8s_admission.RELEASES:
      if output == "trainjob" and release.startswith("jobset"):
        continue  # A JobSet-only cluster has no TrainJob (test_k8s_admission).
      with self.subTest(release=release):
        try:
          admitted = k8s_admission.admit(objects, release)
        except k8s_admission.Refused as e:
          self.fail(str(e))
        self.assertIn({"jobset": "JobSet", "trainjob": "TrainJob"}[output],
                      [o["kind"] for o in admitted])

  def test_cli_renders_the_label(self):
    out = []

    class Sink:
      write = out.append

    status = k8s.main(["harness.k8s", "--name=mnist", "--workers=2",
                       f"--image={_IMAGE}", "--pvc=m", "--queue_name=team-a"],
                      stdout=Sink(), stderr=Sink())
    self.assertEqual(status, 0, "".join(out))
    self.assertIn("kueue.x-k8s.io/queue-name: team-a", "".join(out))

  @parameterized.parameters("Team_A", "", "-a", "a" * 64)
  def test_a_bad_queue_name_is_refused_naming_the_flag(self, name):
    with self.assertRaisesRegex(errors.FlagError,
                                r"--queue_name=.*DNS label.*--queue_name="
                                r"team-a"):
      _config("jobset", queue_name=name)


if __name__ == "__main__":
  absltest.main()
