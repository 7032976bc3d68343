"""What of a TRAIN EstimatorSpec built inside the steps_per_loop loop runs.

Under `steps_per_loop > 1` model_fn is called inside a `tf.while_loop`
body, a graph of its own: its tensors cannot be fetched or run from outside
the loop. `outer_spec` turns the body's spec into the one the training
session uses, as tf.estimator 2.15 treated a TRAIN spec:

* `predictions`, `eval_metric_ops` and `export_outputs` are ignored in TRAIN
  (2.15 never ran them there), so they are dropped;
* a `Scaffold` whose `saver` model_fn built in the body gets the same Saver
  rebuilt outside the loop; `init_fn` (Python) is kept as it is;
* scaffold ops (`init_op`, `local_init_op`, ...) built in the body, and
  hooks holding tensors from the body, need one step per `session.run`:
  `outer_spec` reports why, and the Estimator builds the graph again with
  K = 1 (`NeedsOneStepPerRun`).

    outer, reason = loop_spec.outer_spec(body_spec, outer_graph, loss=...)
"""

from harness import _tf_private
from harness import errors
from harness._tf import tf

__all__ = ["NeedsOneStepPerRun", "outer_spec", "hook_tensors_in_loop",
           "hooks_needing_each_step"]

_SCAFFOLD_OPS = ("init_op", "ready_op", "ready_for_local_init_op",
                 "local_init_op", "summary_op")
_SCAFFOLD_FEEDS = ("init_feed_dict", "local_init_feed_dict")


class NeedsOneStepPerRun(errors.HarnessError):
  """The TRAIN spec needs one step per session.run; `reason` says why.

  Raised while the loop graph is built; the Estimator catches it and builds
  the TRAIN graph again with steps_per_loop=1 (one log line with `reason`).
  """

  def __init__(self, reason):
    super().__init__(reason)
    self.reason = reason


def _graph_of(value):
  graph = getattr(value, "graph", None)
  if graph is None and isinstance(value, tf.Variable):
    return None  # Variables live outside the loop (init scope).
  return graph


def _in_body(value, outer_graph):
  if isinstance(value, tf.Variable):
    return False
  graph = _graph_of(value)
  return graph is not None and graph is not outer_graph


def _graph_elements(value, depth=2):
  """Tensors/ops in `value`, looking into dicts, lists and tuples."""
  if tf.is_tensor(value) or isinstance(value, tf.Operation):
    yield value
  elif depth > 0 and isinstance(value, dict):
    for item in list(value.keys()) + list(value.values()):
      yield from _graph_elements(item, depth - 1)
  elif depth > 0 and isinstance(value, (list, tuple, set)):
    for item in value:
      yield from _graph_elements(item, depth - 1)


def hook_tensors_in_loop(hooks, where, outer_graph):
  """Why `hooks` need per-step fetches (a body tensor they hold), or None.

  Looks at each hook's attributes (and the dicts/lists in them) for a
  tensor or op of the loop body, e.g. a LoggingTensorHook on a hidden
  layer. A hook that names tensors by string is checked when it runs.
  """
  for hook in hooks:
    for attr, value in vars(hook).items():
      for element in _graph_elements(value):
        if _in_body(element, outer_graph):
          return (f"{type(hook).__name__} in {where} fetches "
                  f"{element.name!r} (attribute {attr}), a tensor of each "
                  "step inside model_fn")
  return None


def _strings(value, depth=2):
  if isinstance(value, str):
    yield value
  elif depth > 0 and isinstance(value, dict):
    for item in list(value.keys()) + list(value.values()):
      yield from _strings(item, depth - 1)
  elif depth > 0 and isinstance(value, (list, tuple, set)):
    for item in value:
      yield from _strings(item, depth - 1)


def hooks_needing_each_step(hooks, outer_graph):
  """Why hooks given to `train()` need one step per run, or None.

  For steps_per_loop="auto", which falls back to K = 1 rather than fail: a
  `FeedFnHook` (feeds every step), or a hook naming a tensor ("name:0")
  that exists only inside the loop (e.g. LoggingTensorHook(["dense/Relu:0"])).
  """
  for hook in hooks:
    if isinstance(hook, tf.compat.v1.train.FeedFnHook):
      return "FeedFnHook feeds every step"
    for attr, value in vars(hook).items():
      for name in _strings(value):
        head, sep, index = name.rpartition(":")
        if not (sep and head and index.isdigit()):
          continue
        try:
          outer_graph.as_graph_element(name)
        except (KeyError, ValueError):
          return (f"{type(hook).__name__} fetches {name!r} (attribute "
                  f"{attr}), a tensor of each step inside model_fn")
  return hook_tensors_in_loop(hooks, "hooks", outer_graph)


def _outer_scaffold(scaffold, outer_graph):
  """(Scaffold usable outside the loop, None) or (None, reason)."""
  for field in _SCAFFOLD_OPS:
    value = getattr(scaffold, field)
    if value is not None and _in_body(value, outer_graph):
      return None, (f"model_fn's Scaffold({field}=...) is an op built "
                    "inside model_fn")
  for field in _SCAFFOLD_FEEDS:
    feeds = getattr(scaffold, field) or {}
    if any(_in_body(k, outer_graph) for k in feeds
           if not isinstance(k, str)):
      return None, (f"model_fn's Scaffold({field}=...) feeds a tensor built "
                    "inside model_fn")
  saver = scaffold.saver
  if saver is None or _saver_in_graph(saver, outer_graph):
    return scaffold, None
  with outer_graph.as_default():
    saver = _tf_private.rebuild_saver(saver)
  return tf.compat.v1.train.Scaffold(
      init_op=scaffold.init_op, init_feed_dict=scaffold.init_feed_dict,
      init_fn=_unwrapped_init_fn(scaffold), ready_op=scaffold.ready_op,
      ready_for_local_init_op=scaffold.ready_for_local_init_op,
      local_init_op=scaffold.local_init_op,
      local_init_feed_dict=scaffold.local_init_feed_dict,
      summary_op=scaffold.summary_op, saver=saver), None


def _unwrapped_init_fn(scaffold):
  init_fn = scaffold.init_fn  # Scaffold wraps it as fn(session) -> ...
  if init_fn is None:
    return None
  return lambda scaffold_, session: init_fn(session)


def _saver_in_graph(saver, graph):
  """False when `saver` was built (its ops exist) in another graph."""
  saver_def = saver.saver_def
  if saver_def is None or not saver_def.filename_tensor_name:
    return True  # Deferred build: it builds where it is first used.
  try:
    graph.as_graph_element(saver_def.filename_tensor_name)
  except (KeyError, ValueError):
    return False
  return True


def outer_spec(spec, outer_graph, *, loss, train_op):
  """The TRAIN spec to run outside the loop.

  Args:
    spec: model_fn's EstimatorSpec, built inside the loop body.
    outer_graph: the training graph (outside the loop).
    loss: the loop's loss output (outer graph).
    train_op: the loop's op (outer graph).

  Returns:
    An EstimatorSpec with `loss`/`train_op` replaced, TRAIN-only fields
    dropped and the scaffold made usable outside the loop.

  Raises:
    NeedsOneStepPerRun: a hook or the scaffold needs per-step fetches.
  """
  reason = (hook_tensors_in_loop(spec.training_hooks,
                                 "EstimatorSpec.training_hooks", outer_graph)
            or hook_tensors_in_loop(spec.training_chief_hooks,
                                    "EstimatorSpec.training_chief_hooks",
                                    outer_graph))
  scaffold = spec.scaffold
  if reason is None:
    scaffold, reason = _outer_scaffold(spec.scaffold, outer_graph)
  if reason is not None:
    raise NeedsOneStepPerRun(reason)
  with outer_graph.as_default():
    return spec._replace(  # pylint: disable=protected-access
        loss=loss, train_op=train_op, predictions=None, eval_metric_ops=None,
        export_outputs=None, scaffold=scaffold)
