"""Tests of harness.parsing: parse_example specs with label and weight."""

from absl.testing import absltest
import numpy as np

from harness import errors
from harness import parsing
from harness._tf import tf


def _columns():
  return [
      tf.feature_column.numeric_column("age"),
      tf.feature_column.categorical_column_with_hash_bucket("city", 10),
      tf.compat.v1.feature_column.bucketized_column(
          tf.compat.v1.feature_column.numeric_column("income"), [1.0, 2.0]),
  ]


class ClassifierSpecTest(absltest.TestCase):

  def test_spec_has_features_label_and_weight(self):
    spec = parsing.classifier_parse_example_spec(
        _columns(), label_key="clicked", label_default=0,
        weight_column="weight")
    self.assertEqual(spec, {
        "age": tf.io.FixedLenFeature((1,), tf.float32),
        "city": tf.io.VarLenFeature(tf.string),
        "income": tf.io.FixedLenFeature((1,), tf.float32),
        "clicked": tf.io.FixedLenFeature((1,), tf.int64, 0),
        "weight": tf.io.FixedLenFeature((1,), tf.float32),
    })

  def test_spec_parses_examples(self):
    spec = parsing.classifier_parse_example_spec(
        _columns(), label_key="label", label_dtype=tf.string,
        label_default="no")
    example = tf.train.Example(features=tf.train.Features(feature={
        "age": tf.train.Feature(float_list=tf.train.FloatList(value=[3.0])),
        "income": tf.train.Feature(
            float_list=tf.train.FloatList(value=[1.5])),
        "city": tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[b"x"])),
    }))
    parsed = tf.io.parse_example([example.SerializeToString()], spec)
    np.testing.assert_array_equal(parsed["label"].numpy(), [[b"no"]])
    np.testing.assert_array_equal(parsed["age"].numpy(), [[3.0]])

  def test_errors(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "label should not be used as feature"):
      parsing.classifier_parse_example_spec(_columns(), label_key="age")
    with self.assertRaisesRegex(errors.ConfigError,
                                "weight_column should not be used as feature"):
      parsing.classifier_parse_example_spec(
          _columns(), label_key="y", weight_column="age")
    with self.assertRaisesRegex(
        errors.ConfigError,
        "weight_column should be an instance of "
        "tf.feature_column.numeric_column"):
      parsing.classifier_parse_example_spec(
          _columns(), label_key="y", weight_column=_columns()[1])
    with self.assertRaisesRegex(errors.ConfigError,
                                "must be _FeatureColumn instances.*'age'"):
      parsing.classifier_parse_example_spec(["age"], label_key="y")
    with self.assertRaisesRegex(errors.ConfigError, "label_key must be set"):
      parsing.classifier_parse_example_spec(_columns(), label_key=None)


class RegressorSpecTest(absltest.TestCase):

  def test_label_dimension_and_numeric_weight_column(self):
    weight = tf.feature_column.numeric_column("w", dtype=tf.float64)
    spec = parsing.regressor_parse_example_spec(
        _columns()[:1], label_key="price", label_dimension=3,
        weight_column=weight)
    self.assertEqual(spec, {
        "age": tf.io.FixedLenFeature((1,), tf.float32),
        "price": tf.io.FixedLenFeature((3,), tf.float32),
        "w": tf.io.FixedLenFeature((1,), tf.float64),
    })

  def test_errors(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                "label should not be used as feature"):
      parsing.regressor_parse_example_spec(_columns(), label_key="city")


if __name__ == "__main__":
  absltest.main()
