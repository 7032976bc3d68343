"""Exporters: Latest/Best/Final, against a small estimator of our own.

`_Estimator` implements `export_saved_model` with the real SavedModel writer
from a real checkpoint, the boundary the harness Estimator also uses.
"""

import os

from absl.testing import absltest

from harness import errors
from harness._tf import tf
from harness.export import exporter as exporter_lib
from harness.export import writer
from harness.spec import ModeKeys
from tests import test_export as lib  # Tiny model, checkpoint, receivers.


class _Estimator:
  """Just what exporters use: `model_dir` and `export_saved_model`."""

  def __init__(self, model_dir):
    self.model_dir = model_dir
    self.exports = []

  def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                         assets_extra=None, as_text=False,
                         checkpoint_path=None):
    path = writer.export_all_saved_models(
        export_dir_base, {ModeKeys.PREDICT: serving_input_receiver_fn},
        lib.build_spec_fn(), checkpoint_path, assets_extra=assets_extra,
        as_text=as_text)
    self.exports.append(path)
    return path


def _write_eval_events(model_dir, results):
  """Writes one eval event per dict in `results`, as the evaluator does."""
  with tf.Graph().as_default():
    summary_writer = tf.compat.v1.summary.FileWriter(
        os.path.join(model_dir, "eval"))
    for step, result in enumerate(results, start=1):
      summary = tf.compat.v1.Summary(value=[
          tf.compat.v1.Summary.Value(tag=k, simple_value=v)
          for k, v in result.items()])
      summary_writer.add_summary(summary, step)
    summary_writer.close()


def _fake_export(base, name):
  path = os.path.join(base, name)
  os.makedirs(path)
  open(os.path.join(path, "saved_model.pb"), "w").close()
  return path


class ExporterTestBase(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    self.ckpt, _, _ = lib.train_checkpoint(self.model_dir)
    self.estimator = _Estimator(self.model_dir)
    self.receiver_fn = lib.raw_receiver_fn()

  def _export_path(self, exporter):
    return os.path.join(self.model_dir, "export", exporter.name)

  def _export(self, exporter, eval_result=None, final=False):
    return exporter.export(self.estimator, self._export_path(exporter),
                           self.ckpt, eval_result or {"loss": 1.0}, final)


class LatestExporterTest(ExporterTestBase):

  def test_exports_and_keeps_newest(self):
    exporter = exporter_lib.LatestExporter(
        "latest", self.receiver_fn, exports_to_keep=2)
    base = self._export_path(exporter)
    for name in ("1000000001", "1000000002", "1000000003"):
      _fake_export(base, name)
    os.makedirs(os.path.join(base, ".temp-1000000004-1"))
    os.makedirs(os.path.join(base, "notes"))
    result = self._export(exporter)
    self.assertIsInstance(result, bytes)
    self.assertTrue(os.path.exists(os.path.join(result, b"saved_model.pb")))
    self.assertEqual(writer.list_exports(base),
                     [os.path.join(base, "1000000003"), result.decode()])
    self.assertCountEqual(
        os.listdir(base),
        ["1000000003", os.path.basename(result.decode()),
         ".temp-1000000004-1", "notes"])
    self.assertEqual(exporter.name, "latest")

  def test_none_keeps_everything(self):
    exporter = exporter_lib.LatestExporter(
        "latest", self.receiver_fn, exports_to_keep=None)
    base = self._export_path(exporter)
    for name in ("1000000001", "1000000002"):
      _fake_export(base, name)
    self._export(exporter)
    self.assertLen(writer.list_exports(base), 3)

  def test_exports_to_keep_must_be_positive(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "`exports_to_keep`.*positive.*Got 0"):
      exporter_lib.LatestExporter("latest", self.receiver_fn,
                                  exports_to_keep=0)


class BestExporterTest(ExporterTestBase):

  def test_first_call_exports_even_when_events_hold_a_better_loss(self):
    # 2.15 exporter.py BestExporter.export: `not self._has_exported` exports
    # on the first call; exporter_test.py test_best_exporter_with_preemption
    # (events hold loss 50 and 60, the first export with loss 100 is made).
    _write_eval_events(self.model_dir, [{"loss": 0.75}, {"loss": 0.5}])
    exporter = exporter_lib.BestExporter(
        serving_input_receiver_fn=self.receiver_fn, exports_to_keep=1)
    base = self._export_path(exporter)
    first = self._export(exporter, {"loss": 0.625})
    self.assertEqual(writer.list_exports(base), [first.decode()])
    self.assertIsNone(self._export(exporter, {"loss": 0.75}))
    first = self._export(exporter, {"loss": 0.25})
    self.assertEqual(writer.list_exports(base), [first.decode()])
    self.assertIsNone(self._export(exporter, {"loss": 0.375}))
    second = self._export(exporter, {"loss": 0.125})
    self.assertNotEqual(first, second)
    # exports_to_keep=1: only the newest best remains.
    self.assertEqual(writer.list_exports(base), [second.decode()])

  def test_first_export_when_events_hold_this_evaluation(self):
    _write_eval_events(self.model_dir, [{"loss": 0.5}])
    exporter = exporter_lib.BestExporter(
        name="best", serving_input_receiver_fn=self.receiver_fn)
    self.assertIsNotNone(self._export(exporter, {"loss": 0.5}))
    self.assertEqual(exporter.name, "best")

  def test_no_event_files_exports_first_time(self):
    exporter = exporter_lib.BestExporter(
        serving_input_receiver_fn=self.receiver_fn,
        compare_fn=lambda best_eval_result, current_eval_result: (
            current_eval_result["acc"] > best_eval_result["acc"]))
    self.assertIsNotNone(self._export(exporter, {"acc": 0.5}))
    self.assertIsNone(self._export(exporter, {"acc": 0.25}))
    self.assertLen(self.estimator.exports, 1)

  def test_compare_fn_validation(self):
    with self.assertRaisesRegex(errors.ConfigError, "must not be None"):
      exporter_lib.BestExporter(compare_fn=None)
    with self.assertRaisesRegex(errors.ConfigError,
                                "must include best_eval_result"):
      exporter_lib.BestExporter(compare_fn=lambda a, current_eval_result: 1)
    with self.assertRaisesRegex(errors.ConfigError,
                                "must include current_eval_result"):
      exporter_lib.BestExporter(compare_fn=lambda best_eval_result, b: 1)
    with self.assertRaisesRegex(errors.ConfigError,
                                "not expected args: \\['extra'\\]"):
      exporter_lib.BestExporter(
          compare_fn=lambda best_eval_result, current_eval_result, extra: 1)
    with self.assertRaisesRegex(errors.ConfigError, "positive"):
      exporter_lib.BestExporter(exports_to_keep=-1)

  def test_default_compare_needs_loss(self):
    exporter = exporter_lib.BestExporter(
        serving_input_receiver_fn=self.receiver_fn, event_file_pattern=None)
    self._export(exporter, {"loss": 1.0})
    with self.assertRaisesRegex(ValueError, "current_eval_result cannot be "
                                "empty or no loss"):
      self._export(exporter, {"accuracy": 1.0})


class FinalExporterTest(ExporterTestBase):

  def test_exports_only_at_the_end(self):
    exporter = exporter_lib.FinalExporter("final", self.receiver_fn,
                                          as_text=True)
    self.assertIsNone(self._export(exporter, final=False))
    self.assertFalse(os.path.exists(self._export_path(exporter)))
    result = self._export(exporter, final=True)
    self.assertTrue(os.path.exists(os.path.join(result, b"saved_model.pbtxt")))
    self.assertEqual(exporter.name, "final")


class ExporterInterfaceTest(absltest.TestCase):

  def test_exporter_is_abstract(self):
    with self.assertRaises(TypeError):
      exporter_lib.Exporter()  # pylint: disable=abstract-class-instantiated

    class Custom(exporter_lib.Exporter):
      name = "custom"

      def export(self, estimator, export_path, checkpoint_path, eval_result,
                 is_the_final_export):
        return export_path

    self.assertEqual(Custom().export(None, "p", None, None, False), "p")


if __name__ == "__main__":
  absltest.main()
