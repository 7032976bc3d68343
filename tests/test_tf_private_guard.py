"""Guard: TensorFlow internals are touched only in harness/_tf_private/.

Flags, in every other module: imports of `tensorflow.python` (and
`tensorflow._*`, `tf_keras.src`, `keras.src`); `x._y` on anything that is
not harness's own (self/cls, a harness module, a namedtuple method, or an
object listed in `HARNESS_OBJECTS` with the reason it is harness's); and
`getattr/hasattr/setattr(x, "_y")`, the same access spelled as a string.
The synthetic cases below show that each form fails the guard.
"""

import ast
import pathlib
import textwrap

from absl.testing import absltest

import harness

HARNESS_DIR = pathlib.Path(harness.__file__).parent
PRIVATE_PACKAGE = "_tf_private"
TF_ROOTS = frozenset({"tf", "tensorflow", "tf_keras", "keras"})
PRIVATE_TF_MODULES = ("tensorflow.python", "tensorflow._", "tf_keras.src",
                      "keras.src")
NAMEDTUPLE_API = frozenset({"_replace", "_fields", "_asdict", "_make"})
ATTR_FUNCTIONS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
# (module file under harness/, "receiver._name"): why the receiver is a
# harness object, not a TensorFlow one.
HARNESS_OBJECTS = {
    ("run_config/config.py", "new._values"):
        "a RunConfig copy made by replace()",
    ("run_config/config.py", "new._derive"):
        "a RunConfig copy made by replace()",
    ("run_config/config.py", "new._run_check"):
        "a RunConfig copy made by replace()",
    ("run_config/config.py", "new._model_dir_source"):
        "a RunConfig copy made by replace()",
    ("run_config/config.py", "new._session_config"):
        "a RunConfig copy made by deepcopy (Estimator.config)",
    ("run_config/distribution.py", "config._run_check"):
        "a RunConfig: whether its values passed the run check (its package)",
    ("tpu/tpu_config.py", "new._steps_per_loop_given"): "a TPU RunConfig",
    ("tpu/tpu_config.py", "new._tpu_config"): "a TPU RunConfig",
    ("state/lease.py", "lease._thread"): "harness's lease refresher",
    ("distribute/server_claim.py", "claims._thread"):
        "harness's claim renewer",
    ("server/serve.py", "os._exit"): "the standard library",
    ("guard/stop_signal.py", "os._exit"): "the standard library",
    ("main.py", "os._exit"): "the standard library",
    ("cli/first_signal.py", "os._exit"): "the standard library",
}

# TensorFlow's own state that a harness subclass of a TensorFlow class reads
# through `self` (file, "Class._name"): why; checked on TF 2.16 and 2.21.
TF_SUBCLASS_STATE = {
    ("telemetry/step_rate.py", "StepRateHook._last_global_step"):
        "StepCounterHook's step at its last summary, kept in step",
    ("telemetry/step_rate.py", "StepRateHook._timer"):
        "StepCounterHook's SecondOrStepTimer, shared so the cadence holds",
    ("telemetry/step_rate.py", "StepRateHook._summary_writer"):
        "StepCounterHook's writer for model_dir, reused (one per dir)",
    ("telemetry/step_rate.py", "StepRateHook._steps_per_run"):
        "StepCounterHook's K, set by the steps_per_loop loop",
    ("telemetry/step_rate.py", "StepRateHook._global_step_tensor"):
        "StepCounterHook's global step, fetched with each run",
    ("telemetry/step_rate.py", "StepRateHook._summary_tag"):
        "StepCounterHook's summary tag (global_step/sec)",
    ("core/train_loop.py", "StopAtStepHook._last_step"):
        "StopAtStepHook's stop step, computed from num_steps at begin",
    ("core/train_loop.py", "StopAtStepHook._global_step_tensor"):
        "StopAtStepHook's global step, read at session creation",
    ("core/step_loop.py", "SummarySaverHook._next_step"):
        "SummarySaverHook's next summary step, moved to K's cadence",
}


def _root_name(node):
  while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
    node = node.func if isinstance(node, ast.Call) else node.value
  return node.id if isinstance(node, ast.Name) else None


def _private(name):
  return name.startswith("_") and not name.startswith("__")


def _harness_names(tree):
  """Names bound to harness modules (not harness._tf's `tf`)."""
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
        "harness") and node.module not in ("harness._tf", "harness._tf_private"):
      names.update(a.asname or a.name for a in node.names)
    elif isinstance(node, ast.Import):
      names.update((a.asname or a.name).split(".")[0] for a in node.names
                   if a.name.startswith("harness"))
  return names - TF_ROOTS


def _tf_bases(node):
  """The TensorFlow classes among a ClassDef's bases ("tf.x.Hook")."""
  return [ast.unparse(b) for b in node.bases if _root_name(b) in TF_ROOTS]


def inherited_tf_state(source, filename="<snippet>"):
  """`self._x` in a subclass of a TensorFlow class, where harness's class
  neither defines `_x` nor sets it in its `__init__`: TensorFlow's private
  state read or written through `self` (["file:line: Class._x"], less
  TF_SUBCLASS_STATE)."""
  found = []
  for cls in ast.walk(ast.parse(textwrap.dedent(source))):
    if not isinstance(cls, ast.ClassDef) or not _tf_bases(cls):
      continue
    own = {n.name for n in cls.body if isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for init in (n for n in cls.body
                 if isinstance(n, ast.FunctionDef) and n.name == "__init__"):
      for node in ast.walk(init):  # What harness's constructor sets.
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            and ast.unparse(node.value) == "self"):
          own.add(node.attr)
    for node in ast.walk(cls):
      if (isinstance(node, ast.Attribute) and _private(node.attr)
          and ast.unparse(node.value) == "self" and node.attr not in own
          and (filename, f"{cls.name}.{node.attr}") not in TF_SUBCLASS_STATE):
        found.append(f"{filename}:{node.lineno}: {cls.name}.{node.attr}")
  return sorted(set(found))


def private_tf_access(source, filename="<snippet>"):
  """Private TensorFlow access in `source`: ["file:line: what"]."""
  tree = ast.parse(textwrap.dedent(source))
  harness_names = _harness_names(tree)
  found = []
  for node in ast.walk(tree):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
      modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""])
      found += [f"{filename}:{node.lineno}: import {m}" for m in modules
                if m.startswith(PRIVATE_TF_MODULES)]
    elif isinstance(node, ast.Attribute) and _private(node.attr):
      receiver = ast.unparse(node.value)
      root = _root_name(node.value)
      if root not in TF_ROOTS and (
          receiver in ("self", "cls") or receiver.startswith("super()")
          or node.attr in NAMEDTUPLE_API or root in harness_names
          or (filename, f"{receiver}.{node.attr}") in HARNESS_OBJECTS):
        continue
      found.append(f"{filename}:{node.lineno}: {receiver}.{node.attr}")
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id in ATTR_FUNCTIONS and len(node.args) >= 2
          and isinstance(node.args[1], ast.Constant)
          and isinstance(node.args[1].value, str)
          and _private(node.args[1].value)
          and node.args[1].value not in NAMEDTUPLE_API):
      receiver = ast.unparse(node.args[0])
      if receiver in ("self", "cls"):
        continue
      found.append(f"{filename}:{node.lineno}: {node.func.id}({receiver}, "
                   f"{node.args[1].value!r})")
  return found


def tree_offenders():
  found = []
  for path in sorted(HARNESS_DIR.rglob("*.py")):
    filename = str(path.relative_to(HARNESS_DIR))
    if path.parent.name != PRIVATE_PACKAGE:
      found += private_tf_access(path.read_text(), filename)
      found += inherited_tf_state(path.read_text(), filename)
  return found


class TfPrivateGuardTest(absltest.TestCase):

  def test_harness_touches_tf_internals_only_in_tf_private(self):
    self.assertEqual(tree_offenders(), [],
                     "move these into harness/_tf_private/, one function "
                     "each with why it is private")

  def test_tf_private_module_is_scanned_and_nonempty(self):
    # The guard is meaningful only if the exempt package really holds them.
    found = []
    for path in sorted((HARNESS_DIR / PRIVATE_PACKAGE).glob("*.py")):
      found += private_tf_access(path.read_text(), path.name)
    self.assertGreater(len(found), 10)

  def test_fails_on_private_attribute_of_a_tf_object(self):
    found = private_tf_access("""
        from harness._tf import tf
        def f(hook, listeners):
          hook._listeners.extend(listeners)
        """, "core/x.py")
    self.assertEqual(found, ["core/x.py:4: hook._listeners"])

  def test_fails_on_tf_state_read_through_self(self):
    source = """
        from harness._tf import tf
        class Hook(tf.compat.v1.train.StepCounterHook):
          def __init__(self):
            self._mine = 1
          def _helper(self):
            return self._mine
          def after_run(self, context, values):
            return self._timer, self._helper(), self._mine
        """
    self.assertEqual(inherited_tf_state(source, "core/x.py"),
                     ["core/x.py:9: Hook._timer"])
    self.assertEqual(inherited_tf_state(source, "telemetry/step_rate.py").count(
        "telemetry/step_rate.py:9: Hook._timer"), 1)

  def test_listed_tf_state_still_exists_in_tensorflow(self):
    # Each listed attribute is one TensorFlow's class really has: a
    # TensorFlow upgrade that renames it fails here, not in a training run.
    from harness._tf import tf  # pylint: disable=g-import-not-at-top
    train = tf.compat.v1.train
    with tf.Graph().as_default():
      train.create_global_step()
      made = {
          "StepRateHook": train.StepCounterHook(every_n_steps=1,
                                                output_dir=None),
          "StopAtStepHook": train.StopAtStepHook(num_steps=1),
          "SummarySaverHook": train.SummarySaverHook(
              save_steps=1, output_dir=self.create_tempdir().full_path,
              summary_op=tf.constant("")),
      }
      for hook in made.values():
        hook.begin()
    for (_, name), _ in TF_SUBCLASS_STATE.items():
      cls, attr = name.split(".")
      self.assertTrue(hasattr(made[cls], attr), name)

  def test_tf_state_table_has_no_stale_rows(self):
    listed = dict(TF_SUBCLASS_STATE)
    TF_SUBCLASS_STATE.clear()
    try:
      read = set()
      for path in sorted(HARNESS_DIR.rglob("*.py")):
        filename = str(path.relative_to(HARNESS_DIR))
        for line in inherited_tf_state(path.read_text(), filename):
          read.add((filename, line.rsplit(": ", 1)[1]))
    finally:
      TF_SUBCLASS_STATE.update(listed)
    self.assertEqual(sorted(set(listed) - read), [])

  def test_fails_on_private_attribute_under_tf(self):
    found = private_tf_access("""
        from harness._tf import tf
        key = tf.compat.v1.train._global_step_read
        """, "x.py")
    self.assertEqual(found, ["x.py:3: tf.compat.v1.train._global_step_read"])

  def test_fails_on_private_attribute_spelled_as_a_string(self):
    found = private_tf_access(
        'def f(strategy):\n  return getattr(strategy, "_extended", None)\n',
        "x.py")
    self.assertEqual(found, ["x.py:2: getattr(strategy, '_extended')"])

  def test_fails_on_tensorflow_python_import(self):
    found = private_tf_access(
        "from tensorflow.python.framework import ops\n"
        "import tf_keras.src.backend\n", "x.py")
    self.assertEqual(found, [
        "x.py:1: import tensorflow.python.framework",
        "x.py:2: import tf_keras.src.backend"])

  def test_allow_list_is_per_file(self):
    source = "def f(new):\n  new._values = {}\n"
    self.assertEqual(private_tf_access(source, "run_config/config.py"), [])
    self.assertEqual(private_tf_access(source, "core/other.py"),
                     ["core/other.py:2: new._values"])

  def test_harness_own_privates_are_not_tf(self):
    found = private_tf_access("""
        from harness import cluster as cluster_lib
        class A:
          def f(self, row):
            return self._x, cluster_lib._fail, row._replace(a=1)
        """, "x.py")
    self.assertEqual(found, [])


if __name__ == "__main__":
  absltest.main()
