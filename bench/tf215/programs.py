"""Three legacy tf.estimator programs for `bench.tf215.vs215`, on both TFs.

    python -m bench.tf215.programs       # writes the data files (once; cached)

Each program is written once, as a tf.estimator 2.15 user wrote it, and
takes the estimator namespace as an argument: `tf.estimator` (with
`tf.compat.v1.estimator.inputs`) under TensorFlow 2.15, `harness` (with
`harness.inputs`) under TensorFlow 2.21. This module imports only numpy and
TensorFlow (the caller's), never harness or tensorflow_estimator.

* ``census_csv``: wide & deep on a census-style CSV file (200,000 rows), read
  by `TextLineDataset` + `skip(1)` + `map(tf.io.decode_csv)`; canned
  `DNNLinearCombinedClassifier` over numeric, bucketized, vocabulary-list,
  hashed, crossed, embedding and indicator feature columns.
* ``tfrecord``: `tf.train.Example` records (784 float pixels + int64 label,
  20,000 records in 4 TFRecord shards) parsed per batch with
  `tf.io.parse_example`; a custom model_fn (`bench.configs`' MLP) returning an
  `EstimatorSpec`.
* ``numpy_dnn``: canned `DNNClassifier` [256, 256] on in-memory arrays
  (`bench.configs.data("mlp")`) through `numpy_input_fn(shuffle=True)`.

The data is generated from a fixed seed with numpy (the CSV by the csv module,
the records by the TensorFlow of the first process that needs them) into
`DATA_DIR`, written to a temporary name and renamed, and reused across runs.
The input_fns written here prefetch nothing, as legacy programs did
(numpy_input_fn buffers as its own implementation does).
"""

import csv
import os
import sys

import numpy as np

from bench import configs

__all__ = ["PROGRAMS", "DATA_DIR", "ensure_data", "build"]

PROGRAMS = ("census_csv", "tfrecord", "numpy_dnn")
DATA_DIR = "/tmp/harness_bench_data"

# census_csv: a column order, defaults for decode_csv, the category sets.
_CENSUS_ROWS = 200_000
_CENSUS_COLUMNS = ("age", "education", "occupation", "hours_per_week",
                   "capital_gain", "native_country", "label")
_CENSUS_DEFAULTS = ([0], [""], [""], [0], [0.0], [""], [0])
_EDUCATION = ("Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th",
              "11th", "12th", "HS-grad", "Some-college", "Assoc-voc",
              "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate")
_NUM_OCCUPATIONS = 1000
_NUM_COUNTRIES = 40

# tfrecord: records and shards.
_TFRECORD_RECORDS = 20_000
_TFRECORD_SHARDS = 4


def _census_path():
  return os.path.join(DATA_DIR, "census_200k.csv")


def _tfrecord_paths():
  return [os.path.join(DATA_DIR, f"mnist_like_20k-{i:05d}-of-"
                       f"{_TFRECORD_SHARDS:05d}.tfrecord")
          for i in range(_TFRECORD_SHARDS)]


def _write_atomically(path, write):
  """Calls `write(temporary_path)`, then renames it to `path`."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  temporary = f"{path}.tmp{os.getpid()}"
  write(temporary)
  os.replace(temporary, path)


def _write_census(path):
  """Census-style rows whose label depends on the features (fixed seed)."""
  rng = np.random.default_rng(configs.SEED)
  n = _CENSUS_ROWS
  age = rng.integers(17, 91, size=n)
  education = rng.integers(0, len(_EDUCATION), size=n)
  # Zipf-like occupation and country frequencies, as real census columns.
  occupation = np.minimum(rng.zipf(1.3, size=n), _NUM_OCCUPATIONS) - 1
  country = np.minimum(rng.zipf(2.0, size=n), _NUM_COUNTRIES) - 1
  hours = np.clip(rng.normal(40, 12, size=n), 1, 99).astype(np.int64)
  gain = np.where(rng.random(n) < 0.08, rng.exponential(5000, size=n), 0.0)
  score = (0.04 * (age - 40) + 0.25 * (education - 8) + 0.03 * (hours - 40)
           + 0.0002 * gain + 0.5 * np.sin(occupation) + rng.normal(0, 1, n))
  label = (score > 0.5).astype(np.int64)
  with open(path, "w", encoding="utf-8", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(_CENSUS_COLUMNS)
    for i in range(n):
      writer.writerow((int(age[i]), _EDUCATION[education[i]],
                       f"occupation-{occupation[i]:04d}", int(hours[i]),
                       f"{gain[i]:.1f}", f"country-{country[i]:02d}",
                       int(label[i])))


def _write_tfrecords(tf, paths):
  rng = np.random.default_rng(configs.SEED + 1)
  per_shard = _TFRECORD_RECORDS // len(paths)
  for path in paths:
    pixels = rng.random((per_shard, 784), dtype=np.float32)
    labels = rng.integers(0, 10, size=per_shard)

    def write(temporary, pixels=pixels, labels=labels):
      with tf.io.TFRecordWriter(temporary) as writer:
        for x, y in zip(pixels, labels):
          example = tf.train.Example(features=tf.train.Features(feature={
              "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
              "label": tf.train.Feature(
                  int64_list=tf.train.Int64List(value=[int(y)])),
          }))
          writer.write(example.SerializeToString())
    if not os.path.exists(path):
      _write_atomically(path, write)


def ensure_data(tf, program):
  """Writes `program`'s data files into DATA_DIR unless they are there."""
  if program == "census_csv" and not os.path.exists(_census_path()):
    _write_atomically(_census_path(), _write_census)
  elif program == "tfrecord":
    _write_tfrecords(tf, _tfrecord_paths())


# --- the programs ------------------------------------------------------------


def _census(tf, api, config, batch_size):
  fc = tf.compat.v1.feature_column

  def input_fn():
    def parse(line):
      values = tf.io.decode_csv(line, record_defaults=list(_CENSUS_DEFAULTS))
      features = dict(zip(_CENSUS_COLUMNS, values))
      return features, features.pop("label")
    dataset = tf.data.TextLineDataset(_census_path()).skip(1)
    return dataset.map(parse).repeat().batch(batch_size)

  age = fc.numeric_column("age")
  education = fc.categorical_column_with_vocabulary_list(
      "education", list(_EDUCATION))
  occupation = fc.categorical_column_with_hash_bucket(
      "occupation", hash_bucket_size=1000)
  country = fc.categorical_column_with_hash_bucket(
      "native_country", hash_bucket_size=100)
  wide = [
      fc.bucketized_column(age, boundaries=[18, 25, 30, 35, 40, 45, 50, 55,
                                            60, 65]),
      education, occupation, country,
      fc.crossed_column(["education", "occupation"], hash_bucket_size=10000),
  ]
  deep = [
      age, fc.numeric_column("hours_per_week"),
      fc.numeric_column("capital_gain"),
      fc.indicator_column(education),
      fc.embedding_column(occupation, dimension=8),
      fc.embedding_column(country, dimension=4),
  ]
  estimator = api.DNNLinearCombinedClassifier(
      linear_feature_columns=wide, dnn_feature_columns=deep,
      dnn_hidden_units=[64, 32], config=config)
  return estimator, input_fn


def _tfrecord(tf, api, config, batch_size):
  spec = {"x": tf.io.FixedLenFeature([784], tf.float32),
          "label": tf.io.FixedLenFeature([], tf.int64)}

  def input_fn():
    def split(features):
      return features, features.pop("label")
    dataset = tf.data.TFRecordDataset(_tfrecord_paths()).repeat()
    dataset = dataset.batch(batch_size).map(
        lambda s: tf.io.parse_example(s, spec))
    return dataset.map(split)

  def model_fn(features, labels, mode):
    loss, train_op = configs.v1_train_op(tf, "mlp", features["x"], labels)
    return api.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

  return api.Estimator(model_fn=model_fn, config=config), input_fn


def _numpy_dnn(tf, api, config, batch_size, numpy_input_fn):
  images, labels = configs.data("mlp")
  input_fn = numpy_input_fn(x={"x": images}, y=labels, batch_size=batch_size,
                            num_epochs=None, shuffle=True)
  estimator = api.DNNClassifier(
      hidden_units=[256, 256],
      feature_columns=[tf.compat.v1.feature_column.numeric_column(
          "x", shape=[784])],
      n_classes=10, config=config)
  return estimator, input_fn


def build(program, tf, api, config, batch_size, numpy_input_fn):
  """Returns (estimator, input_fn) of `program`.

  Args:
    program: one of PROGRAMS.
    tf: the tensorflow module.
    api: `tf.estimator` or `harness` (Estimator, EstimatorSpec and the
      canned estimators by their tf.estimator names).
    config: the RunConfig of that namespace.
    batch_size: examples a step.
    numpy_input_fn: `tf.compat.v1.estimator.inputs.numpy_input_fn` or
      `harness.inputs.numpy_input_fn`.
  """
  ensure_data(tf, program)
  if program == "census_csv":
    return _census(tf, api, config, batch_size)
  if program == "tfrecord":
    return _tfrecord(tf, api, config, batch_size)
  if program == "numpy_dnn":
    return _numpy_dnn(tf, api, config, batch_size, numpy_input_fn)
  raise ValueError(f"program must be one of {', '.join(PROGRAMS)}; got "
                   f"{program!r}.")


def main():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for program in PROGRAMS:
    ensure_data(tf, program)
  print(f"data in {DATA_DIR}: {', '.join(sorted(os.listdir(DATA_DIR)))}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
