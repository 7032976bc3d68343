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
    ("tpu/tpu_config.py", "new._steps_per_loop_given"): "a TPU RunConfig",
    ("tpu/tpu_config.py", "new._tpu_config"): "a TPU RunConfig",
    ("state/lease.py", "lease._thread"): "harness's lease refresher",
    ("distribute/server_claim.py", "claims._thread"):
        "harness's claim renewer",
    ("server/serve.py", "os._exit"): "the standard library",
    ("core/stop_signal.py", "os._exit"): "the standard library",
    ("main.py", "os._exit"): "the standard library",
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
