"""TensorFlow internals of the training loop: hooks, savers, variables.

Part of `harness._tf_private` (see its door for the rule).
"""

import os
import sys
import tempfile

from harness._tf import tf

__all__ = [
    "GLOBAL_STEP_READ_KEY",
    "global_step_read",
    "SUMMARY_WRITER_INIT_KEY",
    "set_hook_steps_per_run",
    "variable_fetch_tensor",
    "RetentionSaver",
    "rebuild_saver",
    "saved_model_proto",
    "initializer_ops",
    "add_saving_listeners",
    "moved_modules",
    "remove_autograph_files",
]

# TensorFlow modules libraries written for tf.estimator 2.15 import at a path
# TF has since dropped: old path -> where TF 2.21 keeps the module. Why
# private: TF module paths. AdaNet 0.9.0's Estimator imports
# `tensorflow.python.training.tracking.graph_view` (moved to
# `tensorflow.python.checkpoint` in TF 2.11, the old path gone by 2.16).
_MOVED_MODULES = {
    "tensorflow.python.training.tracking.graph_view":
        "tensorflow.python.checkpoint.graph_view",
}


def moved_modules():
  """`{old path: module}` for the moved modules TensorFlow has loaded.

  Nothing is imported here: the module is taken from `sys.modules` (TF
  loads it with `tf.train.Checkpoint`), so a TF without it gives `{}`.
  """
  return {old: sys.modules[new] for old, new in _MOVED_MODULES.items()
          if new in sys.modules}

# tensorflow.python.training.training_util.GLOBAL_STEP_READ_KEY: the graph
# collection caching the global step read that TF's hooks fetch. Why
# private: no public name; harness registers its own read there (a plain
# read under strategies, ordered before a steps_per_loop loop).
GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def global_step_read(graph=None):
  """The graph's cached global step read (what TF's hooks fetch), else its
  global step variable; `graph`: the default graph if None."""
  graph = graph or tf.compat.v1.get_default_graph()
  cached = graph.get_collection(GLOBAL_STEP_READ_KEY)
  return cached[0] if cached else tf.compat.v1.train.get_global_step(graph)


# tensorflow.python.ops.summary_ops_v2._SUMMARY_WRITER_INIT_COLLECTION_NAME:
# the graph collection of v2 summary writers' initialisers (what
# `summary_writer_initializer_op()` returns). Why private: no public name;
# a TPUEstimatorSpec host_call's writer must be initialised by its hook,
# as tf.estimator 2.15's did.
SUMMARY_WRITER_INIT_KEY = "_SUMMARY_WRITER_V2"


def set_hook_steps_per_run(hook, steps_per_run):
  """Tells a CheckpointSaverHook / StepCounterHook the steps one run makes.

  Why private: `_set_steps_per_run` is how TF's own multi-step loops
  (TPUEstimator, Keras v1) told these hooks; no public setter exists. Left
  unset, CheckpointSaverHook assumes 1,000,000 and re-reads the global step
  in an extra `session.run` after every step.
  """
  hook._set_steps_per_run(steps_per_run)  # pylint: disable=protected-access


def variable_fetch_tensor(variable):
  """The tensor a `session.run(variable)` fetch evaluates.

  Why private: `_as_graph_element` is the protocol Session uses to turn a
  fetched variable into a tensor; the training loop orders that read before
  its first step.
  """
  element = getattr(variable, "_as_graph_element", None)
  return element() if callable(element) else tf.convert_to_tensor(variable)


class RetentionSaver(tf.compat.v1.train.Saver):
  """A Saver that deletes the checkpoint over `max_to_keep` before, not
  after, it rewrites the `checkpoint` state file.

  A process killed between TensorFlow's unlisting and its deletion leaves
  an unlisted checkpoint that looks like one `keep_checkpoint_every_n_hours`
  preserved, so restarts cannot count it (tests/test_retention.py's kill -9
  test caught it in 2 of 6 full runs).
  Deleting first leaves a listed, deleted one instead, which readers skip.
  Why private: `save()`'s only step between the two is its private
  `_RecordLastCheckpoint` (TF 2.21.0); preservation decisions are TF's own.
  """

  _meta_graph_suffix = "meta"

  def save(self, *args, **kwargs):
    # save(sess, save_path, global_step, latest_filename, meta_graph_suffix)
    self._meta_graph_suffix = (args[4] if len(args) > 4 else
                               kwargs.get("meta_graph_suffix", "meta"))
    return super().save(*args, **kwargs)

  def _RecordLastCheckpoint(self, latest_save_path):  # pylint: disable=invalid-name
    # pylint: disable=protected-access
    super()._RecordLastCheckpoint(latest_save_path)
    self._MaybeDeleteOldCheckpoints(meta_graph_suffix=self._meta_graph_suffix)


def rebuild_saver(saver):
  """A Saver like `saver`, built in the current default graph.

  Why private: a Saver keeps its constructor arguments only in private
  attributes. Used for a Saver that model_fn built inside the
  steps_per_loop loop body, whose save/restore ops cannot run from outside
  the loop: the copy saves the same variables with the same options.
  """
  # pylint: disable=protected-access
  saver_class = (RetentionSaver if isinstance(saver, RetentionSaver)
                 else tf.compat.v1.train.Saver)
  return saver_class(
      var_list=saver._var_list, reshape=saver._reshape,
      sharded=saver._sharded, max_to_keep=saver._max_to_keep,
      keep_checkpoint_every_n_hours=saver._keep_checkpoint_every_n_hours,
      name=saver._name, restore_sequentially=saver._restore_sequentially,
      allow_empty=saver._allow_empty, write_version=saver._write_version,
      pad_step_number=saver._pad_step_number,
      save_relative_paths=saver._save_relative_paths,
      filename=saver._filename)


  # pylint: enable=protected-access


def initializer_ops(variable):
  """The initialiser ops a variable holds now, building none.

  A distributed variable's public `initializer` groups its components'
  initialisers in a new op wherever it is read; `init_from_checkpoint`
  sets its private `_initializer_op` instead. Why private: the public
  property builds ops. Returns the distributed variable's own op (if set)
  and each component's `initializer`, or `[variable.initializer]`.
  """
  if isinstance(variable, tf.distribute.DistributedValues):
    own = getattr(variable, "_initializer_op", None)
    return ([own] if own is not None else []) + [
        v.initializer for v in variable.values]
  return [variable.initializer]


def saved_model_proto(builder):
  """The SavedModel proto a v1 `tf.compat.v1.saved_model.Builder` built.

  Why private: the builder writes a text SavedModel with `str(proto)`, which
  protobuf 5.29's upb backend (what pip installs beside TensorFlow 2.19)
  leaves a `"` inside a bytes value unescaped in, so no loader can read it;
  harness writes the text itself (`export/writer.py`). Checked on 2.16-2.22.
  """
  return builder._saved_model  # pylint: disable=protected-access


def add_saving_listeners(saver_hook, listeners, first=()):
  """Adds `CheckpointSaverListener`s to an existing `CheckpointSaverHook`.

  Why private: the hook takes listeners only in its constructor; a
  model_fn's own saver hook gets train(saving_listeners=...) through
  `_listeners`, as tf.estimator 2.15 did. `first` (a list) goes before
  the hook's own listeners.
  """
  saver_hook._listeners.extend(listeners)  # pylint: disable=protected-access
  saver_hook._listeners[:0] = list(first)  # pylint: disable=protected-access


# AutoGraph (a strategy's call_for_each_replica converts the Estimator's
# model_fn call) writes each converted function's source to a temporary file,
# `__autograph_generated_file*.py`, loads it as a module of that name and
# deletes the file in an atexit handler. Why private: the file prefix and the
# module registry are AutoGraph's (tensorflow/python/autograph/pyct/loader.py,
# TF 2.21.0).
_AUTOGRAPH_PREFIX = "__autograph_generated_file"


def remove_autograph_files():
  """Deletes the AutoGraph source files this process wrote, as its atexit
  handlers would: for a process that leaves with `os._exit`."""
  temp = os.path.realpath(tempfile.gettempdir())
  for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None) or ""
    if (name.startswith(_AUTOGRAPH_PREFIX)
        and os.path.dirname(os.path.realpath(path)) == temp):
      try:
        os.remove(path)
      except FileNotFoundError:
        pass
