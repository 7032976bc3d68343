"""model_dir path text: one normal form, URL detection (no TensorFlow).

The edges (`harness.main`'s flags, the Estimator and RunConfig constructors)
normalise a model_dir once; everything after uses the result as is::

    paths.normalize_model_dir("~/runs/m")      # "/home/me/runs/m"
    paths.normalize_model_dir("rel/m")         # "<cwd>/rel/m"
    paths.normalize_model_dir("gs://b/m")      # "gs://b/m" (URLs unchanged)

No file is read or created here; `harness.state.storage` does the file access.
"""

import os

__all__ = ["is_url", "normalize_model_dir"]


def is_url(path):
  """True for "scheme://..." paths (gs://, s3://, hdfs://, ram://, ...)."""
  return "://" in os.fsdecode(os.fspath(path))


def normalize_model_dir(model_dir):
  """The one form of a model_dir every task and log line uses.

  `~` is expanded and a relative local path made absolute (against the
  current directory, once, so a later chdir changes nothing); URLs such as
  `gs://bucket/m` or `ram://m/` are returned unchanged.

  Args:
    model_dir: str, bytes or os.PathLike, or None.

  Returns:
    str, or None when `model_dir` is None or empty.
  """
  if model_dir is None:
    return None
  path = os.fsdecode(os.fspath(model_dir))
  if not path:
    return None
  if is_url(path):
    return path
  # Path arithmetic on a local path (expanduser reads $HOME, abspath the
  # current directory); nothing under model_dir is touched.
  return os.path.abspath(os.path.expanduser(path))  # local-fs: normalising
