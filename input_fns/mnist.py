"""MNIST through TensorFlow Datasets (downloads it once into `data_dir`).

``tfds.load("mnist")``'s 60k train / 10k test splits, normalised to [0, 1]::

    python -m harness.main --model_fn=mnist_cnn --input_fn=mnist \\
        --data_dir=~/tensorflow_datasets --model_dir=/tmp/mnist_cnn

Machines without network cannot download it; then this input_fn says so at
once (it does not wait for TFDS's retries) and names the offline choices:
``--input_fn=mnist_idx`` (real digits: the 10k test split shipped with
harness in ``input_fns/data/mnist``) or ``--input_fn=synthetic``.
"""

import socket

from harness import errors
from harness._tf import tf
import input_fns

__all__ = ["DEFAULT_PARAMS", "DEFAULT_BATCH_SIZE", "make_input_fn"]

DEFAULT_BATCH_SIZE = 64
DEFAULT_PARAMS = {
    "download": True,         # False: fail unless already in data_dir
    "shuffle_buffer": 10000,  # examples; TRAIN only
}

_SOURCE = "input_fns.mnist"
_NAME = "mnist"
_DOWNLOAD_HOST = ("storage.googleapis.com", 443)
_SPLITS = {input_fns.TRAIN: "train", input_fns.EVAL: "test",
           input_fns.PREDICT: "test"}
_OFFLINE_FIX = (
    "Offline alternatives: --input_fn=mnist_idx (the real 10k MNIST test "
    "split, shipped with harness), or --input_fn=synthetic (generated, "
    "MNIST-shaped).")


def _can_reach(address, timeout_secs=5.0):
  """Returns whether a TCP connection to `address` opens in time."""
  try:
    with socket.create_connection(address, timeout=timeout_secs):
      return True
  except OSError:
    return False


def _prepared_builder(data_dir, download):
  """Returns the TFDS builder of MNIST with its files in `data_dir`."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  builder = tfds.builder(_NAME, data_dir=data_dir)
  if builder.is_prepared():
    return builder
  where = builder.data_dir
  if not download:
    raise errors.InputFnError(
        f"{_SOURCE}: TFDS '{_NAME}' is not prepared in {where} and params "
        f"download=False. Fix: allow the download (--params=download=true) "
        f"on a machine with network, or point --data_dir at a TFDS folder "
        f"holding it. {_OFFLINE_FIX}")
  if not _can_reach(_DOWNLOAD_HOST):
    raise errors.InputFnError(
        f"{_SOURCE}: TFDS '{_NAME}' is not in {where} and cannot be "
        f"downloaded: {_DOWNLOAD_HOST[0]}:{_DOWNLOAD_HOST[1]} is unreachable "
        f"(no network?). {_OFFLINE_FIX}")
  try:
    builder.download_and_prepare()
  except Exception as e:  # pylint: disable=broad-except
    # TFDS raises many types (network, checksum, disk); all end the same way.
    raise errors.InputFnError(
        f"{_SOURCE}: TFDS could not download and prepare '{_NAME}' into "
        f"{where}: {type(e).__name__}: {e}. {_OFFLINE_FIX}") from e
  return builder


def _normalise(image, label):
  return ({"image": tf.cast(image, tf.float32) / 255.0},
          tf.cast(label, tf.int64))


def make_input_fn(mode, *, data_dir=None, batch_size=None, params=None):
  """Returns an input_fn over TFDS MNIST, downloading it first if needed.

  Args:
    mode: ModeKeys.TRAIN (split "train", shuffled, repeated), EVAL or
      PREDICT (split "test", one pass).
    data_dir: the TFDS data folder (None: TFDS's default,
      ~/tensorflow_datasets).
    batch_size: global batch size (default `DEFAULT_BATCH_SIZE`).
    params: overrides of `DEFAULT_PARAMS`.

  Returns:
    `input_fn(input_context=None)` -> Dataset of
    ({"image": float32 [b, 28, 28, 1]}, int64 [b]).

  Raises:
    InputFnError: the data is absent and cannot be downloaded; the message
      names the offline alternatives.
  """
  input_fns.check_mode(mode, _SOURCE)
  batch_size = input_fns.check_batch_size(
      batch_size, DEFAULT_BATCH_SIZE, _SOURCE)
  params = input_fns.merge_params(DEFAULT_PARAMS, params)
  builder = _prepared_builder(data_dir, bool(params["download"]))
  split = _SPLITS[mode]
  shuffle_buffer = int(params["shuffle_buffer"])

  def input_fn(input_context=None):
    dataset = builder.as_dataset(split=split, as_supervised=True)
    dataset, per_replica_batch = input_fns.distribute(
        dataset, batch_size, input_context)
    dataset = dataset.map(
        _normalise, num_parallel_calls=tf.data.AUTOTUNE).cache()
    if mode == input_fns.TRAIN:
      if shuffle_buffer > 1:
        dataset = dataset.shuffle(shuffle_buffer)
      dataset = dataset.repeat()
    return dataset.batch(per_replica_batch).prefetch(tf.data.AUTOTUNE)

  return input_fn
