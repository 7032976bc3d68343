"""Tests of harness.cluster.tf_config: TF_CONFIG parsing, validation, derived facts.

TensorFlow-free: run with `.venv/bin/python -m pytest tests/test_cluster.py -q`.
"""

import ast
import json
import pathlib
import sys

from absl.testing import absltest
from absl.testing import parameterized

from harness import cluster
from harness import errors
from harness.cluster import tf_config_checks

_FULL = {"chief": ["h0:2222"], "ps": ["h1:2222", "h2:2222"],
         "worker": ["h3:2222", "h4:2222", "h5:2222"]}


def _info(cluster_dict, task_type=None, task_id=0, **kwargs):
  config = {"cluster": cluster_dict, **kwargs}
  if task_type is not None:
    config["task"] = {"type": task_type, "index": task_id}
  return cluster.parse_tf_config(json.dumps(config))


class ParseTest(parameterized.TestCase):

  @parameterized.parameters((None,), ("",), ("   \n",), ("{}",), (b"",), ({},))
  def test_nothing_configured_is_none(self, value):
    self.assertIsNone(cluster.parse_tf_config(value))

  def test_from_environ(self):
    self.assertIsNone(cluster.from_environ({}))
    self.assertIsNone(cluster.from_environ({"TF_CONFIG": ""}))
    info = cluster.from_environ({"TF_CONFIG": json.dumps(
        {"cluster": _FULL, "task": {"type": "worker", "index": 1}})})
    self.assertEqual(info.cluster, _FULL)
    self.assertEqual((info.task_type, info.task_id), ("worker", 1))
    self.assertEqual(info.source, "TF_CONFIG")

  def test_all_fields(self):
    text = json.dumps({
        "cluster": _FULL, "task": {"type": "ps", "index": "1", "trial": "3"},
        "rpc_layer": "grpc+verbs", "environment": "cloud", "model_dir": "/m",
        "service": {"name": "x"}, "session_master": "grpc://s:1",
        "eval_session_master": "grpc://e:1", "job": {"ignored": True}})
    info = cluster.parse_tf_config(text.encode("utf-8"))
    self.assertEqual(info, cluster.ClusterInfo(
        cluster=_FULL, task_type="ps", task_id=1, rpc_layer="grpc+verbs",
        environment="cloud", model_dir="/m", service={"name": "x"},
        session_master="grpc://s:1", eval_session_master="grpc://e:1"))

  def test_mapping_input(self):
    info = cluster.parse_tf_config(
        {"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})
    self.assertEqual(info.task_id, 0)
    self.assertEqual(info.rpc_layer, "grpc")
    self.assertIsNone(info.model_dir)

  @parameterized.named_parameters(
      ("full", {"cluster": _FULL, "task": {"type": "chief", "index": 0}}),
      ("evaluator", {"cluster": _FULL, "task": {"type": "evaluator",
                                                "index": 0}}),
      ("extras", {"cluster": {"worker": ["a:1", "b:2"]},
                  "task": {"type": "worker", "index": 1},
                  "rpc_layer": "grpc+verbs", "model_dir": "/m",
                  "environment": "cloud", "service": {"k": [1]},
                  "session_master": "s", "eval_session_master": "e"}),
      ("no_cluster", {"model_dir": "/m"}),
      ("local_task", {"task": {"type": "worker", "index": 0},
                      "environment": "x"}),
  )
  def test_to_json_round_trips(self, config):
    info = cluster.parse_tf_config(json.dumps(config))
    again = cluster.parse_tf_config(info.to_json())
    self.assertEqual(again, info)
    self.assertEqual(cluster.parse_tf_config(again.to_json()), info)

  def test_helpers(self):
    info = _info(_FULL, "worker", 2)
    self.assertTrue(info.has_cluster)
    self.assertEqual(info.num_tasks("worker"), 3)
    self.assertEqual(info.num_tasks("evaluator"), 0)
    self.assertEqual(info.address("ps", 1), "h2:2222")
    self.assertEqual(info.task_address, "h5:2222")
    self.assertEqual(info.worker_jobs, ("chief", "worker"))
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                r'has no task \{"type": "ps", "index": 2\}'):
      info.address("ps", 2)
    evaluator = _info(_FULL, "evaluator", 0)
    self.assertIsNone(evaluator.task_address)
    self.assertEqual(_info({"master": ["m:1"], "worker": ["w:1"]},
                           "master").worker_jobs, ("master", "worker"))
    with_eval = _info(dict(_FULL, evaluator=["e:1"]), "evaluator")
    self.assertEqual(with_eval.task_address, "e:1")
    self.assertNotIn("evaluator", with_eval.training_cluster)
    self.assertFalse(cluster.parse_tf_config('{"model_dir": "/m"}').has_cluster)

  def test_ipv6_address(self):
    info = _info({"worker": ["[::1]:2222", "[fe80::1]:2223"]}, "worker", 1)
    self.assertEqual(info.task_address, "[fe80::1]:2223")


def _task(task_type, index, cluster_dict=None):
  config = {"task": {"type": task_type, "index": index}}
  if cluster_dict is not None:
    config["cluster"] = cluster_dict
  return json.dumps(config)


class ParseErrorTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("malformed_json",
       '{"cluster": {"worker": ["a:1"]} "task": {}}',
       [r"TF_CONFIG is not valid JSON: Expecting ',' delimiter at line 1, "
        r"column 33", r'\{"cluster": \{"worker": \["a:1"\]\} "task"', r"\^",
        "Fix:"]),
      ("python_dict", "{'cluster': {}}", ["not valid JSON",
                                          "single quotes", "json.dumps"]),
      ("multi_line", '{\n "cluster": {\n  "worker": ["a:1",]\n }\n}',
       ["line 3, column", r'"worker": \["a:1",\]']),
      ("list", "[1, 2]", [r"TF_CONFIG is \[1, 2\], not a JSON object"]),
      ("string", '"worker"', ["is 'worker', not a JSON object"]),
      ("duplicate_key", '{"cluster": {"worker": ["a:1"], "worker": ["b:1"]}}',
       ["duplicate key 'worker'", "list each key once"]),
      ("near_miss_key", '{"clusters": {"worker": ["a:1"]}}',
       ["has a key 'clusters' but no 'cluster'", 'rename .* to "cluster"']),
      ("unknown_task_type", _task("trainer", 0, _FULL),
       [r"task type 'trainer' is not a job of the cluster: valid task types "
        r"are \['chief', 'ps', 'worker', 'evaluator'\]"]),
      ("index_out_of_range", _task("worker", 2, {"chief": ["c:1"],
                                                 "worker": ["a:1", "b:1"]}),
       [r'(?m)^TF_CONFIG: task \{"type": "worker", "index": 2\} is not in the '
        r'cluster: cluster\["worker"\] has 2 addresses \(valid index 0..1\)\. '
        r"Fix: "]),
      ("negative_index", _task("worker", -1, _FULL),
       ["negative index", "must be non-negative"]),
      ("string_index", _task("worker", "one", _FULL),
       ["task index 'one' .* is not an integer"]),
      ("float_index", _task("worker", 1.5, _FULL), ["1.5 .* not an integer"]),
      ("bool_index", _task("worker", True, _FULL), ["True .* not an integer"]),
      ("two_chiefs", _task("chief", 0, {"chief": ["a:1", "b:1"]}),
       [r'cluster\["chief"\] lists 2 addresses', "only one", "Fix:"]),
      ("two_masters", _task("master", 0, {"master": ["a:1", "b:1"]}),
       [r'cluster\["master"\] lists 2 addresses']),
      ("two_evaluators", _task("chief", 0, dict(_FULL,
                                                evaluator=["e:1", "f:1"])),
       ["at most one 'evaluator'"]),
      ("evaluator_index", _task("evaluator", 1, _FULL),
       [r'task \{"type": "evaluator", "index": 1\}', "index must be 0"]),
      ("empty_address_list", _task("chief", 0, {"chief": ["a:1"],
                                                "worker": []}),
       [r'cluster\["worker"\] is an empty list']),
      ("empty_address", _task("chief", 0, {"chief": [""]}),
       [r"cluster\[\"chief\"\]\[0\] is '', not an address"]),
      ("no_port", _task("chief", 0, {"chief": ["host0"]}),
       [r"\[0\] is 'host0': an address must be host:port",
        'write it as "host0:2222"']),
      ("port_zero", _task("chief", 0, {"chief": ["h:0"]}), ["port in 1..65535"]),
      ("stray_space", _task("chief", 0, {"chief": ["h :1"]}),
       ['Fix: remove the spaces: write it as "h:1".']),
      ("ipv6_unbracketed", _task("chief", 0, {"chief": ["fe80::1"]}),
       [r'Fix: put the IPv6 host in brackets: write it as "\[fe80::1\]:2222"']),
      ("ipv6_with_port", _task("chief", 0, {"chief": ["::1:2222"]}),
       [r'write it as "\[::1\]:2222", or "\[::1:2222\]:2222" \(your port\)']),
      ("port_letters", _task("chief", 0, {"chief": ["h:abc"]}),
       ["Fix: the port must be digits \\(it is 'abc'\\)"]),
      ("port_range_fix", _task("chief", 0, {"chief": ["h:70000"]}),
       [r"Fix: use a port in 1..65535 \(it is 70000\)"]),
      ("port_too_big", _task("chief", 0, {"chief": ["h:70000"]}),
       ["port in 1..65535"]),
      ("address_not_string", _task("chief", 0, {"chief": [2222]}),
       ["is 2222, not an address"]),
      ("duplicate_address", _task("chief", 0, {"chief": ["h:1"],
                                               "worker": ["h:2", "h:1"]}),
       [r"cluster\[\"worker\"\]\[1\] is 'h:1', the same address as "
        r"cluster\[\"chief\"\]\[0\]"]),
      ("task_without_cluster", _task("chief", 0),
       [r'names task \{"type": "chief", "index": 0\} but no "cluster"',
        'add the "cluster"']),
      ("index_without_cluster", _task("worker", 1), ["task index must be 0"]),
      ("cluster_without_task", json.dumps({"cluster": _FULL}),
       ["task type must be set"]),
      ("task_without_index",
       json.dumps({"cluster": _FULL, "task": {"type": "worker"}}),
       ["task index must be set"]),
      ("task_not_object", json.dumps({"cluster": _FULL, "task": "worker"}),
       ['"task" is .*, not an object']),
      ("empty_task_type", _task("", 0, _FULL), ["task type must be set"]),
      ("cluster_not_object", json.dumps({"cluster": ["a:1"]}),
       ["cluster .* is not an object"]),
      ("job_not_list", _task("chief", 0, {"chief": "a:1"}),
       [r"cluster\[\"chief\"\] is 'a:1', not a list"]),
      ("job_sparse_dict", _task("chief", 0, {"chief": {"1": "a:1"}}),
       ["is an object", "not the task indices"]),
      ("bad_job_name", _task("chief", 0, {"chief": ["a:1"], "my job": ["b:1"]}),
       ["job name 'my job' is not valid"]),
      ("master_and_chief", _task("chief", 0, {"chief": ["a:1"],
                                              "master": ["b:1"]}),
       ["job `chief` is not supported"]),
      ("master_and_evaluator", _task("evaluator", 0, {"master": ["a:1"]}),
       ["task_type `evaluator` is not supported"]),
      ("service_not_dict", json.dumps({"service": [1]}),
       ["it must be a dict"]),
      ("empty_model_dir", json.dumps({"model_dir": ""}),
       ["model_dir in TF_CONFIG should be non-empty"]),
      ("rpc_layer_not_string", json.dumps({"rpc_layer": 3}),
       ['"rpc_layer" is 3']),
      # Issue 37: these ended in a TypeError traceback in harness.main.
      ("model_dir_number", json.dumps({"model_dir": 5}),
       [r'"model_dir" is 5 \(a JSON number\): it must be a string']),
      ("model_dir_array", json.dumps({"model_dir": ["/m"]}),
       [r'"model_dir" is \["/m"\] \(a JSON array\)']),
      ("model_dir_boolean", json.dumps({"model_dir": True}),
       [r'"model_dir" is true \(a JSON boolean\)']),
  )
  def test_rejected(self, text, patterns):
    # Parsing takes what 2.15 took; `validate` refuses what cannot run.
    with self.assertRaises(errors.ClusterConfigError) as raised:
      cluster.validate(cluster.parse_tf_config(text), has_strategy=False,
                       require_cluster_for_task=True)
    self.assertIsInstance(raised.exception, (ValueError, TypeError))
    for pattern in patterns:
      self.assertRegex(str(raised.exception), pattern)
    self.assertIn("Fix:", str(raised.exception))

  def test_source_named(self):
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "(?m)^flag --tf_config: task type 'x'"):
      cluster.validate(cluster.parse_tf_config(
          _task("x", 0, _FULL), source="flag --tf_config"), has_strategy=False)

  def test_long_text_is_cut(self):
    text = '{"cluster": ' + "x" * 5000
    with self.assertRaises(errors.ClusterConfigError) as raised:
      cluster.parse_tf_config(text)
    self.assertLess(len(str(raised.exception)), 1200)


class ValidateTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("no_strategy_no_chief", {"worker": ["a:1", "b:1"]}, "worker", 0, False,
       None, ['it must have one "chief" node', "train_distribute",
              "--strategy=collective or parameter_server"]),
      ("master_under_parameter_server",
       {"master": ["m:1"], "ps": ["p:1"], "worker": ["w:1"]}, "worker", 0,
       True, "parameter_server", ['legacy "master" job',
                                  "--strategy=default", 'rename "master"']),
      ("master_under_collective", {"master": ["m:1"], "worker": ["w:1"]},
       "master", 0, True, "collective", ['legacy "master" job']),
      ("no_strategy_ps_only", {"ps": ["a:1"]}, "ps", 0, False, None,
       ["no chief"]),
      ("collective_with_ps", {"worker": ["a:1"], "ps": ["b:1"]}, "worker", 0,
       True, "collective", ['has a "ps" job', "needs no parameter servers",
                            'drop the "ps" job']),
      ("ps_strategy_without_ps", {"worker": ["a:1"]}, "worker", 0, True,
       "parameter_server", ['no "ps" job']),
      ("strategy_without_workers", {"ps": ["a:1"]}, "ps", 0, True, None,
       ['needs a "chief" or a "worker" job']),
      ("strategy_custom_task_type", {"worker": ["a:1"], "trainer": ["b:1"]},
       "trainer", 0, True, "mirrored", ["^Disallowed task type found in "
                                         "cluster spec",
                                         "'trainer'.* not valid with a "
                                         "train_distribute strategy"]),
  )
  def test_rejected(self, cluster_dict, task_type, task_id, has_strategy,
                    kind, patterns):
    info = _info(cluster_dict, task_type, task_id)
    with self.assertRaises(errors.ClusterConfigError) as raised:
      cluster.validate(info, has_strategy=has_strategy, strategy_kind=kind)
    for pattern in patterns:
      self.assertRegex(str(raised.exception), pattern)

  @parameterized.named_parameters(
      ("local", None, False, None),
      ("no_cluster", cluster.ClusterInfo(model_dir="/m"), False, None),
      ("chief_no_strategy", _info(_FULL, "worker", 1), False, None),
      ("worker_only_strategy", _info({"worker": ["a:1", "b:1"]}, "worker", 1),
       True, "collective"),
      ("ps_strategy", _info(_FULL, "ps", 0), True, "parameter_server"),
      ("legacy_master", _info({"master": ["m:1"], "ps": ["p:1"]}, "ps", 0),
       False, None),
      ("master_with_strategy", _info({"master": ["m:1"]}, "master", 0), True,
       "mirrored"),
      ("evaluator_outside", _info({"worker": ["a:1"]}, "evaluator", 0), True,
       "collective"),
  )
  def test_accepted(self, info, has_strategy, kind):
    cluster.validate(info, has_strategy=has_strategy, strategy_kind=kind)

  def test_checks_directly_built_info(self):
    info = cluster.ClusterInfo(cluster={"chief": ["a:1"]}, task_type="chief",
                               task_id=3, source="test")
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                r"(?m)^test: task .* is not in the cluster"):
      cluster.validate(info, has_strategy=False)


_MASTER = {"master": ["m:1"], "ps": ["p:1"], "worker": ["w0:1", "w1:1"]}
_WORKERS = {"worker": ["w0:1", "w1:1", "w2:1"], "ps": ["p:1"]}
# name, cluster, task, has_strategy, then the expected
# (master, evaluation_master, is_chief, workers, ps, global_id, filters).
_FACTS = (
    ("chief", _FULL, ("chief", 0), False,
     ("grpc://h0:2222", "", True, 4, 2, 0, ("/job:ps", "/job:chief"))),
    ("worker", _FULL, ("worker", 1), False,
     ("grpc://h4:2222", "", False, 4, 2, 2, ("/job:ps", "/job:worker/task:1"))),
    ("ps", _FULL, ("ps", 1), False,
     ("grpc://h2:2222", "", False, 4, 2, 5,
      ("/job:ps", "/job:worker", "/job:chief", "/job:master"))),
    ("evaluator", _FULL, ("evaluator", 0), False,
     ("", "", False, 0, 0, None, None)),
    ("evaluator_strategy", dict(_FULL, evaluator=["e:1"]), ("evaluator", 0),
     True, ("", "", True, 0, 0, None, None)),
    ("master", _MASTER, ("master", 0), False,
     ("grpc://m:1", "", True, 3, 1, 0, ("/job:ps", "/job:master"))),
    ("master_worker", _MASTER, ("worker", 1), False,
     ("grpc://w1:1", "", False, 3, 1, 2, ("/job:ps", "/job:worker/task:1"))),
    ("master_ps_strategy", _MASTER, ("ps", 0), True,
     ("grpc://p:1", "", False, 3, 1, 3,
      ("/job:ps", "/job:worker", "/job:chief", "/job:master"))),
    ("worker_only_0", _WORKERS, ("worker", 0), True,
     ("grpc://w0:1", "", True, 3, 1, 0, ("/job:ps", "/job:worker/task:0"))),
    ("worker_only_2", _WORKERS, ("worker", 2), True,
     ("grpc://w2:1", "", False, 3, 1, 2, ("/job:ps", "/job:worker/task:2"))),
    ("chief_strategy_worker_0", _FULL, ("worker", 0), True,
     ("grpc://h3:2222", "", False, 4, 2, 1, ("/job:ps", "/job:worker/task:0"))),
    ("single_node", {"chief": ["c:1"]}, ("chief", 0), False,
     ("", "", True, 1, 0, 0, ("/job:ps", "/job:chief"))),
    ("single_node_strategy", {"worker": ["w:1"]}, ("worker", 0), True,
     ("grpc://w:1", "", True, 1, 0, 0, ("/job:ps", "/job:worker/task:0"))),
    ("other_jobs_sorted", {"chief": ["c:1"], "ps": ["p:1"], "b": ["b:1"],
                           "a": ["a:1", "a:2"]}, ("b", 0), False,
     ("grpc://b:1", "", False, 1, 1, 3, None)),
)


class DerivedFactsTest(parameterized.TestCase):

  @parameterized.named_parameters(*_FACTS)
  def test_facts(self, cluster_dict, task, has_strategy, expected):
    info = _info(cluster_dict, *task)
    cluster.validate(info, has_strategy=has_strategy)
    got = (cluster.master_address(info, has_strategy),
           cluster.evaluation_master(info, has_strategy),
           cluster.is_chief(info, has_strategy),
           cluster.num_worker_replicas(info), cluster.num_ps_replicas(info),
           cluster.global_id_in_cluster(info), cluster.device_filters(info))
    self.assertEqual(got, expected)
    facts = cluster.derive(info, has_strategy=has_strategy)
    self.assertEqual((facts.task_type, facts.task_id), task)
    self.assertEqual((facts.master, facts.evaluation_master, facts.is_chief,
                      facts.num_worker_replicas, facts.num_ps_replicas,
                      facts.global_id_in_cluster, facts.device_filters),
                     expected)
    if task[0] == "evaluator":
      self.assertEqual(facts.cluster, {})
    else:
      self.assertEqual(facts.cluster, info.training_cluster)

  def test_global_ids_are_unique_and_dense(self):
    everyone = dict(_FULL, a=["a:1"], z=["z:1", "z:2"])
    ids = sorted(cluster.global_id_in_cluster(_info(everyone, job, i))
                 for job, addresses in everyone.items()
                 for i in range(len(addresses)))
    self.assertEqual(ids, list(range(9)))

  def test_master_is_global_id_0_before_other_jobs(self):
    # "a" sorts before "master": the master still comes first.
    with_a = dict(_MASTER, a=["a:1"])
    self.assertEqual(
        [cluster.global_id_in_cluster(_info(with_a, job, 0))
         for job in ("master", "a", "worker", "ps")], [0, 1, 2, 4])

  def test_is_chief_default_is_without_a_strategy(self):
    # tf.estimator 2.15: without a strategy worker 0 of a chief-less
    # cluster is not the chief.
    worker_0 = _info(_WORKERS, "worker", 0)
    self.assertFalse(cluster.is_chief(worker_0))
    self.assertTrue(cluster.is_chief(worker_0, True))

  @parameterized.named_parameters(
      ("local", {}, None, False, "grpc://e:1"),
      ("evaluator", _FULL, "evaluator", False, "grpc://e:1"),
      ("evaluator_strategy", _FULL, "evaluator", True, ""))
  def test_derive_passes_the_eval_session_master_on(
      self, cluster_dict, task_type, has_strategy, expected):
    info = _info(cluster_dict, task_type, 0,
                 eval_session_master="grpc://e:1")
    self.assertEqual(cluster.derive(info, has_strategy=has_strategy)
                     .evaluation_master, expected)

  @parameterized.parameters(None, cluster.ClusterInfo(model_dir="/m"))
  def test_local(self, info):
    facts = cluster.derive(info, has_strategy=True)
    self.assertEqual(facts, cluster.TaskFacts(
        task_type="worker", task_id=0, master="", evaluation_master="",
        is_chief=True, num_worker_replicas=1, num_ps_replicas=0,
        global_id_in_cluster=0, cluster={}, device_filters=None))

  def test_session_masters(self):
    local = cluster.parse_tf_config(
        {"session_master": "grpc://s:1", "eval_session_master": "grpc://e:1"})
    self.assertEqual(cluster.master_address(local), "grpc://s:1")
    self.assertEqual(cluster.evaluation_master(local), "grpc://e:1")
    worker = _info(_FULL, "worker", 0, session_master="grpc://s:1")
    self.assertEqual(cluster.master_address(worker), "grpc://s:1")
    self.assertEqual(cluster.master_address(worker, has_strategy=True),
                     "grpc://h3:2222")
    evaluator = _info(_FULL, "evaluator", 0, eval_session_master="grpc://e:1")
    self.assertEqual(cluster.evaluation_master(evaluator), "grpc://e:1")
    self.assertEqual(cluster.evaluation_master(evaluator, True), "")

  def test_rpc_layer_in_master(self):
    info = _info(_FULL, "worker", 0, rpc_layer="grpc+verbs")
    self.assertEqual(cluster.master_address(info), "grpc+verbs://h3:2222")


class TaskLabelTest(absltest.TestCase):

  def test_label_round_trips(self):
    self.assertEqual(cluster.task_label("worker", 1), "worker/1")
    self.assertEqual(cluster.split_task_label("worker/1"), ("worker", 1))

  def test_cluster_info_label(self):
    info = cluster.parse_tf_config(json.dumps({
        "cluster": {"chief": ["h:1"], "worker": ["h:2"]},
        "task": {"type": "worker", "index": 0}}))
    self.assertEqual(info.task_label, "worker/0")
    self.assertEqual(cluster.parse_tf_config(json.dumps({
        "cluster": {"worker": ["h:2"]}})).task_label, "local")


class StrategyJobsTest(absltest.TestCase):

  def test_ps_rules_have_one_wording_for_tf_config_and_strategies(self):
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "^The strategy's cluster has a \"ps\" job .*"
                                "needs no parameter servers"):
      tf_config_checks.check_strategy_jobs(
          "collective", {"worker": ["h:1"], "ps": ["h:2"]},
          source="The strategy's")
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "has no \"ps\" job .* Fix: add"):
      tf_config_checks.check_strategy_jobs(
          "parameter_server", {"worker": ["h:1"]}, source="TF_CONFIG")
    tf_config_checks.check_strategy_jobs(
        "collective", {"worker": ["h:1"]}, source="TF_CONFIG")

  def test_one_machine_strategy_refuses_two_trainers_with_a_fix(self):
    two = {"chief": ["c:1"], "worker": ["w:1"], "ps": ["p:1"]}
    with self.assertRaisesRegex(
        errors.NotSupportedError,
        r"^The strategy is mirrored, a single-machine strategy, but the "
        r"cluster has 2 training tasks \(\['chief', 'ps', 'worker'\]\); .*"
        r"Fix: use the collective strategy"):
      tf_config_checks.check_one_machine_strategy("mirrored", two)
    # One trainer (ps tasks do not train), or a multi-worker strategy: fine.
    tf_config_checks.check_one_machine_strategy(
        "one_device", {"chief": ["c:1"], "ps": ["p:1"]})
    tf_config_checks.check_one_machine_strategy("collective", two)


class RemoteClusterTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("flag", "worker=h1:1,h2:2;ps=h3:3;chief=h:4",
       {"worker": ["h1:1", "h2:2"], "ps": ["h3:3"], "chief": ["h:4"]}),
      ("spaces", " worker = h1:1 , h2:2 ; ps=h3:3; ",
       {"worker": ["h1:1", "h2:2"], "ps": ["h3:3"]}),
      ("json", '{"worker": ["h1:1"], "ps": ["h3:3"]}',
       {"worker": ["h1:1"], "ps": ["h3:3"]}),
  )
  def test_parsed(self, text, expected):
    self.assertEqual(cluster.parse_remote_cluster(text), expected)

  @parameterized.named_parameters(
      ("empty", "", "is empty"),
      ("no_equals", "worker:h1:1", "has no '='"),
      ("job_twice", "worker=a:1;worker=b:1", "lists job 'worker' twice"),
      ("no_trainer", "ps=a:1", "neither a 'chief' nor a 'worker'"),
      ("no_port", "worker=a", "an address must be host:port"),
      ("empty_job", "worker=a:1;ps=", r'cluster\["ps"\] is an empty list'),
      ("duplicate", "worker=a:1,a:1", "the same address"),
      ("two_chiefs", "chief=a:1,b:1", "lists 2 addresses"),
      ("bad_json", '{"worker": [a:1]}', "is not valid JSON"),
      ("json_list", '{"worker": "a:1"}', "not a list"),
  )
  def test_rejected(self, text, pattern):
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "(?m)^--remote_cluster.*" + pattern):
      cluster.parse_remote_cluster(text)


class MutantGuardTest(parameterized.TestCase):
  """Behaviour that surviving mutants (docs/MUTATION.md) changed unseen."""

  def test_object_cluster_keys_are_read_in_index_order(self):
    jobs = {str(i): f"h{i}:2222" for i in reversed(range(11))}
    info = cluster.parse_tf_config({"cluster": {"worker": jobs}})
    self.assertEqual(info.cluster["worker"],
                     [f"h{i}:2222" for i in range(11)])

  @parameterized.parameters(({"0": "h0:1", "x": "h1:1"},), ({"1": "h1:1"},))
  def test_object_cluster_keys_not_indices_are_a_type_error(self, jobs):
    with self.assertRaisesRegex(errors.ClusterConfigTypeError,
                                r'^TF_CONFIG cluster\["worker"\]'):
      cluster.parse_tf_config({"cluster": {"worker": jobs}})

  def test_model_dir_of_a_wrong_type_is_a_type_error(self):
    with self.assertRaises(errors.ClusterConfigTypeError):
      cluster.parse_tf_config({"model_dir": 3})

  def test_to_json_is_the_same_text_whatever_the_job_order(self):
    a = cluster.ClusterInfo(cluster={"worker": ["h1:1"], "chief": ["h0:1"]})
    b = cluster.ClusterInfo(cluster={"chief": ["h0:1"], "worker": ["h1:1"]})
    self.assertEqual(a.to_json(), b.to_json())

  def test_address_of_a_listed_and_an_unlisted_task(self):
    info = _info({"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]})
    self.assertEqual(info.address("chief", 0), "h0:1")
    self.assertEqual(info.address("worker", 1), "h2:1")
    for job, index in (("ps", 0), ("worker", 2), ("worker", -1)):
      with self.assertRaisesRegex(errors.ClusterConfigError, "has no task"):
        info.address(job, index)

  def test_json_error_shows_the_bad_line_and_keeps_the_decoder_message(self):
    text = '{"cluster": {},\n "task": {"type": "worker",, "index": 0}}'
    with self.assertRaises(cluster.TFConfigJSONError) as raised:
      cluster.parse_tf_config(text)
    message = str(raised.exception)
    self.assertIn('\n   "task": {"type": "worker",, "index": 0}}\n', message)
    self.assertNotIn('{"cluster": {},\n', message.split("\n", 1)[1])
    self.assertIn("TF_CONFIG must be a JSON object", message)
    self.assertEqual(raised.exception.msg, "Expecting property name enclosed "
                     "in double quotes")

  @parameterized.parameters("h:65536", "h:0")
  def test_port_out_of_range_is_refused(self, address):
    with self.assertRaisesRegex(errors.ClusterConfigError, "1..65535"):
      cluster.validate(_info({"chief": [address]}, "chief"), has_strategy=False)
    cluster.validate(_info({"chief": ["h:65535"]}, "chief"), has_strategy=False)

  def test_remote_cluster_errors_name_the_flag(self):
    for text, pattern in (('{"1x": ["h:1"]}', "^--remote_cluster job name"),
                          ('{"worker": "h:1"}', "^--remote_cluster: cluster")):
      with self.assertRaisesRegex(errors.ClusterConfigError,
                                  "(?m)" + pattern):
        cluster.parse_remote_cluster(text)

  def test_task_index_one_past_the_end_under_a_strategy(self):
    info = _info({"worker": ["h0:1", "h1:1"]}, "worker", 2)
    with self.assertRaisesRegex(
        errors.ClusterConfigError, r"exceeds the maximum id of worker\.(?s:.*)"
        r'cluster\["worker"\] has 2 addresses \(valid index 0\.\.1\)'):
      cluster.validate(info, has_strategy=True)

  def test_two_chiefs_under_a_strategy_give_the_coordinator_sentence(self):
    info = _info({"chief": ["h0:1", "h1:1"]}, "chief", 0)
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "^There must be at most one 'chief' job."):
      cluster.validate(info, has_strategy=True)

  def test_run_config_refuses_two_chiefs(self):
    info = _info({"chief": ["h0:1", "h1:1"]}, "chief", 0)
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                'must have only one "chief" node'):
      cluster.validate_run_config(info, has_strategy=False)

  def test_unknown_task_type_message_prints_the_cluster_spec(self):
    info = _info({"chief": ["h0:1"]}, "boss", 0)
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                r"cluster_spec:\nClusterSpec\(\{'chief'"):
      cluster.validate(info, has_strategy=False)

  def test_each_check_of_validate_names_the_source(self):
    for config, kind, pattern in (
        ({"1x": ["h:1"], "chief": ["h0:1"]}, None, "job name '1x'"),
        ({"chief": ["h0:1"], "worker": ["h0:1"]}, None, "same address"),
        ({"chief": ["h0:1"], "evaluator": ["e:1", "f:1"]}, None,
         'evaluator"] lists 2'),
        ({"chief": ["h0:1"]}, "parameter_server", 'no "ps" job')):
      info = cluster.parse_tf_config({"cluster": config, "task": {
          "type": "chief", "index": 0}}, source="flag --tf_config")
      with self.assertRaisesRegex(errors.ClusterConfigError,
                                  "(?m)^flag --tf_config:? .*" + pattern):
        cluster.validate(info, has_strategy=False, strategy_kind=kind)

  def test_task_without_cluster_is_refused_only_when_asked(self):
    task_only = cluster.parse_tf_config({"task": {"type": "worker"}})
    cluster.validate(task_only, has_strategy=False)
    cluster.validate(cluster.parse_tf_config({"environment": "cloud"}),
                     has_strategy=False, require_cluster_for_task=True)
    with self.assertRaisesRegex(errors.ClusterConfigError, 'but no "cluster"'):
      cluster.validate(task_only, has_strategy=False,
                       require_cluster_for_task=True)

  def test_a_key_only_somewhat_like_cluster_is_not_called_a_typo(self):
    info = cluster.parse_tf_config({"cluster_specs": {}})
    cluster.validate(info, has_strategy=False)
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "has a key 'clustr' but no 'cluster'"):
      cluster.validate(cluster.parse_tf_config({"clustr": {}}),
                       has_strategy=False)


class CheckServableTest(parameterized.TestCase):

  def test_a_listed_task_and_an_unlisted_evaluator_pass(self):
    check_servable = cluster.check_servable
    check_servable(_info({"chief": ["h0:1"], "worker": ["h1:1"]}, "worker", 0))
    check_servable(_info({"chief": ["h0:1"]}, "evaluator", 0))

  @parameterized.parameters(
      ({"worker": ["h0:1"]}, "worker", 1, r'^TF_CONFIG task \{"type": '
       r'"worker", "index": 1\} is not in the cluster: cluster\["worker"\] '
       r"has 1 addresses \(valid index 0\.\.0\)"),
      ({"worker": ["h0:1"]}, "ps", 0, 'cluster\\["ps"\\] has 0 addresses'),
      ({"worker": ["h0:1"]}, "worker", -1, "is not in the cluster"),
      ({"worker": ["h0:1"], "9": ["h1:1"]}, "worker", 0,
       "^TF_CONFIG job name '9'"),
      ({"worker": ["h0:1", "h0:1"]}, "worker", 0, "^TF_CONFIG.*same address"),
      ({"worker": ["h0:1"], "chief": ["h1:1", "h2:1"]}, "worker", 0,
       '(?s)only one "chief".*^TF_CONFIG: '))
  def test_refused(self, cluster_dict, task_type, task_id, pattern):
    info = cluster.ClusterInfo(cluster=cluster_dict, task_type=task_type,
                       task_id=task_id)
    with self.assertRaisesRegex(errors.ClusterConfigError, "(?m)" + pattern):
      cluster.check_servable(info)


class NoTensorFlowTest(absltest.TestCase):

  def test_module_imports_no_tensorflow(self):
    # harness/__init__.py may import TensorFlow for the public names; what
    # the TF_CONFIG parser and its rules (the modules below) import
    # is pinned here: the standard library, errors and cluster/ only.
    folder = pathlib.Path(cluster.__file__).parent
    for name in ("tf_config", "tf_config_rules", "tf_config_checks", "jobs",
                 "task_facts", "strategy_kind"):
      path = folder / f"{name}.py"
      imported = set()
      for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
          imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
          imported.update(f"{node.module}.{alias.name}"
                          for alias in node.names)
      outside = {name for name in imported
                 if name.startswith(("harness", "tensor"))
                 and not name.startswith(("harness.errors",
                                          "harness.cluster."))}
      self.assertEqual(outside, set(), path)
      self.assertLessEqual(
          {name.split(".")[0] for name in imported} - {"harness"},
          set(sys.stdlib_module_names), path)


if __name__ == "__main__":
  absltest.main()
