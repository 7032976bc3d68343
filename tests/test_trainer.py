"""Tests of harness.core.trainer: the one training entry.

`Estimator.train` (local), `distribute/roles.train_in_cluster` (a TF_CONFIG
chief, in-process server) and `distribute/remote.train_remote` (one
in-process `tf.distribute.Server` as the remote cluster) all reach
`trainer.train` with the Estimator's `TrainModel`; the entry itself keeps
train()'s checks, skip rule and warm start.
"""

import ast
import os
import pathlib
from unittest import mock

from absl.testing import absltest

import harness
from harness import errors
from harness import run_config as run_config_lib
from harness._tf import tf
from harness.core import train_loop
from harness.core import trainer
from harness.distribute import strategies
from harness.launch import ports
from harness.state import run_state
from tests import _support


def _model_fn(features, labels, mode, params):
  del params  # Checked to arrive in TrainModel.params.
  return _support.scalar_weight_model_fn()(features, labels, mode)


class _Recorder:
  """Stands in for trainer.train: records each call, trains nothing."""

  def __init__(self):
    self.calls = []

  def __call__(self, model, input_fn, **kwargs):
    self.calls.append((model, input_fn, kwargs))
    return 0.5


class CallersReachTheEntryTest(absltest.TestCase):

  def _estimator(self, config):
    return harness.Estimator(_model_fn, config=config, params={"p": 1})

  def _train_recorded(self, est, **train_kwargs):
    """est.train(...) with trainer.train recorded; its one call's kwargs."""
    recorder = _Recorder()
    with mock.patch.object(trainer, "train", recorder):
      self.assertIs(est.train(_support.constant_input_fn, **train_kwargs),
                    est)
    self.assertLen(recorder.calls, 1)
    model, input_fn, kwargs = recorder.calls[0]
    self.assertIsInstance(model, trainer.TrainModel)
    self.assertEqual(model.model_dir, est.model_dir)
    self.assertEqual(model.params, {"p": 1})
    self.assertIs(input_fn, _support.constant_input_fn)
    self.assertIsInstance(kwargs["context"], train_loop.TrainContext)
    for name, value in train_kwargs.items():
      self.assertEqual(kwargs[name], value)
    return kwargs

  def test_local_training_calls_the_entry(self):
    est = self._estimator(harness.RunConfig(
        model_dir=self.create_tempdir().full_path, environ={}))
    kwargs = self._train_recorded(est, max_steps=3)
    self.assertIsNone(kwargs["steps"])
    self.assertEqual(kwargs["context"].task_label, "local")
    self.assertEqual(kwargs["context"].master, "")
    self.assertIsNone(kwargs["strategy"])

  def test_cluster_chief_calls_the_entry(self):
    cluster = _support.loopback_cluster(chief=1)
    model_dir = self.create_tempdir().full_path
    est = self._estimator(harness.RunConfig(
        model_dir=model_dir,
        environ=_support.tf_config_environ(cluster, "chief", 0)))
    context = self._train_recorded(est, steps=2)["context"]
    self.assertEqual(context.task_label, "chief/0")
    self.assertTrue(context.is_chief)
    self.assertTrue(context.master.startswith("grpc://"), context.master)
    # roles still marks the end of training around the entry.
    marker = run_state.read_training_stopped(model_dir)
    self.assertIsNotNone(marker)
    self.assertEqual(marker.get("reason"), "finished")

  def test_remote_client_calls_the_entry_per_task(self):
    address = f"127.0.0.1:{ports.pick_free_port()}"
    server = tf.distribute.Server(
        tf.train.ClusterSpec({"worker": [address]}), job_name="worker",
        task_index=0, start=True)
    self.assertTrue(server.target)
    est = self._estimator(harness.RunConfig(
        model_dir=self.create_tempdir().full_path, environ={},
        remote_connect_timeout_secs=20,
        experimental_distribute=run_config_lib.DistributeConfig(
            train_distribute=strategies.make_strategy("collective"),
            remote_cluster={"worker": [address]})))
    kwargs = self._train_recorded(est, max_steps=4)
    context = kwargs["context"]
    self.assertEqual(context.task_label, "remote worker/0")
    self.assertEqual(context.master, f"grpc://{address}")
    self.assertIsNotNone(kwargs["strategy"])


class EntryTest(absltest.TestCase):

  def _model(self, model_dir, warm_start=None):
    config = harness.RunConfig(model_dir=model_dir, environ={},
                               save_checkpoints_steps=2,
                               save_checkpoints_secs=None)
    model_fn = _support.scalar_weight_model_fn()
    return trainer.TrainModel(
        call_model_fn=lambda f, l, mode, config: model_fn(f, l, mode),
        params={}, model_dir=model_dir, config=config,
        warm_start=warm_start)

  def _context(self):
    return train_loop.TrainContext(master="", is_chief=True, should_init=True,
                                   session_config=None)

  def _train(self, model, **kwargs):
    args = dict(hooks=None, steps=None, max_steps=None,
                saving_listeners=None, context=self._context())
    args.update(kwargs)
    return trainer.train(model, _support.constant_input_fn, **args)

  def test_trains_warm_starts_and_skips_once_max_steps_is_saved(self):
    model_dir = self.create_tempdir().full_path
    warm_starts = []
    model = self._model(model_dir, warm_start=lambda: warm_starts.append(
        tf.compat.v1.get_default_graph()))
    loss = self._train(model, max_steps=4)
    self.assertIsNotNone(loss)
    self.assertEqual(_support.checkpoint_step(model_dir), 4)
    self.assertLen(warm_starts, 1)  # In the TRAIN graph, before the session.
    with self.assertLogs(level="INFO") as logs:
      self.assertIsNone(self._train(model, max_steps=4))
    self.assertIn("Skipping training since max_steps has already saved "
                  "(global step 4 >= max_steps 4).", "\n".join(logs.output))
    self.assertLen(warm_starts, 1)  # Skipped before any graph.
    self.assertTrue(os.path.exists(os.path.join(model_dir, "checkpoint")))

  def test_bad_steps_are_rejected_before_any_graph(self):
    model = self._model(self.create_tempdir().full_path)
    with self.assertRaisesRegex(errors.ConfigError,
                                "Can not provide both steps and max_steps"):
      self._train(model, steps=1, max_steps=2)
    with self.assertRaisesRegex(errors.ConfigError,
                                r"Must specify max_steps > 0, given: 0"):
      self._train(model, max_steps=0)


def _estimator_private_method_calls(source, private_methods):
  """`x._m` for Estimator's private methods `_m`, but `self._m` and
  `super()._m` (a subclass's own use)."""
  found = []
  for node in ast.walk(ast.parse(source)):
    if not (isinstance(node, ast.Attribute) and node.attr in private_methods):
      continue
    value = node.value
    if isinstance(value, ast.Name) and value.id == "self":
      continue
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        and value.func.id == "super"):
      continue
    found.append(f"{node.lineno}: {ast.unparse(node)}")
  return found


class NoPrivateCrossCallTest(absltest.TestCase):

  def test_no_module_calls_an_estimator_private_method(self):
    root = pathlib.Path(harness.__file__).parent
    tree = ast.parse((root / "estimator.py").read_text())
    estimator_class = next(n for n in tree.body if isinstance(
        n, ast.ClassDef) and n.name == "Estimator")
    private_methods = {
        n.name for n in estimator_class.body
        if isinstance(n, ast.FunctionDef) and n.name.startswith("_")
        and not n.name.startswith("__")}
    self.assertIn("_call_model_fn", private_methods)
    found = {}
    for path in sorted(root.rglob("*.py")):
      if path.name == "estimator.py" and path.parent == root:
        continue
      calls = _estimator_private_method_calls(path.read_text(),
                                              private_methods)
      if calls:
        found[str(path.relative_to(root))] = calls
    self.assertEqual(found, {})

  def test_the_check_fails_on_a_cross_call(self):
    source = ("def f(estimator):\n"
              "  return estimator._call_model_fn(1, 2, 3, 4)\n")
    self.assertEqual(
        _estimator_private_method_calls(source, {"_call_model_fn"}),
        ["2: estimator._call_model_fn"])


if __name__ == "__main__":
  absltest.main()
