"""The cluster door: TF_CONFIG text -> the facts of a task, and their rules.

    from harness import cluster

    info = cluster.from_environ(os.environ)    # None when TF_CONFIG is unset
    if info is not None:
      cluster.validate(info, has_strategy=True, strategy_kind="collective")
      facts = cluster.derive(info, has_strategy=True)
      facts.is_chief, facts.master, info.task_label   # "worker/1"

Nothing here imports TensorFlow or another harness folder (only
`harness.errors`), so the TF_CONFIG parser and `python -m harness.launch`
start in milliseconds.
"""

# pylint: disable=unused-import
from harness.cluster.env_knobs import NotGiven
from harness.cluster.jobs import CHIEF
from harness.cluster.jobs import CHIEF_ORDER
from harness.cluster.jobs import CLIENT_LABEL
from harness.cluster.jobs import EVALUATOR
from harness.cluster.jobs import LOCAL_LABEL
from harness.cluster.jobs import MASTER
from harness.cluster.jobs import PS
from harness.cluster.jobs import TRAINER_JOBS
from harness.cluster.jobs import WORKER
from harness.cluster.jobs import chief_task
from harness.cluster.jobs import num_trainers
from harness.cluster.jobs import split_task_label
from harness.cluster.jobs import task_label
from harness.cluster.task_facts import TaskFacts
from harness.cluster.task_facts import derive
from harness.cluster.task_facts import device_filters
from harness.cluster.task_facts import evaluation_master
from harness.cluster.task_facts import global_id_in_cluster
from harness.cluster.task_facts import is_chief
from harness.cluster.task_facts import master_address
from harness.cluster.task_facts import num_ps_replicas
from harness.cluster.task_facts import num_worker_replicas
from harness.cluster.tf_config import ClusterInfo
from harness.cluster.tf_config import TF_CONFIG_ENV
from harness.cluster.tf_config import TFConfigJSONError
from harness.cluster.tf_config import from_environ
from harness.cluster.tf_config import parse_remote_cluster
from harness.cluster.tf_config import parse_tf_config
from harness.cluster.tf_config_rules import check_servable
from harness.cluster.tf_config_checks import check_strategy_jobs
from harness.cluster.tf_config_rules import validate
from harness.cluster.tf_config_rules import validate_run_config
