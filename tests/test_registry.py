"""Tests of harness.cli.registry: built-in names, user modules, errors, direction."""

import ast
import copy
import os
import pathlib
import subprocess
import sys
import textwrap

from absl.testing import absltest

from harness import errors
from harness.cli import registry

_ROOT = pathlib.Path(__file__).resolve().parent.parent


class RegistryTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    # A throw-away package of user code, importable for this test only.
    self.user_dir = self.create_tempdir().full_path
    sys.path.insert(0, self.user_dir)
    self.addCleanup(sys.path.remove, self.user_dir)

  def _write_module(self, name, source):
    path = os.path.join(self.user_dir, name + ".py")
    with open(path, "w") as f:
      f.write(textwrap.dedent(source))
    self.addCleanup(sys.modules.pop, name, None)

  def test_lists_builtin_names(self):
    self.assertContainsSubset(
        ["linear", "mnist_cnn", "mnist_dropout", "mnist_mlp"],
        registry.list_model_fns())
    self.assertContainsSubset(
        ["constant", "mnist", "mnist_idx", "synthetic"],
        registry.list_input_fns())

  def test_resolves_builtin_names_to_their_functions(self):
    model_fn = registry.resolve_model_fn("mnist_cnn")
    self.assertEqual(
        (model_fn.__module__, model_fn.__name__),
        ("model_fns.mnist_cnn", "model_fn"))
    make_input_fn = registry.resolve_input_fn("mnist_idx")
    self.assertEqual(
        (make_input_fn.__module__, make_input_fn.__name__),
        ("input_fns.mnist_idx", "make_input_fn"))

  def test_default_params_are_the_modules_as_fresh_copies(self):
    for params_of, resolve, name in (
        (registry.model_default_params, registry.resolve_model_fn, "linear"),
        (registry.input_default_params, registry.resolve_input_fn,
         "mnist_idx")):
      with self.subTest(name=name):
        module = sys.modules[resolve(name).__module__]
        defaults = copy.deepcopy(module.DEFAULT_PARAMS)
        params = params_of(name)
        self.assertEqual(params, defaults)
        params[next(iter(params))] = "changed by the caller"
        self.assertEqual(params_of(name), defaults)
        self.assertEqual(module.DEFAULT_PARAMS, defaults)

  def test_unknown_name_lists_registered_names(self):
    with self.assertRaises(errors.FlagError) as cm:
      registry.resolve_model_fn("mnist_cnnn")
    message = str(cm.exception)
    self.assertIn("unknown model_fn 'mnist_cnnn'; use", message)
    for name in registry.list_model_fns():
      self.assertIn(name, message)
    self.assertIn("package.module:function", message)
    with self.assertRaisesRegex(errors.FlagError, "mnist_idx"):
      registry.resolve_input_fn("nope")

  def test_user_module_and_function(self):
    self._write_module("user_models_a", """
        DEFAULT_PARAMS = {"units": 3}
        def my_model_fn(features, labels, mode, params):
          return "mine"
        def model_fn(features, labels, mode, params):
          return "default attr"
        """)
    fn = registry.resolve_model_fn("user_models_a:my_model_fn")
    self.assertEqual(fn(None, None, None, None), "mine")
    # A bare top-level name is taken for a typo of a registered name ...
    with self.assertRaises(errors.FlagError):
      registry.resolve_model_fn("user_models_a")
    # ... a dotted module path means its `model_fn`.
    os.makedirs(os.path.join(self.user_dir, "user_pkg_a"))
    self._write_module("user_pkg_a/__init__", "")
    self._write_module("user_pkg_a/models", """
        def model_fn(features, labels, mode, params):
          return "default attr"
        """)
    self.addCleanup(sys.modules.pop, "user_pkg_a", None)
    self.addCleanup(sys.modules.pop, "user_pkg_a.models", None)
    fn = registry.resolve_model_fn("user_pkg_a.models")
    self.assertEqual(fn(None, None, None, None), "default attr")
    self.assertEqual(registry.model_default_params("user_models_a:my_model_fn"),
                     {"units": 3})

  def test_plain_tf_estimator_input_fn_is_wrapped_in_a_factory(self):
    # Issue 39: 2.15's input_fn itself given to --input_fn.
    self._write_module("user_inputs_plain", """
        DEFAULT_BATCH_SIZE = 7
        def input_fn(params, mode):
          return ("plain", params, mode)
        def no_args():
          return "no args"
        """)
    factory = registry.resolve_input_fn("user_inputs_plain:input_fn")
    with self.assertLogs(level="INFO") as logs:
      for mode in ("train", "eval", "infer"):
        made = factory(mode, data_dir="/d", batch_size=8, params={})
        # The Estimator calls it with what it declares (2.15's rule).
        self.assertEqual(made({"a": 1}, mode), ("plain", {"a": 1}, mode))
    self.assertLen(logs.output, 1)  # Said once.
    self.assertIn("--input_fn=user_inputs_plain:input_fn is a tf.estimator "
                  "input_fn(params, mode), not a factory", logs.output[0])
    self.assertIn("--data_dir and --batch_size do not reach it",
                  logs.output[0])
    self.assertEqual(
        registry.resolve_input_fn("user_inputs_plain:no_args")("eval")(),
        "no args")
    # Its module still gives the defaults the binary reads.
    self.assertEqual(sys.modules[factory.__module__].DEFAULT_BATCH_SIZE, 7)

  def test_other_signature_is_refused_with_the_one_line_fix(self):
    self._write_module("user_inputs_odd", """
        def load(path, shuffle):
          return path
        """)
    with self.assertRaises(errors.FlagError) as cm:
      registry.resolve_input_fn("user_inputs_odd:load")
    message = str(cm.exception)
    self.assertNotIn("\n", message)
    self.assertIn("user_inputs_odd:load(path, shuffle) is neither", message)
    self.assertIn("Fix: add to its module `def make_input_fn(mode, **kwargs): "
                  "return lambda: load(...)` and pass "
                  "--input_fn=user_inputs_odd:make_input_fn", message)

  def test_user_module_without_default_params(self):
    self._write_module("user_inputs_b", """
        def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
          return lambda input_context=None: mode
        """)
    self.assertEqual(registry.input_default_params("user_inputs_b:make_input_fn"), {})
    factory = registry.resolve_input_fn("user_inputs_b:make_input_fn")
    self.assertEqual(factory("train")(), "train")

  def test_missing_module_names_module_and_original_error(self):
    with self.assertRaises(errors.FlagError) as cm:
      registry.resolve_model_fn("no_such_pkg_xyz.models:model_fn")
    message = str(cm.exception)
    self.assertIn("'no_such_pkg_xyz.models'", message)
    self.assertIn("ModuleNotFoundError", message)
    self.assertIn("No module named 'no_such_pkg_xyz'", message)

  def test_module_failing_at_import_reports_its_error(self):
    self._write_module("user_broken_c", "raise RuntimeError('boom at import')\n")
    with self.assertRaisesRegex(errors.FlagError,
                                "user_broken_c.*RuntimeError: boom at import"):
      registry.resolve_input_fn("user_broken_c:make_input_fn")

  def test_missing_or_non_callable_attribute(self):
    self._write_module("user_models_d", "model_fn = 3\n")
    with self.assertRaisesRegex(errors.FlagError, "has no attribute 'other'"):
      registry.resolve_model_fn("user_models_d:other")
    with self.assertRaisesRegex(errors.FlagError, "not a callable model_fn"):
      registry.resolve_model_fn("user_models_d:model_fn")

  def test_malformed_target(self):
    with self.assertRaisesRegex(errors.FlagError, "package.module:function"):
      registry.resolve_model_fn("a.b:c:d")
    with self.assertRaisesRegex(errors.FlagError, "empty"):
      registry.resolve_model_fn("")

  def test_register_callable_and_string(self):
    def custom(features, labels, mode, params):
      return "custom"
    self.addCleanup(registry._model_fns.pop, "custom_x", None)  # pylint: disable=protected-access
    registry.register_model_fn("custom_x", custom)
    self.assertIn("custom_x", registry.list_model_fns())
    self.assertIs(registry.resolve_model_fn("custom_x"), custom)

    self._write_module("user_inputs_e", """
        DEFAULT_PARAMS = {"rows": 7}
        def factory(mode, *, data_dir=None, batch_size=None, params=None):
          return None
        """)
    self.addCleanup(registry._input_fns.pop, "rows_x", None)  # pylint: disable=protected-access
    registry.register_input_fn("rows_x", "user_inputs_e:factory")
    self.assertEqual(registry.input_default_params("rows_x"), {"rows": 7})

  def test_register_rejects_bad_name_and_target(self):
    with self.assertRaisesRegex(errors.ConfigError, "identifier"):
      registry.register_model_fn("bad name", lambda features: None)
    with self.assertRaisesRegex(errors.ConfigError, "callable or"):
      registry.register_input_fn("ok_name", 42)
    self.assertNotIn("ok_name", registry.list_input_fns())


class DependencyDirectionTest(absltest.TestCase):

  def _imported_modules(self, path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
      if isinstance(node, ast.Import):
        names.update(alias.name for alias in node.names)
      elif isinstance(node, ast.ImportFrom) and node.module:
        names.add(node.module)
    return names

  def test_harness_never_imports_examples(self):
    offenders = []
    for path in sorted((_ROOT / "harness").rglob("*.py")):
      for name in self._imported_modules(path):
        if name.split(".")[0] in ("model_fns", "input_fns"):
          offenders.append(f"{path.relative_to(_ROOT)} imports {name}")
    self.assertEqual(offenders, [])

  def test_registry_imports_no_tensorflow(self):
    names = self._imported_modules(_ROOT / "harness" / "cli" / "registry.py")
    self.assertEqual(
        sorted(n for n in names if "tensorflow" in n or n == "harness._tf"
               or n.split(".")[0] in ("model_fns", "input_fns")), [])

  def test_import_loads_no_example_package(self):
    code = ("import sys, harness.cli.registry; "
            "print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('model_fns', 'input_fns')))")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=_ROOT, capture_output=True,
        text=True, timeout=120, check=False)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    self.assertEqual(result.stdout.strip(), "[]")


if __name__ == "__main__":
  absltest.main()
