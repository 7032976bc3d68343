"""The plan door: what this process is in its job, decided once, no TensorFlow.

    from harness import plan as plan_lib

    plan = plan_lib.plan_task(info, strategy="collective",
                              run_config_model_dir="/m", environ=os.environ)
    plan.role, plan.task_label, plan.is_chief, plan.knobs["peer_timeout_secs"]
    plan_lib.raise_problem(plan, plan_lib.Stage.TRAIN)  # 2.15's error
    plan_lib.in_process(plan)  # a one-process job's local plan

`task` holds `TaskPlan` and `plan_task`, the one function that decides the
role, task label, chief, model_dir, replicas and knobs; `knobs` resolves
the fields with an environment fallback; `one_process` decides who runs a
one-process job (evaluate / predict / export) in a cluster, and how.
The plan's floor: below `core/`, `guard/`, `telemetry/`, `distribute/`,
`run_config/` and `cli/` (which read it), above `state/`, `fields/` and
`cluster/` (which it reads); tests/test_layering.py holds the rule.
"""

from harness.plan.knobs import RESTART_ATTEMPT
from harness.plan.one_process import in_process
from harness.plan.one_process import one_process_task
from harness.plan.one_process import runs_one_process_job
from harness.plan.task import CLUSTER_RULES
from harness.plan.task import MODEL_DIR
from harness.plan.task import ONE_MACHINE
from harness.plan.task import Problem
from harness.plan.task import raise_problem
from harness.plan.task import Role
from harness.plan.task import RUN_CONFIG_RULES
from harness.plan.task import Stage
from harness.plan.task import TaskPlan
from harness.plan.task import plan_task

__all__ = ["Role", "Stage", "Problem", "TaskPlan", "plan_task",
           "raise_problem", "RUN_CONFIG_RULES", "CLUSTER_RULES", "MODEL_DIR",
           "ONE_MACHINE", "RESTART_ATTEMPT", "one_process_task",
           "runs_one_process_job", "in_process"]
