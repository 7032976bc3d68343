"""Class ids and string labels of the classification heads: the range
check, the vocabulary lookup tables, the all-classes tensors and the
classification export output.

    ids = class_labels.class_id_table(["cat", "dog"]).lookup(labels)
    ids = class_labels.check_label_range(ids, n_classes=2)

tf.estimator 2.15 kept these in `head/base_head`, which re-exports them.
"""

from harness._tf import tf
from harness.export import outputs

__all__ = [
    "all_class_ids", "all_classes", "classification_output",
    "check_label_range", "class_id_table", "class_string_table",
]


def all_class_ids(logits, n_classes):
  batch_size = tf.shape(logits)[0]
  return tf.tile(tf.expand_dims(tf.range(n_classes), 0), [batch_size, 1])


def all_classes(logits, n_classes, label_vocabulary=None):
  batch_size = tf.shape(logits)[0]
  if label_vocabulary:
    classes = tf.constant(list(label_vocabulary), dtype=tf.string)
  else:
    classes = tf.strings.as_string(tf.range(n_classes))
  return tf.tile(tf.expand_dims(classes, 0), [batch_size, 1])


def classification_output(scores, n_classes, label_vocabulary=None):
  return outputs.ClassificationOutput(
      scores=scores, classes=all_classes(scores, n_classes, label_vocabulary))


def check_label_range(labels, n_classes, message=None):
  """Asserts (at run time) that labels are in [0, n_classes).

  One `Assert` whose data are only strings, so TF runs it as a plain op,
  not as a conditional per step (what `assert_less_equal` on int64 labels
  builds): it runs on every training step.
  """
  with tf.compat.v1.name_scope("check_label_range", values=(labels,)):
    in_range = tf.reduce_all(tf.logical_and(
        labels >= tf.constant(0, labels.dtype),
        labels <= tf.constant(n_classes - 1, labels.dtype)))
    check = tf.debugging.Assert(in_range, [
        message or f"Labels must be <= n_classes - 1 ({n_classes - 1}) and "
        ">= 0"])
    with tf.control_dependencies([check]):
      return tf.identity(labels)


def class_id_table(label_vocabulary):
  """String label -> id (-1 when absent, which the range check rejects)."""
  return tf.compat.v1.lookup.StaticHashTable(
      tf.compat.v1.lookup.KeyValueTensorInitializer(
          keys=tf.constant(list(label_vocabulary), tf.string),
          values=tf.range(len(label_vocabulary), dtype=tf.int64)),
      default_value=-1, name="class_id_lookup")


def class_string_table(label_vocabulary):
  """Class id -> string label."""
  return tf.compat.v1.lookup.StaticHashTable(
      tf.compat.v1.lookup.KeyValueTensorInitializer(
          keys=tf.range(len(label_vocabulary), dtype=tf.int64),
          values=tf.constant(list(label_vocabulary), tf.string)),
      default_value="UNK", name="class_string_lookup")
