"""Guard: the facts the plan decides are decided nowhere else, checked with
`ast` over harness/.

The plan (`harness/plan/`) decides this process's role, the chief and the
one-machine rule once, from `harness/cluster/`'s job names and rules;
everything else reads `plan.role`, `plan.is_chief` and the plan's
problems. A rebuild is:
- a task's `task_type` (`config.task_type`, `info.task_type`) compared
  with a job name, or a table from job names to `Role`s, or `Role(...)`;
- a sequence naming both "master" and "chief" (a chief order);
- a call of the one-machine rule, `check_one_machine_strategy`.
tf.estimator 2.15's own reads, kept for subclasses and Mocks, and library
functions that take no plan are listed in `ALLOWED`, each with why. Each
kind of rebuild has a synthetic violation below showing that it fails.
"""

import ast
import pathlib

from absl.testing import absltest

import harness

HARNESS_DIR = pathlib.Path(harness.__file__).parent
# Where the facts are decided: the plan, and the cluster rules it runs.
DECIDING = ("plan", "cluster")
JOB_NAMES = frozenset({"chief", "worker", "ps", "evaluator", "master"})
JOB_CONSTANTS = frozenset({"CHIEF", "WORKER", "PS", "EVALUATOR", "MASTER",
                           "TRAINER_JOBS"})
# (module, function) -> why it may read the task type itself.
ALLOWED = {
    ("estimator.py", "train"): "2.15's Estimator.train refuses an evaluator "
    "or ps task from its config's task_type (subclasses and Mocks)",
    ("training.py", "_task_of"): "2.15's stand-ins (a Mock, a RunConfig "
    "subclass) get 2.15's rule; a RunConfig's role is its plan's",
    ("training.py", "_start_std_server"): "2.15's _TrainingExecutor method, "
    "called on stand-ins too",
    ("tpu/tpu_config.py", "__init__"): "2.15's TPU RunConfig: its "
    "evaluation_master from its own task_type property",
    ("distribute/evaluator_guard.py", "install"): "a library "
    "function given a ClusterInfo, not a plan (the binary calls it for "
    "Role.EVALUATOR only)",
    ("distribute/strategies.py", "_check_cluster_fits"): "make_strategy's "
    "check of a cluster its caller passes in, with no plan",
}


def _job_like(node):
  if isinstance(node, ast.Constant):
    return node.value in JOB_NAMES
  if isinstance(node, ast.Attribute):
    return node.attr in JOB_CONSTANTS
  if isinstance(node, ast.Name):
    return node.id in JOB_CONSTANTS
  if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
    return any(_job_like(e) for e in node.elts)
  return False


def _name_of(node):
  """"master" for "master", MASTER or cluster_lib.MASTER, else None."""
  if isinstance(node, ast.Constant) and isinstance(node.value, str):
    return node.value.lower()
  if isinstance(node, ast.Attribute):
    return node.attr.lower()
  if isinstance(node, ast.Name):
    return node.id.lower()
  return None


def _is_role(node):
  """`Role.X` or `<module>.Role.X`."""
  return isinstance(node, ast.Attribute) and (
      (isinstance(node.value, ast.Name) and node.value.id == "Role") or
      (isinstance(node.value, ast.Attribute) and node.value.attr == "Role"))


def _rebuild(node):
  """What `node` rebuilds, or None."""
  if isinstance(node, ast.Compare):
    sides = [node.left] + node.comparators
    if any(isinstance(s, ast.Attribute) and s.attr == "task_type"
           for s in sides) and any(_job_like(s) for s in sides):
      return "the role, from a task_type compared with a job name"
  if isinstance(node, ast.Dict) and any(_is_role(v) for v in node.values) and (
      any(k is not None and _job_like(k) for k in node.keys)):
    return "the role, from a table of job names to Roles"
  if isinstance(node, ast.Call):
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(
        func, "id", None)
    if name == "Role":
      return "the role, built with Role(...)"
    if name == "check_one_machine_strategy":
      return "the one-machine rule"
  if isinstance(node, (ast.Tuple, ast.List)) and {"master", "chief"} <= {
      _name_of(e) for e in node.elts}:
    return "the chief, from an order of master and chief"
  return None


def rebuilds(relative, source, allowed=None):
  """["module:line (function): what"] for each rebuild in `source` (a
  (module, function) of `allowed`, default `ALLOWED`, excepted)."""
  allowed = ALLOWED if allowed is None else allowed
  if pathlib.PurePosixPath(relative).parts[0] in DECIDING:
    return []
  found = []

  def visit(node, function):
    for child in ast.iter_child_nodes(node):
      inner = child.name if isinstance(
          child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
      what = _rebuild(child)
      if what and (relative, function) not in allowed:
        found.append(f"{relative}:{child.lineno} ({function}): rebuilds "
                     f"{what}; read the plan (plan.role, plan.is_chief, "
                     "plan_lib.raise_problem) or decide it in harness/plan/")
      visit(child, inner)

  visit(ast.parse(source), None)
  return found


def _tree():
  return {str(p.relative_to(HARNESS_DIR)): p.read_text()
          for p in sorted(HARNESS_DIR.rglob("*.py"))}


class PlanFactsTest(absltest.TestCase):

  def test_no_rebuild_outside_the_plan(self):
    found = []
    for relative, source in _tree().items():
      found += rebuilds(relative, source)
    self.assertEqual(found, [])

  def test_every_allowed_read_is_still_there(self):
    # An entry whose read is gone goes too (the list does not rot).
    tree = _tree()
    for entry in ALLOWED:
      relative, function = entry
      source = tree[relative]
      without = rebuilds(relative, source, allowed={
          k: v for k, v in ALLOWED.items() if k != entry})
      self.assertGreater(len(without), len(rebuilds(relative, source)),
                         f"{relative} {function}: nothing rebuilt there")

  def test_a_task_type_compared_with_a_job_fails(self):
    for source in ("def f(config):\n  return config.task_type == 'ps'\n",
                   "def f(info):\n"
                   "  return info.task_type in cluster_lib.TRAINER_JOBS\n",
                   "def f(config):\n"
                   "  return config.task_type != jobs.EVALUATOR\n"):
      self.assertLen(rebuilds("distribute/x.py", source), 1, source)
    self.assertEqual(rebuilds(
        "distribute/x.py",
        "def f(config):\n  return config.plan.role == Role.PS\n"), [])

  def test_a_role_table_or_construction_fails(self):
    table = ("def f(t):\n  return {jobs.PS: plan_lib.Role.PS}.get(\n"
             "      t, plan_lib.Role.TRAINER)\n")
    self.assertLen(rebuilds("core/x.py", table), 1)
    self.assertLen(rebuilds("cli/x.py", "r = plan_lib.Role('ps')\n"), 1)

  def test_a_chief_order_fails(self):
    source = ("def chief(jobs):\n  for job in (cluster_lib.MASTER, "
              "cluster_lib.CHIEF, cluster_lib.WORKER):\n    pass\n")
    self.assertLen(rebuilds("cli/mode_runners.py", source), 1)
    self.assertLen(rebuilds("distribute/remote_servers.py",
                            "ORDER = ('chief', 'master', 'worker')\n"), 1)

  def test_the_one_machine_rule_outside_the_plan_fails(self):
    source = ("def f(kind, jobs):\n"
              "  tf_config_checks.check_one_machine_strategy(kind, jobs)\n")
    self.assertLen(rebuilds("cli/plan.py", source), 1)
    self.assertLen(rebuilds("distribute/roles.py", source), 1)

  def test_the_plan_and_cluster_decide(self):
    source = ("def f(info):\n  return info.task_type == 'ps'\n"
              "ORDER = ('master', 'chief', 'worker')\n")
    self.assertEqual(rebuilds("plan/task.py", source), [])
    self.assertEqual(rebuilds("cluster/jobs.py", source), [])

  def test_an_allowed_read_elsewhere_in_its_module_fails(self):
    source = ("def train(config):\n  return config.task_type == 'ps'\n"
              "def other(config):\n  return config.task_type == 'ps'\n")
    found = rebuilds("estimator.py", source)
    self.assertLen(found, 1)
    self.assertIn("(other)", found[0])


if __name__ == "__main__":
  absltest.main()
