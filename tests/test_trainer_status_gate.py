"""The TrainJob progress reporter on a default install (Trainer PR #3861
makes the gate `TrainJobStatus` default-on).

With the gate on, Kubeflow Trainer injects its status variables into the
trainer ancestor's pods only (tests/k8s_trainer_admission.py, ported from
v2.3.0). Every pod of harness's runtime is planned here with its own
environment: exactly one task, the job's voice (the chief, or worker 0
without one), has an endpoint and posts; the pods without the variables
have none and log nothing about it. A refusing server is one line
(tests/test_trainer_status.py `test_refused_one_line_with_the_servers_
message`).
"""

import json

from absl import logging as absl_logging
from absl.testing import absltest
from absl.testing import parameterized

from harness import k8s
from harness.cli import job as job_lib
from harness.cli import job_config
from harness.cli import plan as plan_lib
from tests import k8s_trainer_admission
from tests.test_k8s_jobset import _jobset_pods

_SHAPES = {"workers_only": (dict(workers=2), "collective"),
           "chief_workers_ps_evaluator": (dict(
               workers=2, chief=True, ps=1, evaluator=True),
                                          "parameter_server")}


def _built(shape):
  config = k8s.K8sConfig(
      name="mnist", image="registry.example.com/harness:0.1",
      output="trainjob", model_dir="gs://b/m", main_args=(
          "--model_fn=linear", "--input_fn=constant",
          f"--strategy={_SHAPES[shape][1]}"), **_SHAPES[shape][0])
  runtime, trainjob, _ = k8s.render(config)
  return k8s_trainer_admission.trainer_jobset(runtime, trainjob,
                                              gates=("TrainJobStatus",))


class DefaultOnGateTest(parameterized.TestCase):

  @parameterized.parameters(*_SHAPES)
  def test_only_the_jobs_voice_posts_the_rest_stay_silent(self, shape):
    voices = []
    for (task_type, index), (_, _, env) in _jobset_pods(
        [_built(shape)], "mnist").items():
      env = dict(env, TF_CONFIG=k8s.tf_config_from_environ(env))
      has_variables = all(name in env for name in
                          k8s_trainer_admission.TRAINER_STATUS_ENV)
      with self.assertNoLogs(absl_logging.get_absl_logger(), "WARNING"):
        plan = plan_lib.plan_job(job_config.JobConfig(
            strategy=_SHAPES[shape][1], model_dir="gs://b/m"), environ=env)
        endpoint = job_lib.trainer_status_endpoint(env)
      self.assertEqual(endpoint is not None, has_variables, (task_type, index))
      if endpoint and job_lib._is_cluster_voice(plan):  # pylint: disable=protected-access
        voices.append(json.loads(env["TF_CONFIG"])["task"])
    lead = "chief" if "chief" in shape else "worker"
    self.assertEqual(voices, [{"type": lead, "index": 0}])


if __name__ == "__main__":
  absltest.main()
