"""The launcher door: a whole training cluster on this machine.

From a shell, one subprocess a task, each with its own TF_CONFIG::

    python -m harness.launch --workers=2 --evaluator -- \\
        python -m harness.main --model_dir=/tmp/m ...

From Python::

    import harness.launch

    code = harness.launch.launch(["python", "train.py"], workers=2, ps=1)
    configs = harness.launch.build_tf_configs(workers=2, ps=1)
    configs["worker/1"]["task"]   # {"type": "worker", "index": 1}

`cli.py` builds the cluster and is the binary (`__main__.py` runs it),
`supervisor.py` runs the tasks, `netns.py` gives them a private network,
`ports.py` picks free ports. Nothing here imports TensorFlow, and nothing
else in harness imports this package.
"""

# pylint: disable=unused-import
from harness.launch.cli import build_tf_configs
from harness.launch.cli import launch
from harness.launch.cli import run
from harness.launch.cli import task_names
from harness.launch.netns import MODES as NETWORK_ISOLATIONS
from harness.launch.supervisor import TIMEOUT_EXIT_CODE

__all__ = [
    # Running a cluster.
    "launch",
    "run",
    "NETWORK_ISOLATIONS",
    "TIMEOUT_EXIT_CODE",
    # Its TF_CONFIGs.
    "build_tf_configs",
    "task_names",
]
