"""Choosing which versioned export folders to keep (tf.estimator 2.15's gc).

    paths = gc.get_paths("/tmp/exports", parser=gc.version_parser)
    for path in gc.negation(gc.largest_export_versions(3))(paths):
      tf.io.gfile.rmtree(path.path)      # all but the 3 newest versions

A filter takes a list of `Path(path, export_version)` and returns the ones
it keeps, sorted; filters combine with `union` and `negation`. The
exporters collect their old exports with these. 2.15 spelled the functions
with a leading underscore (`gc._largest_export_versions`); the alias module
`tensorflow_estimator.python.estimator.gc` serves both spellings.
"""

import collections
import math
import os

from harness._tf import tf

__all__ = [
    "Path", "largest_export_versions", "one_of_every_n_export_versions",
    "mod_export_version", "union", "negation", "get_paths", "version_parser",
]

Path = collections.namedtuple("Path", "path export_version")


def largest_export_versions(n):
  """A filter keeping the `n` paths with the largest export versions."""
  def keep(paths):
    versioned = [p for p in paths if p.export_version is not None]
    versioned.sort(key=lambda p: p.export_version)
    return sorted(versioned[max(0, len(versioned) - n):])
  return keep


def one_of_every_n_export_versions(n):
  """A filter keeping the largest path of each interval [0, n], (n, 2n], ..."""
  def keep(paths):
    largest = {}
    for p in paths:
      if p.export_version is None:
        continue
      interval = (math.floor((p.export_version - 1) / n)
                  if p.export_version else 0)
      if (interval not in largest or
          largest[interval].export_version < p.export_version):
        largest[interval] = p
    return sorted(largest.values())
  return keep


def mod_export_version(n):
  """A filter keeping the paths whose export version is a multiple of `n`."""
  def keep(paths):
    return sorted(p for p in paths if p.export_version % n == 0)
  return keep


def union(lf, rf):
  """A filter keeping what either `lf` or `rf` keeps."""
  def keep(paths):
    return sorted(set(lf(paths)) | set(rf(paths)))
  return keep


def negation(f):
  """A filter keeping what `f` drops."""
  def keep(paths):
    return sorted(set(paths) - set(f(paths)))
  return keep


def get_paths(base_dir, parser):
  """The `Path`s in `base_dir` that `parser` keeps, sorted.

  Args:
    base_dir: the directory to list (str or bytes), read with tf.io.gfile.
    parser: `fn(Path(path, None)) -> Path or None`: fills in the export
      version, or drops the entry by returning None.
  """
  base = tf.compat.as_str_any(base_dir)
  paths = []
  for name in tf.io.gfile.listdir(base):
    name = tf.compat.as_str_any(name).rstrip("/")
    parsed = parser(Path(os.path.join(base, name), None))
    if parsed:
      paths.append(parsed)
  return sorted(paths)


def version_parser(path):
  """The exporters' parser: a 10-digit name (a timestamp) is a version.

  Every such folder counts, whoever wrote it, as in 2.15.
  """
  name = os.path.basename(path.path.rstrip("/"))
  if not (len(name) == 10 and name.isdigit()):
    return None
  return path._replace(export_version=int(name))
