"""The TF premade-estimator guide, unmodified in style: only tf.estimator.*.

DNNClassifier and LinearClassifier on numeric feature columns from numpy
(no pandas; iris-like data drawn with a fixed seed, no download), train /
evaluate / predict, export_saved_model with a parsing serving receiver, then
the SavedModel loaded with tf.saved_model.load and served through its
signatures. Run by tests/test_canned_programs.py as

    python -m harness.run tests/legacy_programs/premade_guide.py OUT_JSON DIR

and, unchanged, on real tf.estimator 2.15 (`python premade_guide.py ...`).
It writes what it saw (metrics, predictions, signatures, served outputs) to
OUT_JSON.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

CSV_COLUMN_NAMES = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth"]
SPECIES = ["Setosa", "Versicolor", "Virginica"]
TRAIN_STEPS = 1000


def make_data(num_rows, seed):
  """Three gaussian clusters shaped like the iris measurements."""
  centers = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3],
                      [6.6, 3.0, 5.6, 2.0]], np.float32)
  spread = np.array([0.35, 0.35, 0.45, 0.25], np.float32)
  rng = np.random.RandomState(seed)
  labels = rng.randint(0, 3, size=num_rows).astype(np.int64)
  values = centers[labels] + spread * rng.normal(size=(num_rows, 4))
  features = {name: values[:, i].astype(np.float32)
              for i, name in enumerate(CSV_COLUMN_NAMES)}
  return features, labels


def input_fn(features, labels, training=True, batch_size=32):
  """An input function for training or evaluating."""
  dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
  if training:
    dataset = dataset.shuffle(1000, seed=1).repeat()
  return dataset.batch(batch_size)


def predict_input_fn(features, batch_size=32):
  return tf.data.Dataset.from_tensor_slices(dict(features)).batch(batch_size)


def serialize(features, rows):
  examples = []
  for row in rows:
    feature = {
        name: tf.train.Feature(float_list=tf.train.FloatList(
            value=[float(features[name][row])]))
        for name in CSV_COLUMN_NAMES}
    examples.append(tf.train.Example(
        features=tf.train.Features(feature=feature)).SerializeToString())
  return examples


def run_one(name, classifier, columns, data, export_dir):
  (train_x, train_y), (test_x, test_y) = data
  classifier.train(input_fn=lambda: input_fn(train_x, train_y),
                   steps=TRAIN_STEPS)
  eval_result = classifier.evaluate(
      input_fn=lambda: input_fn(test_x, test_y, training=False))
  print(f"{name} test set accuracy: {eval_result['accuracy']:0.3f}")

  predict_x = {key: values[:3] for key, values in test_x.items()}
  predictions = list(classifier.predict(
      input_fn=lambda: predict_input_fn(predict_x)))
  for pred, expec in zip(predictions, test_y[:3]):
    class_id = pred["class_ids"][0]
    probability = pred["probabilities"][class_id]
    print(f'Prediction is "{SPECIES[class_id]}" ({100 * probability:.1f}%), '
          f'expected "{SPECIES[expec]}"')

  feature_spec = tf.feature_column.make_parse_example_spec(columns)
  receiver_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
      feature_spec)
  path = classifier.export_saved_model(export_dir, receiver_fn)
  if isinstance(path, bytes):
    path = path.decode()
  loaded = tf.saved_model.load(path)
  examples = tf.constant(serialize(predict_x, range(3)))
  served = {"signatures": sorted(loaded.signatures.keys())}
  default = loaded.signatures["serving_default"](inputs=examples)
  served["serving_default"] = {k: v.numpy().tolist()
                               for k, v in default.items()}
  predict = loaded.signatures["predict"](examples=examples)
  served["predict"] = {k: v.numpy().tolist() for k, v in predict.items()}
  served["predict_inputs"] = sorted(
      loaded.signatures["predict"].structured_input_signature[1])
  return {
      "eval": {k: float(v) for k, v in eval_result.items()},
      "predictions": [
          {k: np.asarray(v).tolist() for k, v in p.items()}
          for p in predictions],
      "served": json.loads(json.dumps(served, default=lambda b: b.decode())),
  }


def main(out_json, work_dir):
  data = (make_data(300, seed=0), make_data(90, seed=1))
  my_feature_columns = [tf.feature_column.numeric_column(key=key)
                        for key in CSV_COLUMN_NAMES]
  config = tf.estimator.RunConfig(tf_random_seed=1)
  results = {"tf_version": tf.__version__}
  dnn = tf.estimator.DNNClassifier(
      feature_columns=my_feature_columns, hidden_units=[30, 10], n_classes=3,
      model_dir=os.path.join(work_dir, "dnn"), config=config)
  results["dnn"] = run_one("DNNClassifier", dnn, my_feature_columns, data,
                           os.path.join(work_dir, "dnn_export"))
  linear = tf.estimator.LinearClassifier(
      feature_columns=my_feature_columns, n_classes=3,
      model_dir=os.path.join(work_dir, "linear"), config=config)
  results["linear"] = run_one("LinearClassifier", linear, my_feature_columns,
                              data, os.path.join(work_dir, "linear_export"))
  with open(out_json, "w") as f:
    json.dump(results, f, indent=1, default=lambda b: b.decode())


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2])
