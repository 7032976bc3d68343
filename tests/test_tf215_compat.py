"""What tf.estimator 2.15 accepted is accepted; what it refused is refused
with its exception type and its sentence verbatim, then harness's fix.

Also the private helpers legacy code calls and the `tensorflow_estimator.
python.estimator.*` module path of every public name. docs/ERRORS.md lists
the same sentences (a test keeps the two in step).
"""

import importlib
import json
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized

from harness import cluster
from harness import compat
from harness import errors
from harness import run_config as rc
from harness._tf import tf
from harness.cli import flags
from harness.compat import aliases as compat_aliases
import harness
from tests import _support
from tests import conftest

_CLUSTER = {"chief": ["host0:2222"], "ps": ["host1:2222", "host2:2222"],
            "worker": ["host3:2222", "host4:2222", "host5:2222"]}
_PLACEHOLDERS = {"chief": ["host0:0"], "worker": ["host1:0", "host2:0"]}


_env = _support.tf_config_environ


def _mirrored():
  return tf.compat.v1.distribute.MirroredStrategy(["/cpu:0"])


class AcceptedLike215Test(parameterized.TestCase):
  """TF_CONFIGs 2.15's RunConfig accepted, with the properties it gave."""

  def test_placeholder_addresses(self):
    config = rc.RunConfig(environ=_env(_PLACEHOLDERS, "worker", 1))
    self.assertEqual((config.task_type, config.task_id, config.master,
                      config.num_worker_replicas, config.is_chief),
                     ("worker", 1, "grpc://host2:0", 3, False))

  def test_2_15_docstring_worker_example(self):
    config = rc.RunConfig(environ=_env(_CLUSTER, "worker", 1))
    self.assertEqual((config.master, config.task_id, config.num_ps_replicas,
                      config.num_worker_replicas, config.task_type,
                      config.is_chief, config.global_id_in_cluster),
                     ("grpc://host4:2222", 1, 2, 4, "worker", False, 2))

  @parameterized.named_parameters(
      ("task_without_cluster", _env(None, "worker", 0)),
      ("evaluator_index_1", _env(_CLUSTER, "evaluator", 1)),
      ("evaluator_not_listed", _env({"chief": ["c:0"]}, "evaluator", 0)),
      ("duplicate_addresses", _env({"chief": ["h:1"], "worker": ["h:1"]},
                                   "chief", 0)),
      ("port_out_of_range", _env({"chief": ["h:70000"]}, "chief", 0)),
      ("custom_job_name", _env({"chief": ["h:1"], "my-job": ["h:2"]},
                               "my-job", 0)),
      ("two_evaluators_listed", _env(dict(_CLUSTER, evaluator=["e:1", "e:2"]),
                                     "chief", 0)),
      ("job_as_index_dict", _env({"chief": {"0": "h:1"}}, "chief", 0)),
      ("typo_key", {"TF_CONFIG": json.dumps({"clusters": {}})}),
  )
  def test_accepted(self, environ):
    self.assertIsNotNone(rc.RunConfig(environ=environ))

  @parameterized.named_parameters(
      ("index_out_of_range", _env({"worker": ["a:1"]}, "worker", 5)),
      ("unknown_type", _env({"worker": ["a:1"]}, "trainer", 0)),
      ("two_chiefs", _env({"chief": ["a:1", "b:1"], "worker": ["c:1"]},
                          "worker", 0)),
  )
  def test_strategy_defers_checks_to_training(self, environ):
    # 2.15 left these to its distribute coordinator, at training time.
    config = rc.RunConfig(environ=environ, train_distribute=_mirrored())
    with self.assertRaises(ValueError):
      rc.check_supported_config(config)


# (name, environ, has_strategy, exception type of 2.15, 2.15's sentence)
_REFUSED = (
    ("no_chief", _env({"worker": ["a:1"]}, "worker", 0), ValueError,
     'If "cluster" is set in TF_CONFIG, it must have one "chief" node.'),
    ("two_chiefs", _env({"chief": ["a:1", "b:1"]}, "chief", 0), ValueError,
     'The "cluster" in TF_CONFIG must have only one "chief" node.'),
    ("two_masters", _env({"master": ["a:1", "b:1"]}, "master", 0), ValueError,
     'The "cluster" in TF_CONFIG must have only one "master" node.'),
    ("no_task_type", _env(_CLUSTER), ValueError,
     'If "cluster" is set in TF_CONFIG, task type must be set.'),
    ("no_task_index", _env(_CLUSTER, "worker"), ValueError,
     'If "cluster" is set in TF_CONFIG, task index must be set.'),
    ("negative_index", _env(_CLUSTER, "worker", -1), ValueError,
     "Task index must be non-negative number."),
    ("unknown_task_type", _env(_CLUSTER, "trainer", 0), ValueError,
     "trainer is not a valid task_type in the cluster_spec:\nClusterSpec("
     "{'chief': ['host0:2222'], 'ps': ['host1:2222', 'host2:2222'], 'worker':"
     " ['host3:2222', 'host4:2222', 'host5:2222']})\n\nNote that these values"
     " may be coming from the TF_CONFIG environment variable."),
    ("index_out_of_range", _env(_CLUSTER, "worker", 3), ValueError,
     "3 is not a valid task_id for task_type worker in the cluster_spec:\n"),
    ("chief_without_cluster", _env(None, "chief", 0), ValueError,
     'If "cluster" is not set in TF_CONFIG, task type must be WORKER.'),
    ("index_without_cluster", _env(None, "worker", 1), ValueError,
     'If "cluster" is not set in TF_CONFIG, task index must be 0.'),
    ("master_and_chief", _env({"master": ["a:1"], "chief": ["b:1"]},
                              "master", 0), ValueError,
     "If `master` node exists in `cluster`, job `chief` is not supported."),
    ("master_and_evaluator", _env({"master": ["a:1"]}, "evaluator", 0),
     ValueError, "If `master` node exists in `cluster`, task_type `evaluator`"
     " is not supported."),
    ("service_not_dict", {"TF_CONFIG": json.dumps({"service": [1]})},
     TypeError,
     "If \"service\" is set in TF_CONFIG, it must be a dict. Given <class "
     "'list'>"),
    ("empty_model_dir", {"TF_CONFIG": json.dumps({"model_dir": ""})},
     ValueError, "model_dir in TF_CONFIG should be non-empty."),
    ("bad_json", {"TF_CONFIG": "{'cluster': {}}"}, json.JSONDecodeError,
     "Expecting property name enclosed in double quotes: line 1 column 2 "
     "(char 1)"),
    ("job_not_list", _env({"chief": "a:1"}, "chief", 0), TypeError,
     "The tasks for job 'chief' must be a list or a dictionary from integers "
     "to strings."),
)


class RefusedLike215Test(parameterized.TestCase):

  @parameterized.named_parameters(*_REFUSED)
  def test_run_config(self, environ, error_type, sentence):
    with self.assertRaises(error_type) as raised:
      rc.RunConfig(environ=environ)
    text = str(raised.exception)
    self.assertIsInstance(raised.exception, errors.ClusterConfigError)
    self.assertStartsWith(text, sentence)
    self.assertIn("Fix:", text[len(sentence):])

  @parameterized.named_parameters(
      ("disallowed_job", {"worker": ["a:1"], "trainer": ["b:1"]}, "worker", 0,
       "Disallowed task type found in cluster spec. Allowed types are "
       "('chief', 'worker', 'evaluator', 'ps', None) and the cluster spec is "),
      ("task_type_not_found", {"worker": ["a:1"]}, "ps", 0,
       "`task_type` 'ps' not found in cluster_spec."),
      ("two_chiefs", {"chief": ["a:1", "b:1"], "worker": ["c:1"]}, "worker",
       0, "There must be at most one 'chief' job."),
      ("task_id_too_big", {"worker": ["a:1"]}, "worker", 4,
       "The `task_id` 4 exceeds the maximum id of worker."),
      ("second_evaluator", {"worker": ["a:1"]}, "evaluator", 1,
       "For distributed training, there can only be one `evaluator` task "
       "(with task id 0).  Given task id 1"),
  )
  def test_with_strategy_at_training(self, cluster_dict, task_type, index,
                                     sentence):
    config = rc.RunConfig(environ=_env(cluster_dict, task_type, index),
                          train_distribute=_mirrored())
    with self.assertRaises(ValueError) as raised:
      rc.check_supported_config(config)
    self.assertStartsWith(str(raised.exception), sentence)
    self.assertIn("Fix:", str(raised.exception))


class ChecksWhereTheyMatterTest(absltest.TestCase):

  def test_placeholders_refused_before_training(self):
    config = rc.RunConfig(environ=_env(_PLACEHOLDERS, "chief", 0))
    with self.assertRaisesRegex(errors.ClusterConfigError,
                                r"'host0:0': an address must be host:port "
                                r"with a port in 1..65535"):
      rc.check_supported_config(config)

  def test_placeholders_refused_by_the_binary_s_flags_check(self):
    with self.assertRaisesRegex(errors.FlagError, "port in 1..65535"):
      flags.parse(["harness.main", "--model_fn=linear", "--input_fn=constant",
                   "--model_dir=/tmp/x"], environ=_env(_PLACEHOLDERS,
                                                       "chief", 0),
                  gpu_count=lambda: 0)

  def test_placeholders_refused_at_server_start(self):
    info = cluster.parse_tf_config(_env(_PLACEHOLDERS, "chief", 0)[
        "TF_CONFIG"])
    with self.assertRaisesRegex(errors.ClusterConfigError, "port in 1..65535"):
      cluster.check_servable(info)

  def test_task_without_cluster_is_a_flag_error_in_the_binary(self):
    environ = _env(None, "worker", 0)
    self.assertEqual(rc.RunConfig(environ=environ).task_type, "worker")
    command = [sys.executable, "-m", "harness.main", "--model_fn=linear",
               "--input_fn=constant", "--max_steps=1",
               f"--model_dir={self.create_tempdir().full_path}"]
    env = conftest.child_env()
    env.update(environ)
    proc = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=120, cwd=conftest.REPO_ROOT, check=False)
    detail = f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    self.assertEqual(proc.returncode, 2, detail)
    self.assertIn('names task {"type": "worker", "index": 0} but no '
                  '"cluster"', proc.stderr, detail)
    self.assertIn('Fix: add the "cluster"', proc.stderr, detail)
    self.assertNotIn("Traceback", proc.stderr, detail)


def _input_fn():
  return tf.data.Dataset.from_tensors(({"x": [1.0]}, [1.0]))


class _NotAHook:
  pass


class ArgumentSentencesTest(parameterized.TestCase):
  """Estimator, specs, exporters and train_and_evaluate argument errors."""

  @parameterized.named_parameters(
      ("train_spec_input_fn", lambda: harness.TrainSpec(3), TypeError,
       "`input_fn` must be callable, given: 3"),
      ("train_spec_max_steps", lambda: harness.TrainSpec(_input_fn,
                                                         max_steps=0),
       ValueError, "Must specify max_steps > 0, given: 0"),
      ("train_spec_hooks", lambda: harness.TrainSpec(
          _input_fn, hooks=[_NotAHook()]), TypeError,
       "All hooks must be `SessionRunHook` instances, given: "),
      ("train_spec_listeners", lambda: harness.TrainSpec(
          _input_fn, saving_listeners=[_NotAHook()]), TypeError,
       "All saving_listeners must be `CheckpointSaverListener` instances, "
       "given: "),
      ("eval_spec_steps", lambda: harness.EvalSpec(_input_fn, steps=0),
       ValueError, "Must specify steps > 0, given: 0"),
      ("eval_spec_name", lambda: harness.EvalSpec(_input_fn, name=3),
       TypeError, "`name` must be string, given: 3"),
      ("eval_spec_delay", lambda: harness.EvalSpec(
          _input_fn, start_delay_secs=-1), ValueError,
       "Must specify start_delay_secs >= 0, given: -1"),
      ("eval_spec_throttle", lambda: harness.EvalSpec(
          _input_fn, throttle_secs=-1), ValueError,
       "Must specify throttle_secs >= 0, given: -1"),
      ("eval_spec_exporters", lambda: harness.EvalSpec(
          _input_fn, exporters=[3]), TypeError,
       "`exporters` must be an Exporter, an iterable of Exporter, or `None`, "
       "found [3]."),
      ("eval_spec_exporter_names", lambda: harness.EvalSpec(
          _input_fn, exporters=[
              harness.LatestExporter("a", lambda: None),
              harness.LatestExporter("a", lambda: None)]), ValueError,
       "`exporters` must have unique names. Such a name cannot be `None`. "
       "All exporter names: ['a', 'a']"),
      ("exporter_compare_fn", lambda: harness.BestExporter(
          compare_fn=lambda x: True), ValueError, "compare_fn ("),
      ("exports_to_keep", lambda: harness.LatestExporter(
          "a", lambda: None, exports_to_keep=0), ValueError,
       "`exports_to_keep`, if provided, must be a positive number. Got 0"),
      ("train_and_evaluate_eval_spec", lambda: harness.train_and_evaluate(
          None, None, None), TypeError,
       "`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
       "<class 'NoneType'>"),
      ("train_and_evaluate_estimator", lambda: harness.train_and_evaluate(
          None, None, harness.EvalSpec(_input_fn)), TypeError,
       "`estimator` must have type `tf.estimator.Estimator`. Got: "
       "<class 'NoneType'>"),
      ("replace", lambda: harness.RunConfig(environ={}).replace(task_id=1),
       ValueError, "Replacing task_id is not supported. Allowed properties "
       "are ['model_dir',"),
  )
  def test_sentence_and_type(self, make, error_type, sentence):
    with self.assertRaises(error_type) as raised:
      make()
    self.assertIsInstance(raised.exception, errors.HarnessError)
    self.assertStartsWith(str(raised.exception), sentence)
    self.assertIn("Fix", str(raised.exception))

  def test_estimator_train_hooks(self):
    est = harness.Estimator(lambda features, labels, mode: None,
                            model_dir=self.create_tempdir().full_path)
    with self.assertRaises(TypeError) as raised:
      est.train(_input_fn, hooks=[_NotAHook()], max_steps=1)
    self.assertStartsWith(str(raised.exception),
                          "Hooks must be a SessionRunHook, given: ")


# Each public name and the tensorflow_estimator 2.15 module it lived in.
_MODULE_OF = {
    "estimator": ("Estimator", "WarmStartSettings", "VocabInfo"),
    "model_fn": ("EstimatorSpec", "ModeKeys"),
    "mode_keys": ("ModeKeys",),
    "run_config": ("RunConfig", "DistributeConfig"),
    "training": ("TrainSpec", "EvalSpec", "train_and_evaluate"),
    "exporter": ("Exporter", "LatestExporter", "BestExporter",
                 "FinalExporter"),
    "extenders": ("add_metrics",),
    "canned.parsing_utils": ("classifier_parse_example_spec",
                             "regressor_parse_example_spec"),
    "hooks.session_run_hook": ("SessionRunHook", "SessionRunArgs",
                               "SessionRunContext", "SessionRunValues"),
    "hooks.basic_session_run_hooks": (
        "CheckpointSaverHook", "CheckpointSaverListener", "StepCounterHook",
        "LoggingTensorHook", "StopAtStepHook", "NanTensorHook",
        "NanLossDuringTrainingError", "SummarySaverHook",
        "GlobalStepWaiterHook", "FinalOpsHook", "FeedFnHook", "ProfilerHook",
        "SecondOrStepTimer"),
    "early_stopping": ("make_early_stopping_hook", "stop_if_higher_hook",
                       "stop_if_lower_hook", "stop_if_no_increase_hook",
                       "stop_if_no_decrease_hook", "read_eval_metrics"),
    # Heads: their 2.15 modules under head/.
    "head.base_head": ("Head",),
    "head.binary_class_head": ("BinaryClassHead",),
    "head.multi_class_head": ("MultiClassHead",),
    "head.multi_label_head": ("MultiLabelHead",),
    "head.regression_head": ("RegressionHead", "PoissonRegressionHead",
                             "LogisticRegressionHead"),
    "head.multi_head": ("MultiHead",),
}
# Canned estimators: in 2.15's canned/ modules `X` is the v1 class and `XV2`
# the one tf.estimator.X (harness.X) names.
_CANNED_MODULE_OF = {
    "canned.dnn": ("DNNClassifier", "DNNRegressor", "DNNEstimator"),
    "canned.linear": ("LinearClassifier", "LinearRegressor",
                      "LinearEstimator"),
    "canned.dnn_linear_combined": (
        "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
        "DNNLinearCombinedEstimator"),
    "canned.baseline": ("BaselineClassifier", "BaselineRegressor",
                        "BaselineEstimator"),
}
_SUBPACKAGES = {"errors", "export", "experimental", "inputs", "tpu"}


class ModulePathsTest(absltest.TestCase):

  def test_every_public_name_has_its_2_15_module_path(self):
    covered = {n for table in (_MODULE_OF, _CANNED_MODULE_OF)
               for names in table.values() for n in names}
    self.assertEqual(covered, set(harness.__all__) - _SUBPACKAGES)
    for root in ("tensorflow_estimator.python.estimator",
                 "tensorflow.python.estimator"):
      for table, suffix in ((_MODULE_OF, ""), (_CANNED_MODULE_OF, "V2")):
        for rel, names in table.items():
          module = importlib.import_module(f"{root}.{rel}")
          for name in names:
            with self.subTest(module=module.__name__, name=name):
              self.assertIs(getattr(module, name + suffix),
                            getattr(harness, name))

  def test_export_and_inputs_names(self):
    base = "tensorflow_estimator.python.estimator"
    for rel, package in (("export.export_lib", harness.export),
                         ("export", harness.export),
                         ("inputs", harness.inputs)):
      module = importlib.import_module(f"{base}.{rel}")
      for name in package.__all__:
        with self.subTest(module=rel, name=name):
          self.assertIs(getattr(module, name), getattr(package, name))

  def test_private_helpers_legacy_code_calls(self):
    from tensorflow_estimator.python.estimator import early_stopping  # pylint: disable=g-import-not-at-top
    from tensorflow_estimator.python.estimator import estimator  # pylint: disable=g-import-not-at-top
    model_dir = self.create_tempdir().full_path
    estimator._write_dict_to_summary(model_dir, {"loss": 0.5}, 7)  # pylint: disable=protected-access
    self.assertEqual(harness.read_eval_metrics(model_dir), {7: {"loss": 0.5}})
    hook = early_stopping._StopOnPredicateHook(lambda: True,  # pylint: disable=protected-access
                                               run_every_secs=None,
                                               run_every_steps=1)
    self.assertIsInstance(hook, harness.SessionRunHook)
    self.assertIsInstance(early_stopping._CheckForStoppingHook(),  # pylint: disable=protected-access
                          harness.SessionRunHook)

  def test_register_module_hook_for_later_modules(self):
    compat.register_module("canned.demo_for_test",
                           names={"Thing": "harness:RunConfig"})
    self.addCleanup(compat_aliases.LAYOUT.pop, "canned.demo_for_test")
    module = importlib.import_module(
        "tensorflow_estimator.python.estimator.canned.demo_for_test")
    self.assertIs(module.Thing, harness.RunConfig)


class ErrorsDocTest(absltest.TestCase):

  def test_errors_md_lists_each_2_15_sentence(self):
    text = (conftest.REPO_ROOT / "docs" / "ERRORS.md").read_text()
    for name, _, _, sentence in _REFUSED:
      first_line = sentence.split("\n")[0]
      with self.subTest(case=name):
        self.assertIn(first_line.replace("|", "\\|")[:60], text)


if __name__ == "__main__":
  absltest.main()
