"""Names the `harness.main` binary accepts for `--model_fn` and `--input_fn`.

A name is either a built-in (``mnist_cnn``, ``mnist_idx``, ...) or the
user's own function written as ``package.module:function`` (or just
``package.module``, meaning its ``model_fn`` / ``make_input_fn``)::

    from harness.cli import registry

    model_fn = registry.resolve_model_fn("mnist_cnn")
    params = registry.model_default_params("mnist_cnn")  # {"learning_rate": ...}
    make_input_fn = registry.resolve_input_fn("my_pkg.data:make_input_fn")

Names resolve lazily with importlib: importing this module imports neither
TensorFlow nor `model_fns` / `input_fns` (the harness core never depends on
the examples; only the binary reaches them, and only through this table).

The contract of what a name resolves to:

* a model name -> ``model_fn(features, labels, mode, params)`` returning an
  `EstimatorSpec`; its module may define ``DEFAULT_PARAMS`` (name -> default,
  the default's type is what ``--params`` values are coerced to);
* an input name -> the factory
  ``make_input_fn(mode, *, data_dir=None, batch_size=None, params=None)``
  returning ``input_fn(input_context=None)`` (see `input_fns/__init__.py`);
  its module may define ``DEFAULT_PARAMS`` too. A tf.estimator-style
  ``input_fn`` itself (arguments among ``params``, ``mode``, ``config``,
  ``input_context``) is accepted too: it is wrapped in a factory that hands
  it to the Estimator for every mode, as tf.estimator called it.
"""

import functools
import importlib
import inspect
import re
import sys

from absl import logging

from harness import errors

__all__ = [
    "resolve_model_fn",
    "resolve_input_fn",
    "model_default_params",
    "input_default_params",
    "merged_params",
    "register_model_fn",
    "register_input_fn",
    "list_model_fns",
    "list_input_fns",
]

_BUILTIN_MODEL_FNS = {
    "linear": "model_fns.linear:model_fn",
    "mnist_cnn": "model_fns.mnist_cnn:model_fn",
    "mnist_mlp": "model_fns.mnist_mlp:model_fn",
    "mnist_dropout": "model_fns.mnist_dropout:model_fn",
    "canned_dnn_regressor": "model_fns.canned_dnn_regressor:model_fn",
}

_BUILTIN_INPUT_FNS = {
    "constant": "input_fns.constant:make_input_fn",
    "mnist": "input_fns.mnist:make_input_fn",
    "mnist_idx": "input_fns.mnist_idx:make_input_fn",
    "synthetic": "input_fns.synthetic:make_input_fn",
}

# Registered names: name -> "pkg.module:attr" string or the callable itself.
_model_fns = dict(_BUILTIN_MODEL_FNS)
_input_fns = dict(_BUILTIN_INPUT_FNS)

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TARGET_RE = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
    r"(:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)?$")

_KINDS = {
    # kind -> (table, flag, default attribute of a bare "pkg.module").
    "model_fn": (_model_fns, "--model_fn", "model_fn"),
    "input_fn": (_input_fns, "--input_fn", "make_input_fn"),
}


def list_model_fns():
  """Returns the sorted names `resolve_model_fn` accepts besides `pkg.mod:fn`."""
  return sorted(_model_fns)


def list_input_fns():
  """Returns the sorted names `resolve_input_fn` accepts besides `pkg.mod:fn`."""
  return sorted(_input_fns)


def register_model_fn(name, target):
  """Makes `name` resolve to `target` in `resolve_model_fn`.

  Args:
    name: a Python identifier, e.g. "my_resnet"; replaces an earlier entry.
    target: a callable, or a "package.module:function" string (imported only
      when the name is resolved).

  Raises:
    ConfigError: `name` is not an identifier or `target` has neither form.
  """
  _register("model_fn", name, target)


def register_input_fn(name, target):
  """Makes `name` resolve to `target` (an input_fn factory) in `resolve_input_fn`.

  Args:
    name: a Python identifier; replaces an earlier entry.
    target: a callable with the `make_input_fn` contract, or a
      "package.module:function" string.

  Raises:
    ConfigError: `name` is not an identifier or `target` has neither form.
  """
  _register("input_fn", name, target)


def resolve_model_fn(name):
  """Returns the `model_fn` a built-in name or "pkg.module:function" names.

  Args:
    name: a registered name (see `list_model_fns`) or "package.module:attr".

  Returns:
    The callable.

  Raises:
    FlagError: unknown name, module that fails to import, missing or
      non-callable attribute; the message says which and how to fix it.
  """
  return _resolve("model_fn", name)


def resolve_input_fn(name):
  """Returns the input_fn factory a built-in name or "pkg.module:function" names.

  Args:
    name: a registered name (see `list_input_fns`) or "package.module:attr".

  Returns:
    The factory `make_input_fn(mode, *, data_dir, batch_size, params)`.

  Raises:
    FlagError: as `resolve_model_fn`.
  """
  return _resolve("input_fn", name)


def model_default_params(name):
  """Returns a copy of `DEFAULT_PARAMS` of the module defining the model_fn.

  Args:
    name: as for `resolve_model_fn`.

  Returns:
    A new dict (empty when the module defines no `DEFAULT_PARAMS`).

  Raises:
    FlagError: as `resolve_model_fn`.
  """
  return _default_params("model_fn", name)


def input_default_params(name):
  """Returns a copy of `DEFAULT_PARAMS` of the module defining the input_fn.

  Raises:
    FlagError: as `resolve_input_fn`.
  """
  return _default_params("input_fn", name)


def _register(kind, name, target):
  if not isinstance(name, str) or not _NAME_RE.match(name):
    raise errors.ConfigError(
        f"Cannot register {kind} name {name!r}: a name must be a Python "
        "identifier (letters, digits, underscores), e.g. 'my_model'.")
  if not callable(target) and not (
      isinstance(target, str) and _TARGET_RE.match(target)):
    raise errors.ConfigError(
        f"Cannot register {kind} {name!r} -> {target!r}: the target must be a "
        "callable or a 'package.module:function' string.")
  _KINDS[kind][0][name] = target


def _resolve(kind, name):
  table, flag, default_attr = _KINDS[kind]
  if not isinstance(name, str) or not name:
    raise errors.FlagError(
        f"{flag}={name!r} is empty or not a string; expected one of "
        f"{sorted(table)} or 'package.module:function'.")
  target = table.get(name)
  if target is None:
    if ":" not in name and "." not in name:
      # The binary's parser puts "flag --model_fn=<name>: " before it; the
      # name stays for library callers of resolve_*.
      raise errors.FlagError(
          f"unknown {kind} {name!r}; use "
          f"{', '.join(sorted(table))} or 'package.module:function'.")
    if not _TARGET_RE.match(name):
      raise errors.FlagError(
          f"{flag}={name!r} is not of the form 'package.module:function' "
          "(dotted Python identifiers, one optional ':').")
    target = name
  if callable(target):
    return target
  module_name, _, attr = target.partition(":")
  attr = attr or default_attr
  try:
    module = importlib.import_module(module_name)
  except Exception as e:  # pylint: disable=broad-except
    # Any failure while importing user code is reported, not just ImportError.
    raise errors.FlagError(
        f"{flag}={name!r}: importing module {module_name!r} failed with "
        f"{type(e).__name__}: {e}. Fix: check the module path (it must be "
        "importable from the working directory or PYTHONPATH) and the "
        "module's own imports.") from e
  obj = module
  for part in attr.split("."):
    if not hasattr(obj, part):
      raise errors.FlagError(
          f"{flag}={name!r}: module {module_name!r} has no attribute "
          f"{attr!r}. Fix: name the function as '{module_name}:<function>'.")
    obj = getattr(obj, part)
  if not callable(obj):
    raise errors.FlagError(
        f"{flag}={name!r}: {module_name}:{attr} is a "
        f"{type(obj).__name__}, not a callable {kind}.")
  if kind == "input_fn":
    return _as_input_factory(f"{flag}={name}", f"{module_name}:{attr}", obj)
  return obj


# The arguments tf.estimator 2.15 passed an input_fn, each by name when the
# function declares it; a factory takes data_dir and batch_size.
_ESTIMATOR_INPUT_FN_ARGS = frozenset(("params", "mode", "config",
                                      "input_context"))
_FACTORY_ARGS = frozenset(("data_dir", "batch_size"))


def _as_input_factory(flag, where, fn):
  """`fn` if it is a factory; a tf.estimator input_fn wrapped in one."""
  try:
    parameters = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError):  # No signature (a builtin): as given.
    return fn
  names = [p.name for p in parameters if p.kind not in (
      p.VAR_POSITIONAL, p.VAR_KEYWORD)]
  if (_FACTORY_ARGS & set(names)
      or any(p.kind == p.VAR_KEYWORD for p in parameters)):
    return fn
  if set(names) <= _ESTIMATOR_INPUT_FN_ARGS:
    return _plain_input_fn_factory(flag, where, fn, names)
  raise errors.FlagError(
      f"{flag}: {where}({', '.join(names)}) is neither an input_fn factory "
      "(mode, *, data_dir, batch_size, params) nor a tf.estimator input_fn "
      "(params, mode, config). Fix: add to its module `def make_input_fn("
      f"mode, **kwargs): return lambda: {where.split(':')[1]}(...)` and pass "
      f"--input_fn={where.split(':')[0]}:make_input_fn")


# The plain input_fns already described (`where`): one line a process.
_PLAIN_LOGGED = set()


def _plain_input_fn_factory(flag, where, input_fn, names):
  """A factory returning `input_fn` for every mode (logged once a process)."""

  @functools.wraps(input_fn)
  def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
    del mode, params  # The Estimator passes what input_fn declares.
    if where not in _PLAIN_LOGGED:
      _PLAIN_LOGGED.add(where)
      ignored = [f for f, v in (("--data_dir", data_dir),
                                ("--batch_size", batch_size)) if v]
      logging.info(
          "input | %s is a tf.estimator input_fn(%s), not a factory: the "
          "same input serves training, evaluation and prediction, as in "
          "tf.estimator (an input that repeats needs --eval_steps and "
          "--max_predictions)%s", flag, ", ".join(names),
          f"; {' and '.join(ignored)} do not reach it" if ignored else "")
    return input_fn

  del make_input_fn.__wrapped__  # Its signature is the factory's.
  return make_input_fn


def _default_params(kind, name):
  fn = _resolve(kind, name)
  module = sys.modules.get(getattr(fn, "__module__", None) or "")
  defaults = getattr(module, "DEFAULT_PARAMS", None) or {}
  return dict(defaults)


def merged_params(job):
  """The model's and the input's DEFAULT_PARAMS, then the job's overrides."""
  params = input_default_params(job.input_fn)
  params.update(model_default_params(job.model_fn))
  params.update(job.params)
  return params
