"""MNIST from the original IDX files in a local folder (no network needed).

Reads ``{split}-images-idx3-ubyte[.gz]`` and ``{split}-labels-idx1-ubyte[.gz]``
for split ``train`` and ``t10k`` with TensorFlow ops (nothing is embedded in
the graph). With both splits present, TRAIN reads ``train-*`` and EVAL reads
``t10k-*``. With only the 10k test split (as in ``DEFAULT_DATA_DIR``, the
copy shipped in ``input_fns/data/mnist``), TRAIN takes its first
``train_examples`` (8,000) digits and EVAL its last ``eval_examples``
(2,000)::

    python -m harness.main --model_fn=mnist_cnn --input_fn=mnist_idx \\
        --model_dir=/tmp/mnist_cnn
"""

import gzip
import os
import struct

from harness import errors
from harness._tf import tf
import input_fns

__all__ = ["DEFAULT_PARAMS", "DEFAULT_BATCH_SIZE", "DEFAULT_DATA_DIR",
           "make_input_fn", "find_split", "read_header"]

DEFAULT_BATCH_SIZE = 64
# The MNIST test split shipped in the package (see its README.md): the data
# when no data_dir is given, so the main job needs nothing but the checkout.
DEFAULT_DATA_DIR = os.path.join(os.path.dirname(__file__), "data", "mnist")
DEFAULT_PARAMS = {
    "train_examples": 8000,   # used only when train-* files are absent
    "eval_examples": 2000,    # idem: the last N of the t10k files
    "shuffle_buffer": 10000,  # examples; TRAIN only
}

_IMAGE_MAGIC = 2051
_LABEL_MAGIC = 2049
_ROWS = _COLS = 28
_SOURCE = "input_fns.mnist_idx"


def _file_names(split):
  return (f"{split}-images-idx3-ubyte", f"{split}-labels-idx1-ubyte")


def find_split(data_dir, split):
  """Returns (images_path, labels_path) of `split` in `data_dir`, or None.

  Each file may be gzip-compressed (".gz") or not; the ".gz" one wins.
  """
  paths = []
  for name in _file_names(split):
    for candidate in (name + ".gz", name):
      path = os.path.join(data_dir, candidate)
      if os.path.isfile(path):
        paths.append(path)
        break
    else:
      return None
  return tuple(paths)


def read_header(path, magic):
  """Returns the dimensions in the header of the IDX file at `path`.

  Raises:
    InputFnError: the file is not an IDX file with `magic`.
  """
  opener = gzip.open if path.endswith(".gz") else open
  num_dims = magic & 0xFF
  try:
    with opener(path, "rb") as f:
      header = f.read(4 + 4 * num_dims)
  except OSError as e:
    raise errors.InputFnError(
        f"{_SOURCE}: cannot read {path}: {e}. Fix: re-download the MNIST IDX "
        "files (a .gz file must be complete gzip data).") from e
  if len(header) < 4 + 4 * num_dims or (
      struct.unpack(">I", header[:4])[0] != magic):
    raise errors.InputFnError(
        f"{_SOURCE}: {path} is not an MNIST IDX file (expected magic number "
        f"{magic} in its first 4 bytes). Fix: point --data_dir at the "
        "original files, e.g. t10k-images-idx3-ubyte.gz.")
  return struct.unpack(f">{num_dims}I", header[4:])


def _check_split(images_path, labels_path):
  count, rows, cols = read_header(images_path, _IMAGE_MAGIC)
  (num_labels,) = read_header(labels_path, _LABEL_MAGIC)
  if (rows, cols) != (_ROWS, _COLS) or count != num_labels:
    raise errors.InputFnError(
        f"{_SOURCE}: {images_path} holds {count} images of {rows}x{cols} and "
        f"{labels_path} {num_labels} labels; expected 28x28 images, one label "
        "each. Fix: use matching MNIST image and label files.")
  return count


def _missing_error(data_dir, why):
  # The file names and where to get them: docs/ERRORS.md#mnist-data.
  return errors.InputFnError(
      f"{_SOURCE}: data_dir {data_dir} {why}. Fix: --data_dir=<IDX dir>, "
      "--input_fn=mnist or synthetic; docs/ERRORS.md#mnist-data")


def _records(images_path, labels_path):
  """Returns an unbatched dataset of (uint8 image bytes, uint8 label)."""
  def read(path, record_bytes, header_bytes):
    return tf.data.FixedLengthRecordDataset(
        [path], record_bytes=record_bytes, header_bytes=header_bytes,
        compression_type="GZIP" if path.endswith(".gz") else "")
  return tf.data.Dataset.zip((
      read(images_path, _ROWS * _COLS, 16), read(labels_path, 1, 8)))


def _decode(image_bytes, label_bytes):
  image = tf.io.decode_raw(image_bytes, tf.uint8)
  image = tf.cast(tf.reshape(image, [_ROWS, _COLS, 1]), tf.float32) / 255.0
  label = tf.cast(tf.reshape(tf.io.decode_raw(label_bytes, tf.uint8), []),
                  tf.int64)
  return {"image": image}, label


def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  """Returns an input_fn reading MNIST IDX files from `data_dir`.

  Args:
    mode: ModeKeys.TRAIN (shuffled, repeated), EVAL or PREDICT (one pass).
    data_dir: folder holding the IDX files (None: `DEFAULT_DATA_DIR`).
    batch_size: global batch size (default `DEFAULT_BATCH_SIZE`).
    params: overrides of `DEFAULT_PARAMS`.

  Returns:
    `input_fn(input_context=None)` -> Dataset of
    ({"image": float32 [b, 28, 28, 1]}, int64 [b]).

  Raises:
    InputFnError: missing folder or files, bad headers, or split sizes that
      do not fit the t10k files.
  """
  input_fns.check_mode(mode, _SOURCE)
  batch_size = input_fns.check_batch_size(
      batch_size, DEFAULT_BATCH_SIZE, _SOURCE)
  params = input_fns.merge_params(DEFAULT_PARAMS, params)
  if not data_dir:
    data_dir = DEFAULT_DATA_DIR
  if not os.path.isdir(data_dir):
    resolved = os.path.abspath(data_dir)
    raise _missing_error(data_dir, "is not a folder" + (
        f" (resolved: {resolved})" if resolved != data_dir else ""))
  test = find_split(data_dir, "t10k")
  train = find_split(data_dir, "train")
  if test is None:
    raise _missing_error(data_dir, "has no t10k image/label pair")
  test_count = _check_split(*test)
  if train is not None:
    _check_split(*train)
    paths, skip, take = (train if mode == input_fns.TRAIN else test), 0, -1
  else:
    train_examples = int(params["train_examples"])
    eval_examples = int(params["eval_examples"])
    if (train_examples <= 0 or eval_examples <= 0 or
        train_examples + eval_examples > test_count):
      raise errors.InputFnError(
          f"{_SOURCE}: params train_examples={train_examples} and "
          f"eval_examples={eval_examples} must be positive and add up to at "
          f"most the {test_count} digits of {test[0]} (only the test split "
          "is present, so train and eval are carved from it without "
          "overlap). Fix: lower them, e.g. --params=train_examples=8000,"
          "eval_examples=2000.")
    if mode == input_fns.TRAIN:
      paths, skip, take = test, 0, train_examples
    else:
      paths, skip, take = test, test_count - eval_examples, eval_examples
  shuffle_buffer = int(params["shuffle_buffer"])

  def input_fn(input_context=None):
    dataset = _records(*paths).skip(skip).take(take)
    dataset, per_replica_batch = input_fns.distribute(
        dataset, batch_size, input_context)
    dataset = dataset.map(_decode, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.cache()
    if mode == input_fns.TRAIN:
      if shuffle_buffer > 1:
        dataset = dataset.shuffle(shuffle_buffer)
      dataset = dataset.repeat()
    return dataset.batch(per_replica_batch).prefetch(tf.data.AUTOTUNE)

  return input_fn
