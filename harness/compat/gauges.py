"""tf.estimator 2.15's private API-usage gauges, which libraries set.

    from tensorflow_estimator.python.estimator import estimator
    estimator._canned_estimator_api_gauge.get_cell("Classifier").set("DNN")

2.15 reported these to TensorFlow's monitoring; harness only keeps the last
value set per cell in this process (nothing is exported). tensorflow-privacy's
DP canned estimators set `_canned_estimator_api_gauge`. No TensorFlow here.
"""

import threading

__all__ = ["UsageGauge", "ESTIMATOR_API", "CANNED_ESTIMATOR_API",
           "TPU_ESTIMATOR"]


class _Cell:
  """One labelled value of a gauge: `set(value)`, `value()`."""

  def __init__(self, default):
    self._value = default

  def set(self, value):
    self._value = value

  def value(self):
    return self._value


class UsageGauge:
  """A gauge with TensorFlow monitoring's `get_cell(*labels)` interface.

  Args:
    name: the metric name 2.15 used (`/tensorflow/api/estimator/...`).
    description: what it counts.
    *label_names: the names of its labels (one label value each per cell).
    default: a cell's value before `set` (False for a bool gauge, "" for a
      string gauge).
  """

  def __init__(self, name, description, *label_names, default=None):
    self.name = name
    self.description = description
    self.label_names = label_names
    self._default = default
    self._cells = {}
    self._lock = threading.Lock()

  def get_cell(self, *labels):
    if len(labels) != len(self.label_names):
      raise ValueError(
          f"{self.name} takes {len(self.label_names)} label(s) "
          f"{list(self.label_names)}, given {len(labels)}: {list(labels)}.")
    with self._lock:
      return self._cells.setdefault(labels, _Cell(self._default))


ESTIMATOR_API = UsageGauge("/tensorflow/api/estimator",
                           "estimator api usage", "method", default=False)
CANNED_ESTIMATOR_API = UsageGauge(
    "/tensorflow/api/estimator/canned_estimator",
    "Gauge to track the type of canned estimator used", "ClassType",
    default="")
TPU_ESTIMATOR = UsageGauge("/tensorflow/api/tpu_estimator",
                           "Whether the program uses tpu estimator or not.",
                           default=False)
