"""Tests of harness.run_config: RunConfig, DistributeConfig, model_dir rules."""

import copy
import inspect
import json
import os
import pathlib
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized

import harness
from harness import cluster
from harness import errors
from harness import plan as plan_lib
from harness import run_config as rc
from harness._tf import tf
from harness.core import strategy_classifier
from harness.run_config import config as rc_config
from tests import _support

_FULL = {"chief": ["h0:2222"], "ps": ["h1:2222", "h2:2222"],
         "worker": ["h3:2222", "h4:2222", "h5:2222"]}
_WORKERS = {"worker": ["w0:1", "w1:1"]}


_env = _support.tf_config_environ


def _mirrored():
  return tf.compat.v1.distribute.MirroredStrategy(["/cpu:0"])


class SignatureTest(absltest.TestCase):

  def test_constructor_matches_estimator_2_15(self):
    params = inspect.signature(rc.RunConfig.__init__).parameters
    expected = [
        ("model_dir", None), ("tf_random_seed", None),
        ("save_summary_steps", 100), ("save_checkpoints_steps", "DEFAULT"),
        ("save_checkpoints_secs", "DEFAULT"), ("session_config", None),
        ("keep_checkpoint_max", 5), ("keep_checkpoint_every_n_hours", 10000),
        ("log_step_count_steps", 100), ("train_distribute", None),
        ("device_fn", None), ("protocol", None), ("eval_distribute", None),
        ("experimental_distribute", None),
        ("experimental_max_worker_delay_secs", None),
        ("session_creation_timeout_secs", 7200),
        ("checkpoint_save_graph_def", True)]
    positional = [p for p in params.values()
                  if p.kind == p.POSITIONAL_OR_KEYWORD][1:]
    got = [(p.name,
            "DEFAULT" if p.default is rc_config._USE_DEFAULT else p.default)
           for p in positional]
    self.assertEqual(got, expected)
    keyword_only = {p.name: p.default for p in params.values()
                    if p.kind == p.KEYWORD_ONLY}
    self.assertEqual(keyword_only, {"steps_per_loop": 1,
                                    "remote_connect_timeout_secs": 30.0,
                                    "eval_poll_secs": 1.0,
                                    "eval_idle_timeout_secs": None,
                                    "peer_timeout_secs": None,
                                    "restart_wait_secs": None,
                                    "force_takeover": False,
                                    "bind_address": None,
                                    "remote_claim_timeout_secs": 15.0,
                                    "max_runs_without_progress": 100,
                                    "stop_timeout_secs": 10.0,
                                    "input_timeout_secs": None,
                                    "input_report_secs": 10.0,
                                    "metrics_port": 0,
                                    "metrics_bind": "127.0.0.1",
                                    "input_pipeline": "tuned",
                                    "ps_placement": "round_robin",
                                    "xla": False,
                                    "environ": None,
                                    "plan": None})

  def test_defaults(self):
    config = rc.RunConfig(environ={})
    self.assertEqual(
        (config.model_dir, config.tf_random_seed, config.save_summary_steps,
         config.save_checkpoints_steps, config.save_checkpoints_secs,
         config.session_config, config.keep_checkpoint_max,
         config.keep_checkpoint_every_n_hours, config.log_step_count_steps,
         config.train_distribute, config.device_fn, config.protocol,
         config.eval_distribute, config.experimental_distribute,
         config.experimental_max_worker_delay_secs,
         config.session_creation_timeout_secs,
         config.checkpoint_save_graph_def, config.steps_per_loop,
         config.remote_connect_timeout_secs),
        (None, None, 100, None, 600, None, 5, 10000, 100, None, None, None,
         None, None, None, 7200, True, 1, 30.0))
    self.assertEqual(config.cluster_spec, tf.train.ClusterSpec({}))
    self.assertEqual(
        (config.task_type, config.task_id, config.master,
         config.evaluation_master, config.is_chief, config.num_ps_replicas,
         config.num_worker_replicas, config.global_id_in_cluster,
         config.service, config.cluster_info, config.coordinator_mode,
         config.remote_cluster),
        ("worker", 0, "", "", True, 0, 1, 0, None, None, None, None))

  def test_distribute_config(self):
    self.assertEqual(rc.DistributeConfig()._fields,
                     ("train_distribute", "eval_distribute", "remote_cluster"))
    self.assertEqual(tuple(rc.DistributeConfig()), (None, None, None))

  def test_default_session_config(self):
    config = rc.get_default_session_config()
    self.assertTrue(config.allow_soft_placement)
    self.assertEqual(config.graph_options.rewrite_options
                     .meta_optimizer_iterations, 1)  # RewriterConfig.ONE


class CheckpointDefaultsTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("neither", {}, (None, 600)),
      ("steps", {"save_checkpoints_steps": 50}, (50, None)),
      ("secs", {"save_checkpoints_secs": 30}, (None, 30)),
      ("both_none", {"save_checkpoints_steps": None,
                     "save_checkpoints_secs": None}, (None, None)),
      ("steps_and_none", {"save_checkpoints_steps": 5,
                          "save_checkpoints_secs": None}, (5, None)),
  )
  def test_resolution(self, kwargs, expected):
    config = rc.RunConfig(environ={}, **kwargs)
    self.assertEqual(
        (config.save_checkpoints_steps, config.save_checkpoints_secs),
        expected)

  def test_both_set(self):
    with self.assertRaisesRegex(
        errors.ConfigError, "`save_checkpoints_steps` and "
        "`save_checkpoints_secs` cannot be both set.* Given: \\(1, 2\\)"):
      rc.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=2,
                   environ={})


def _device_fn_two_args(op, extra):
  del op, extra


class PropertyValidationTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("model_dir", {"model_dir": ""}, "model_dir should be non-empty"),
      ("summary", {"save_summary_steps": -1},
       "save_summary_steps should be >= 0. Given: -1"),
      ("ckpt_steps", {"save_checkpoints_steps": -1},
       "save_checkpoints_steps should be >= 0"),
      ("ckpt_secs", {"save_checkpoints_secs": -1},
       "save_checkpoints_secs should be >= 0"),
      ("session_config", {"session_config": {"allow_soft_placement": True}},
       "session_config must be instance of ConfigProto"),
      ("keep_max", {"keep_checkpoint_max": -1},
       "keep_checkpoint_max should be >= 0"),
      ("keep_hours", {"keep_checkpoint_every_n_hours": 0},
       "keep_checkpoint_every_n_hours should be > 0"),
      ("log_steps", {"log_step_count_steps": 0},
       "log_step_count_steps should be > 0"),
      ("seed", {"tf_random_seed": 1.5}, "tf_random_seed must be integer."),
      ("delay", {"experimental_max_worker_delay_secs": 1.5},
       "experimental_max_worker_delay_secs must be an integer if set."),
      ("timeout", {"session_creation_timeout_secs": 0},
       "session_creation_timeout_secs should be > 0"),
      ("device_fn_args", {"device_fn": _device_fn_two_args},
       'device_fn must be callable with exactly one argument "op"'),
      ("device_fn_not_callable", {"device_fn": "/cpu:0"},
       'device_fn must be callable'),
      ("protocol", {"protocol": "http"}, "protocol should be grpc or "
       "grpc\\+verbs"),
      ("steps_per_loop_zero", {"steps_per_loop": 0},
       "steps_per_loop must be an integer >= 1"),
      ("steps_per_loop_bool", {"steps_per_loop": True},
       "steps_per_loop must be an integer >= 1"),
      ("steps_per_loop_float", {"steps_per_loop": 2.0},
       "steps_per_loop must be an integer >= 1"),
      ("remote_connect_timeout_zero", {"remote_connect_timeout_secs": 0},
       "remote_connect_timeout_secs must be a number of seconds > 0"),
      ("remote_connect_timeout_text", {"remote_connect_timeout_secs": "5"},
       "remote_connect_timeout_secs must be a number of seconds > 0"),
      ("force_takeover_text", {"force_takeover": "yes"},
       "force_takeover must be True or False"),
      ("not_a_strategy", {"train_distribute": "mirrored"},
       "'mirrored' is not a tf.distribute.Strategy"),
  )
  def test_rejected(self, kwargs, pattern):
    with self.assertRaises(errors.ConfigError) as raised:
      rc.RunConfig(environ={}, **kwargs)
    self.assertIsInstance(raised.exception, ValueError)
    self.assertRegex(str(raised.exception), pattern)
    self.assertIn("Fix:", str(raised.exception))
    with self.assertRaisesRegex(errors.ConfigError, pattern):
      rc.RunConfig(environ={}).replace(**kwargs)

  def test_accepted_values(self):
    config = rc.RunConfig(
        model_dir=pathlib.Path("/tmp/m"), tf_random_seed=7,
        device_fn=lambda op: "/cpu:0", protocol="grpc", steps_per_loop=10,
        experimental_max_worker_delay_secs=5, save_summary_steps=0,
        keep_checkpoint_max=None, remote_connect_timeout_secs=2.5, environ={})
    self.assertEqual(config.model_dir, "/tmp/m")
    self.assertEqual(config.steps_per_loop, 10)
    self.assertEqual(config.remote_connect_timeout_secs, 2.5)
    self.assertEqual(
        config.replace(remote_connect_timeout_secs=9).remote_connect_timeout_secs,
        9)
    self.assertEqual(config.device_fn(None), "/cpu:0")


class ClusterPropertiesTest(parameterized.TestCase):
  """The distributed properties for each kind of task (TF_CONFIG injected)."""

  @parameterized.named_parameters(
      # name, cluster, task, strategy?, (task_type, task_id, master,
      # is_chief, num_ps, num_workers, global_id, cluster_spec)
      ("chief", _FULL, ("chief", 0), False,
       ("chief", 0, "grpc://h0:2222", True, 2, 4, 0, _FULL)),
      ("worker", _FULL, ("worker", 1), False,
       ("worker", 1, "grpc://h4:2222", False, 2, 4, 2, _FULL)),
      ("ps", _FULL, ("ps", 0), False,
       ("ps", 0, "grpc://h1:2222", False, 2, 4, 4, _FULL)),
      ("evaluator", _FULL, ("evaluator", 0), False,
       ("evaluator", 0, "", False, 0, 0, None, {})),
      ("master", {"master": ["m:1"], "worker": ["w:1"]}, ("master", 0), False,
       ("master", 0, "grpc://m:1", True, 0, 2, 0,
        {"master": ["m:1"], "worker": ["w:1"]})),
      ("worker_only_0", _WORKERS, ("worker", 0), True,
       ("worker", 0, "grpc://w0:1", True, 0, 2, 0, _WORKERS)),
      ("worker_only_1", _WORKERS, ("worker", 1), True,
       ("worker", 1, "grpc://w1:1", False, 0, 2, 1, _WORKERS)),
      ("evaluator_strategy", dict(_WORKERS, evaluator=["e:1"]),
       ("evaluator", 0), True, ("evaluator", 0, "", True, 0, 0, None, {})),
  )
  def test_properties(self, cluster_dict, task, strategy, expected):
    config = rc.RunConfig(environ=_env(cluster_dict, *task),
                          train_distribute=_mirrored() if strategy else None)
    self.assertEqual(
        (config.task_type, config.task_id, config.master, config.is_chief,
         config.num_ps_replicas, config.num_worker_replicas,
         config.global_id_in_cluster),
        expected[:-1])
    self.assertEqual(config.cluster_spec, tf.train.ClusterSpec(expected[-1]))
    self.assertEqual(config.evaluation_master, "")
    self.assertEqual(config.cluster_info,
                     cluster.parse_tf_config(_env(cluster_dict, *task)[
                         "TF_CONFIG"]))

  @parameterized.named_parameters(
      ("chief", ("chief", 0), ["/job:ps", "/job:chief"]),
      ("worker", ("worker", 2), ["/job:ps", "/job:worker/task:2"]),
      ("ps", ("ps", 1), ["/job:ps", "/job:worker", "/job:chief",
                         "/job:master"]),
  )
  def test_device_filters_without_strategy(self, task, filters):
    config = rc.RunConfig(environ=_env(_FULL, *task))
    self.assertEqual(list(config.session_config.device_filters), filters)
    self.assertTrue(config.session_config.allow_soft_placement)
    self.assertIsNone(config.coordinator_mode)

  def test_no_device_filters_for_evaluator_or_user_config(self):
    self.assertIsNone(
        rc.RunConfig(environ=_env(_FULL, "evaluator", 0)).session_config)
    mine = tf.compat.v1.ConfigProto(log_device_placement=True)
    config = rc.RunConfig(environ=_env(_FULL, "worker", 0),
                          session_config=mine)
    self.assertEqual(config.session_config, mine)

  def test_strategy_uses_coordinator(self):
    config = rc.RunConfig(environ=_env(_FULL, "worker", 0),
                          train_distribute=_mirrored())
    self.assertEqual(config.coordinator_mode, "independent_worker")
    self.assertIsNone(config.session_config)
    self.assertFalse(config.is_chief)

  def test_legacy_master_ignores_strategy_for_roles(self):
    config = rc.RunConfig(environ=_env({"master": ["m:1"], "ps": ["p:1"]},
                                       "master", 0),
                          train_distribute=_mirrored())
    self.assertIsNone(config.coordinator_mode)
    self.assertTrue(config.is_chief)

  def test_service_and_session_master(self):
    config = rc.RunConfig(environ=_env(
        service={"name": "s"}, session_master="grpc://x:1",
        eval_session_master="grpc://y:1"))
    self.assertEqual(config.service, {"name": "s"})
    self.assertEqual(config.master, "grpc://x:1")
    self.assertEqual(config.evaluation_master, "grpc://y:1")

  @parameterized.named_parameters(
      ("bad_json", {"TF_CONFIG": "{not json"}, "is not valid JSON"),
      ("no_chief", _env(_WORKERS, "worker", 0), 'but no chief'),
      ("out_of_range", _env(_FULL, "worker", 3), "is not in the cluster"),
      ("task_no_cluster", _env(task_type="ps", index=0), 'but no "cluster"'),
  )
  def test_bad_tf_config(self, environ, pattern):
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "(?m)^TF_CONFIG.*" + pattern) as raised:
      rc.RunConfig(environ=environ)
    self.assertIsInstance(raised.exception, ValueError)

  def test_collective_with_ps_rejected(self):
    strategy = tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy()
    # 2.15's RunConfig took it; training refuses it before anything starts.
    config = rc.RunConfig(environ=_env(_FULL, "worker", 0),
                          train_distribute=strategy)
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                "collective .* needs no parameter servers"):
      rc.check_supported_config(config)

  def test_reads_os_environ_only_without_environ(self):
    with mock.patch.dict(os.environ, {"TF_CONFIG": json.dumps(
        {"cluster": _FULL, "task": {"type": "ps", "index": 1}})}):
      self.assertEqual(rc.RunConfig().task_type, "ps")
      self.assertEqual(rc.RunConfig(environ={}).task_type, "worker")


class ModelDirTest(parameterized.TestCase):

  def test_from_tf_config(self):
    environ = _env(model_dir="/from/env")
    self.assertEqual(rc.RunConfig(environ=environ).model_dir, "/from/env")
    self.assertEqual(rc.RunConfig("/from/env", environ=environ).model_dir,
                     "/from/env")

  def test_conflict_with_tf_config(self):
    with self.assertRaisesRegex(
        errors.ClusterConfigError,
        "`model_dir` provided in RunConfig construct, if set, must have the "
        "same value as the model_dir in TF_CONFIG. model_dir: /mine\n"
        'TF_CONFIG\\["model_dir"\\]: /env'):
      rc.RunConfig(model_dir="/mine", environ=_env(model_dir="/env"))

  def test_resolve(self):
    environ = {}
    self.assertEqual(
        rc.resolve_model_dir("/a", rc.RunConfig(environ=environ))[0], "/a")
    self.assertEqual(
        rc.resolve_model_dir(None, rc.RunConfig("/b", environ=environ))[0],
        "/b")
    self.assertEqual(rc.resolve_model_dir(
        pathlib.Path("/c"), rc.RunConfig("/c", environ=environ))[0], "/c")
    model_dir, config = rc.resolve_model_dir(None, rc.RunConfig(environ={}))
    self.assertTrue(os.path.isdir(model_dir), model_dir)  # Temporary.
    self.assertEqual(config.model_dir, model_dir)
    os.rmdir(model_dir)
    self.assertEqual(config.session_config, rc.get_default_session_config())
    mine = tf.compat.v1.ConfigProto(log_device_placement=True)
    _, config = rc.resolve_model_dir(
        "/a", rc.RunConfig(session_config=mine, environ={}))
    self.assertEqual((config.model_dir, config.session_config), ("/a", mine))

  def test_a_subclass_overriding_model_dir_is_read(self):
    # 2.15's estimator_test: a RunConfig subclass's model_dir property is
    # the Estimator's model_dir, and conflicts with the constructor's.
    class FakeConfig(rc.RunConfig):

      @property
      def model_dir(self):
        return "/tmp/from_the_property"

    model_dir, config = rc.resolve_model_dir(None, FakeConfig(environ={}))
    self.assertEqual((model_dir, config.model_dir),
                     ("/tmp/from_the_property",) * 2)
    with self.assertRaisesRegex(errors.ConfigError, "set both in constructor"):
      rc.resolve_model_dir("/tmp/another", FakeConfig(environ={}))

  def test_resolve_conflict(self):
    with self.assertRaisesRegex(
        errors.ConfigError,
        "`model_dir` are set both in constructor and `RunConfig`, but with "
        "different values. In constructor: '/a', in `RunConfig`: '/b'"):
      rc.resolve_model_dir("/a", rc.RunConfig("/b", environ={}))

  def test_resolve_needs_run_config(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "config must be an instance of `RunConfig`"):
      rc.resolve_model_dir("/a", {"model_dir": "/a"})

  def test_resolve_default_config(self):
    with mock.patch.dict(os.environ, {"TF_CONFIG": ""}):
      model_dir, config = rc.resolve_model_dir("/d", None)
    self.assertEqual((model_dir, config.model_dir), ("/d", "/d"))


class TwoWaysInTest(absltest.TestCase):
  """RunConfig takes TF_CONFIG from `environ` or from a `plan`, not both."""

  def test_a_given_plan_is_not_read_or_planned_again(self):
    info = cluster.parse_tf_config(_env(
        {"chief": ["h:1"], "worker": ["h:2"]}, "worker", 0)["TF_CONFIG"])
    given = plan_lib.plan_task(info, environ={})
    with mock.patch.object(cluster, "parse_tf_config") as parser, \
        mock.patch.object(plan_lib, "plan_task") as planner, \
        mock.patch.dict(os.environ, {"TF_CONFIG": "not json"}):
      config = rc.RunConfig(plan=given)
    parser.assert_not_called()
    planner.assert_not_called()
    self.assertIs(config.cluster_info, info)
    self.assertEqual((config.task_type, config.num_worker_replicas),
                     ("worker", 2))

  def test_cluster_info_is_no_third_way(self):
    with self.assertRaisesRegex(TypeError, "cluster_info"):
      rc.RunConfig(cluster_info=None)  # pylint: disable=unexpected-keyword-arg

  def test_plan_and_environ_together_is_an_error(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "from `environ` or, already planned, from "
                                "`plan`, not both"):
      rc.RunConfig(environ={}, plan=plan_lib.plan_task(None, environ={}))

  def test_plan_must_be_a_task_plan(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "plan must be a harness.plan.TaskPlan"):
      rc.RunConfig(plan={"cluster": {}})

  def test_tf_config_info_line_is_short_and_full_json_at_debug(self):
    workers = [f"host-{i}.example.com:2222" for i in range(40)]
    environ = _env({"chief": ["c:1"], "worker": workers, "ps": ["p:1"]},
                   "worker", 7, model_dir="/m")
    with self.assertLogs(logger="absl", level="DEBUG") as logs:
      rc.RunConfig(environ=environ)
    info = [l for l in logs.output if l.startswith(
        "INFO:absl:TF_CONFIG environment variable:")]
    self.assertEqual(info, [
        "INFO:absl:TF_CONFIG environment variable: task worker/7 of "
        "{chief: 1, worker: 40, ps: 1}; also model_dir"])
    self.assertLess(len(info[0]), 160)
    full = [l for l in logs.output if l.startswith("DEBUG:absl:TF_CONFIG")]
    self.assertLen(full, 1)
    self.assertIn(workers[-1], full[0])


class ReplaceTest(parameterized.TestCase):

  def test_not_allowed(self):
    with self.assertRaises(errors.ConfigError) as raised:
      rc.RunConfig(environ={}).replace(task_type="ps")
    self.assertStartsWith(
        str(raised.exception),
        "Replacing task_type is not supported. Allowed properties are "
        "['model_dir', 'tf_random_seed', 'save_summary_steps', "
        "'save_checkpoints_steps', 'save_checkpoints_secs', 'session_config', "
        "'keep_checkpoint_max', 'keep_checkpoint_every_n_hours', "
        "'log_step_count_steps', 'train_distribute', 'device_fn', 'protocol', "
        "'eval_distribute', 'experimental_distribute', "
        "'experimental_max_worker_delay_secs', "
        "'session_creation_timeout_secs', 'checkpoint_save_graph_def', "
        "'steps_per_loop', 'remote_connect_timeout_secs', 'eval_poll_secs', "
        "'eval_idle_timeout_secs', 'peer_timeout_secs', 'restart_wait_secs', "
        "'force_takeover', 'bind_address', 'remote_claim_timeout_secs', "
        "'max_runs_without_progress', 'stop_timeout_secs', "
        "'input_timeout_secs', 'input_report_secs', 'metrics_port', "
        "'metrics_bind', 'input_pipeline', 'ps_placement', 'xla']."
        " Fix: ")

  @parameterized.named_parameters(
      ("model_dir", "model_dir", "/x"), ("seed", "tf_random_seed", 3),
      ("summary", "save_summary_steps", 7),
      ("keep_max", "keep_checkpoint_max", 2),
      ("keep_hours", "keep_checkpoint_every_n_hours", 3),
      ("log", "log_step_count_steps", 9), ("protocol", "protocol", "grpc"),
      ("delay", "experimental_max_worker_delay_secs", 4),
      ("timeout", "session_creation_timeout_secs", 5),
      ("graph_def", "checkpoint_save_graph_def", False),
      ("steps_per_loop", "steps_per_loop", 100),
  )
  def test_each_allowed(self, name, value):
    original = rc.RunConfig(environ={})
    replaced = original.replace(**{name: value})
    self.assertEqual(getattr(replaced, name), value)
    self.assertNotEqual(getattr(original, name), value)

  @parameterized.named_parameters(
      ("steps", {"save_checkpoints_steps": 10}, (10, None)),
      ("secs", {"save_checkpoints_secs": 10}, (None, 10)),
      ("steps_none", {"save_checkpoints_steps": None}, (None, 600)),
      ("both_none", {"save_checkpoints_steps": None,
                     "save_checkpoints_secs": None}, (None, None)),
  )
  def test_checkpoint_keys(self, kwargs, expected):
    config = rc.RunConfig(environ={}).replace(**kwargs)
    self.assertEqual(
        (config.save_checkpoints_steps, config.save_checkpoints_secs),
        expected)

  def test_checkpoint_keys_both(self):
    with self.assertRaisesRegex(errors.ConfigError, "cannot be both set"):
      rc.RunConfig(environ={}).replace(save_checkpoints_steps=1,
                                       save_checkpoints_secs=1)

  def test_rederives_and_does_not_reread_environment(self):
    environ = _env(_FULL, "worker", 0)
    config = rc.RunConfig(environ=environ)
    self.assertFalse(config.is_chief)
    environ["TF_CONFIG"] = "{broken"
    with_strategy = config.replace(train_distribute=_mirrored())
    self.assertEqual(with_strategy.coordinator_mode, "independent_worker")
    self.assertIsNone(with_strategy.session_config)
    self.assertIs(with_strategy.cluster_info, config.cluster_info)
    back = with_strategy.replace(train_distribute=None)
    self.assertEqual(list(back.session_config.device_filters),
                     ["/job:ps", "/job:worker/task:0"])
    self.assertIsNone(config.train_distribute)

  def test_worker_only_needs_strategy_on_replace(self):
    config = rc.RunConfig(environ=_env(_WORKERS, "worker", 1),
                          train_distribute=_mirrored())
    with self.assertRaisesRegex(errors.ClusterConfigError, "no chief"):
      config.replace(train_distribute=None)

  def test_deepcopy_shares_strategy(self):
    strategy = _mirrored()
    config = rc.RunConfig(train_distribute=strategy, environ={},
                          session_config=tf.compat.v1.ConfigProto())
    copied = copy.deepcopy(config)
    self.assertIs(copied.train_distribute, strategy)
    self.assertIsNot(copied.session_config, config.session_config)
    self.assertEqual(copied.session_config, config.session_config)


  def test_estimator_config_carries_the_derived_facts(self):
    # Estimator.config hands out a deep copy on each read: the copy carries
    # the plan and the cluster facts, nothing is derived again.
    est = harness.Estimator(
        lambda features, labels, mode: None,
        model_dir=self.create_tempdir().full_path,
        config=rc.RunConfig(environ=_env(_FULL, "worker", 1)))
    config = est.config
    with mock.patch.object(rc_config.distribution, "derive") as derive:
      copies = [est.config for _ in range(3)]
    derive.assert_not_called()
    for copied in copies:
      self.assertIs(config.plan, copied.plan)
      self.assertEqual((config.task_type, config.task_id, config.master),
                       (copied.task_type, copied.task_id, copied.master))
      self.assertIsNot(config.session_config, copied.session_config)


class DistributeConfigTest(absltest.TestCase):

  def test_strategies_taken_from_experimental_distribute(self):
    train, evaluate = _mirrored(), _mirrored()
    config = rc.RunConfig(environ={}, experimental_distribute=(
        rc.DistributeConfig(train_distribute=train, eval_distribute=evaluate)))
    self.assertIs(config.train_distribute, train)
    self.assertIs(config.eval_distribute, evaluate)

  def test_both_places(self):
    with self.assertRaisesRegex(
        errors.ConfigError, "Either `train_distribute` or "
        "`experimental_distribute.train_distribute` can be set."):
      rc.RunConfig(environ={}, train_distribute=_mirrored(),
                   experimental_distribute=rc.DistributeConfig(
                       train_distribute=_mirrored()))

  def test_remote_cluster(self):
    remote = {"worker": ["w0:1", "w1:1"], "ps": ["p:1"]}
    for given in (remote, tf.train.ClusterSpec(remote),
                  tf.train.ClusterSpec(remote).as_cluster_def()):
      config = rc.RunConfig(environ={}, experimental_distribute=(
          rc.DistributeConfig(train_distribute=_mirrored(),
                              remote_cluster=given)))
      self.assertEqual(config.coordinator_mode, "standalone_client")
      self.assertEqual(config.remote_cluster, remote)
      self.assertEqual(config.cluster_spec, tf.train.ClusterSpec(remote))
      self.assertTrue(config.is_chief)

  def test_remote_cluster_with_tf_config_cluster(self):
    with self.assertRaisesRegex(
        errors.ClusterConfigError,
        'Cannot set both "cluster_spec" of TF_CONFIG and '
        "`experimental_distribute.remote_cluster`"):
      rc.RunConfig(environ=_env(_FULL, "chief", 0), experimental_distribute=(
          rc.DistributeConfig(train_distribute=_mirrored(),
                              remote_cluster={"worker": ["w:1"]})))

  def test_remote_cluster_problems(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "needs a train_distribute strategy"):
      rc.RunConfig(environ={}, experimental_distribute=rc.DistributeConfig(
          remote_cluster={"worker": ["w:1"]}))
    with self.assertRaisesRegex(
        errors.ClusterConfigError,
        "^experimental_distribute.remote_cluster .*host:port"):
      rc.RunConfig(environ={}, experimental_distribute=rc.DistributeConfig(
          train_distribute=_mirrored(), remote_cluster={"worker": ["w"]}))


class StrategyKindTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("none", lambda: None, None),
      ("mirrored_v1", _mirrored, "mirrored"),
      ("mirrored_v2", lambda: tf.distribute.MirroredStrategy(["/cpu:0"]),
       "mirrored"),
      ("one_device_v1",
       lambda: tf.compat.v1.distribute.OneDeviceStrategy("/cpu:0"),
       "one_device"),
      ("one_device_v2", lambda: tf.distribute.OneDeviceStrategy("/cpu:0"),
       "one_device"),
      ("central_v1",
       tf.compat.v1.distribute.experimental.CentralStorageStrategy,
       "central_storage"),
      ("central_v2", tf.distribute.experimental.CentralStorageStrategy,
       "central_storage"),
      ("ps_v1", tf.compat.v1.distribute.experimental.ParameterServerStrategy,
       "parameter_server"),
      ("collective_v1",
       tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy,
       "collective"),
      ("collective_v2", tf.distribute.MultiWorkerMirroredStrategy,
       "collective"),
      ("default", tf.distribute.get_strategy, "default"),
  )
  def test_kind(self, make, kind):
    self.assertEqual(strategy_classifier.strategy_kind(make()), kind)

  def test_not_a_strategy(self):
    with self.assertRaisesRegex(errors.ConfigError, "is not a tf.distribute"):
      strategy_classifier.strategy_kind(object())


if __name__ == "__main__":
  absltest.main()
