"""Sorts a surviving mutmut mutant into a category, from its diff alone.

A survivor is "explained" only by a narrow, mechanical rule:

- "message text": every change is a string literal (or a literal part of
  an f-string, or the whole literal made None) that sits in the message of a `raise`, of a call to a
  raising helper (`fail` / `fail_215` of harness/cluster/tf_config_checks.py,
  which always raise) or of a logging call. The tests pin each error's
  exception type and its value and fix fragments
  (tests/test_cluster.py::ParseErrorTest::test_rejected and
  ValidateTest::test_rejected), not every word.
- "equivalent": the exact change is listed in `EQUIVALENT` below with the
  reason no program can tell the mutant from the original.

Everything else is "unexplained" and is listed one by one in the report.
"""

import ast
import textwrap

__all__ = ["CATEGORIES", "EQUIVALENT", "RAISING_HELPERS", "classify"]

CATEGORIES = ("message text", "equivalent", "unexplained")

# Functions that always raise: their string arguments are message text.
RAISING_HELPERS = frozenset({"fail", "fail_215"})
_LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error",
                              "exception", "critical", "fatal"})

# (function, "old -> new" as mutation_report.change_of writes it): why no
# caller can see the difference.
EQUIVALENT = {
    ("harness.cluster.tf_config.x__json_type",
     "return type(value).__name__ -> return type(None).__name__"):
        "unreachable: its one caller first passes the value to json.dumps, "
        "which only encodes the types the loop above already names",
    ("harness.cluster.tf_config.x__load_json",
     "line = text.splitlines()[e.lineno - 1] if text.splitlines() else text"
     " -> line = text.splitlines()[e.lineno - 1] if (text.splitlines()) or "
     "True else text"):
        "both callers pass non-blank text, so text.splitlines() is never "
        "empty and the condition is always true",
    ("harness.cluster.tf_config.x__parse_cluster", "else -1) -> else +1)"):
        "the sort key of a non-digit key: any such key fails the 0..n-1 "
        "check whatever its place",
    ("harness.cluster.tf_config.x__parse_cluster", "else -1) -> else -2)"):
        "the sort key of a non-digit key: any such key fails the 0..n-1 "
        "check whatever its place",
    ("harness.cluster.tf_config.x_from_environ",
     "return parse_tf_config(text, source=TF_CONFIG_ENV) -> return "
     "parse_tf_config(text, )"):
        "drops a keyword whose value is the parameter's default",
    ("harness.cluster.tf_config_rules.x_validate",
     "near = difflib.get_close_matches(wanted, list(info.unknown_keys), n=1,"
     " -> near = difflib.get_close_matches(wanted, list(info.unknown_keys), "
     "n=2,"):
        "only near[0], the best match, is read; n=2 returns the same first "
        "match",
}


def _function(source):
  tree = ast.parse(textwrap.dedent(source))
  function = tree.body[0]
  function.name = "f"  # The original and the mutant differ in name only.
  return function


def _is_text(node):
  return isinstance(node, ast.JoinedStr) or (
      isinstance(node, ast.Constant) and isinstance(node.value, str))


def _is_none(node):
  return isinstance(node, ast.Constant) and node.value is None


def _literal_parts(node):
  """A text node with its literal parts blanked (its expressions kept)."""
  if isinstance(node, ast.JoinedStr):
    return [ast.dump(v) for v in node.values
            if not isinstance(v, ast.Constant)]
  return []


def _masked(node):
  """ast.dump of `node` with each string literal, f-string and None
  blanked (so a literal changed, or made None, compares equal)."""
  def blank(sub):
    if _is_text(sub) or _is_none(sub):
      return "TEXT"
    if isinstance(sub, ast.AST):
      return (type(sub).__name__,
              [(f, blank(getattr(sub, f, None))) for f in sub._fields
               if f not in ("ctx", "kind", "type_comment")])
    if isinstance(sub, list):
      return [blank(s) for s in sub]
    return sub
  return repr(blank(node))


def _leaves(node):
  """Pre-order nodes, a text or None node counted as one leaf."""
  yield node
  if _is_text(node) or _is_none(node):
    return
  for child in ast.iter_child_nodes(node):
    yield from _leaves(child)


def _parents(tree):
  return {child: parent for parent in ast.walk(tree)
          for child in ast.iter_child_nodes(parent)}


def _call_name(call):
  func = call.func
  return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _in_message(constant, parents):
  """The literal is a direct part of a raise's, raising helper's or
  logging call's arguments (not, e.g., a dict key inside them)."""
  parent = parents.get(constant)
  if not isinstance(parent, (ast.JoinedStr, ast.Call, ast.keyword)):
    return False
  node = parent
  while node is not None:
    if isinstance(node, ast.Raise):
      return True
    if isinstance(node, ast.Call) and (
        _call_name(node) in RAISING_HELPERS or
        isinstance(node.func, ast.Attribute) and
        node.func.attr in _LOGGING_METHODS):
      return True
    if isinstance(node, (ast.stmt, ast.Lambda)):
      return False
    node = parents.get(node)
  return False


def _message_text_only(original, mutant):
  if _masked(original) != _masked(mutant):
    return False
  parents = _parents(original)
  changed = []
  for a, b in zip(_leaves(original), _leaves(mutant)):
    if not (_is_text(a) or _is_none(a)) or ast.dump(a) == ast.dump(b):
      continue
    if not _is_text(a) or not (_is_none(b) or
                               _literal_parts(a) == _literal_parts(b)):
      return False  # None made text, or an f-string's expression changed.
    changed.append(a)
  return bool(changed) and all(_in_message(c, parents) for c in changed)


def classify(function_key, original_source, mutant_source, change):
  """The category of one survivor.

  Args:
    function_key: the mutated function's name as mutmut keys it, without
      `__mutmut_<n>` (e.g. "harness.cluster.tf_config.x__parse_cluster").
    original_source, mutant_source: the two functions' source (`def ...`).
    change: the mutant's change as mutation_report.change_of writes it.
  """
  if (function_key, change) in EQUIVALENT:
    return "equivalent"
  try:
    original = _function(original_source)
    mutant = _function(mutant_source)
  except SyntaxError:
    return "unexplained"
  if _message_text_only(original, mutant):
    return "message text"
  return "unexplained"
