"""One-line notes on what the installed TensorFlow does to a training graph.

    tf_notes.note_sparse_updates(graph, task_label)

TensorFlow 2.20 to 2.22 run the kernels that update rows of embedding and
linear variables several times as long as 2.15-2.19 did (measured:
bench/RESULTS.md, "Sparse-update kernels across TensorFlow versions"; not
harness's code). A user who moves a wide model from tf.estimator 2.15 sees it
train slower and cannot tell why, so the trainer says so once, at INFO, when
the TRAIN graph it built holds such updates on a TensorFlow measured slow.
"""

import collections

from absl import logging

from harness._tf import tf

__all__ = ["SLOW_SPARSE_VERSIONS", "SPARSE_UPDATE_OPS", "sparse_update_ops",
           "note_sparse_updates"]

# The releases measured slow by `python -m bench.perf.sparse_kernels` (2.22
# as 2.22.0rc0; 2.15 to 2.19 were not; a release not measured gets no note).
SLOW_SPARSE_VERSIONS = ("2.20", "2.21", "2.22")
# The kernels `bench.perf.sparse_kernels` measured slow there: the row
# updates of v1 Adagrad, Keras 2 Adagrad, Ftrl (canned linear models'
# default) and of a plain scatter-add. Other optimizers' kernels were not
# measured on a quiet machine and get no note.
SPARSE_UPDATE_OPS = frozenset((
    "ResourceSparseApplyAdagrad", "ResourceSparseApplyAdagradV2",
    "ResourceSparseApplyFtrl", "ResourceScatterAdd",
))
_noted = set()  # Per process: the note is said once.


def sparse_update_ops(graph):
  """{op type: count} of `graph`'s sparse row updates."""
  return collections.Counter(op.type for op in graph.get_operations()
                             if op.type in SPARSE_UPDATE_OPS)


def note_sparse_updates(graph, task_label, version=None):
  """Logs, once per process, that `graph`'s sparse updates run slower on
  this TensorFlow, when it is one measured slow and the graph has any.

  Returns:
    The line logged, or None.
  """
  version = version or tf.__version__
  release = ".".join(version.split(".")[:2])
  if release not in SLOW_SPARSE_VERSIONS or "sparse" in _noted:
    return None
  ops = sparse_update_ops(graph)
  if not ops:
    return None
  _noted.add("sparse")
  kinds = ", ".join(f"{name} x{count}" for name, count in sorted(ops.items()))
  line = (f"train | {task_label} | this graph updates embedding or linear "
          f"rows ({kinds}); TensorFlow {release}'s kernels for those run "
          "several times as long as 2.19's did (measured: docs/COMPAT.md, "
          "'A speed difference'), so this model may train faster on "
          "TensorFlow 2.19 or older.")
  logging.info(line)
  return line
