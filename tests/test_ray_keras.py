"""Ray Train loads tf.keras as Keras 3 before harness: what harness does.

Ray Train's `ray.train.tensorflow` touches `tf.keras` when imported, which
every Ray worker does before the training function runs. Without Ray
installed, these tests stand in a module of that name that does the same,
in a fresh interpreter without TF_USE_LEGACY_KERAS, then import
harness.compat. tests/test_ray.py runs the real thing.
"""

import json
import sys

from absl.testing import absltest

from tests import _support
from tests import conftest

_TIMEOUT_SECS = 240
# A stand-in for Ray's module: what it does to tf.keras at import.
_FAKE_RAY = (
    "import sys, types\n"
    "for name in ('ray', 'ray.train', 'ray.train.tensorflow'):\n"
    "  sys.modules[name] = types.ModuleType(name)\n"
    "exec('from tensorflow import keras\\nkeras.Model', "
    "vars(sys.modules['ray.train.tensorflow']))\n"
    "import tensorflow as tf\n")
_REPORT = (
    "import json\n"
    "try:\n"
    "  import harness.compat\n"
    "except Exception as e:\n"
    "  print(json.dumps({'error': type(e).__name__, 'message': str(e)}))\n"
    "  raise SystemExit(0)\n"
    "from tensorflow.keras import layers\n"
    "with tf.Graph().as_default():\n"
    "  y = tf.compat.v1.layers.dense(tf.zeros([2, 3]), 1)\n"
    "  model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
    "  model(tf.zeros([2, 3]))\n"
    "print(json.dumps({'keras': tf.keras.layers.Dense.__module__,\n"
    "    'v1_keras': tf.compat.v1.keras.layers.Dense.__module__,\n"
    "    'layers': layers.Dense.__module__,\n"
    "    'estimator': tf.estimator.Estimator.__module__}))\n")


def _run(code):
  env = {k: v for k, v in conftest.child_env().items()
         if k != "TF_USE_LEGACY_KERAS"}
  result = _support.run([sys.executable, "-c", code],
                        timeout_secs=_TIMEOUT_SECS, env=env)
  if result.returncode != 0 or not result.stdout.strip():
    raise AssertionError(f"the child failed\n{result.description}")
  return json.loads(result.stdout.strip().splitlines()[-1]), result


class RayLoadedKeras3Test(absltest.TestCase):

  def test_keras_3_loaded_by_ray_alone_becomes_tf_keras(self):
    report, result = _run(_FAKE_RAY + _REPORT)
    self.assertNotIn("error", report, report)
    self.assertTrue(report["keras"].startswith("tf_keras"), report)
    self.assertTrue(report["v1_keras"].startswith("tf_keras"), report)
    self.assertTrue(report["layers"].startswith("tf_keras."), report)
    self.assertTrue(report["estimator"].startswith("harness"), report)
    self.assertIn("Ray Train (ray.train.tensorflow) had loaded tf.keras as "
                  "Keras 3", result.stderr)

  def test_keras_3_held_by_user_code_names_rays_fix(self):
    # The user's own module (here __main__) keeps Keras 3's tf.keras.
    report, result = _run(_FAKE_RAY + "user_keras = tf.keras.layers\n"
                          "user_keras = tf.keras\n" + _REPORT)
    self.assertEqual(report.get("error"), "LegacyKerasError", report)
    self.assertIn('ray.init(runtime_env={"env_vars": '
                  '{"TF_USE_LEGACY_KERAS": "1"}})', report["message"])
    self.assertIn("held by __main__", result.stderr)

  def test_without_ray_the_error_is_unchanged(self):
    report, _ = _run("import tensorflow as tf\ntf.keras.Model\n" + _REPORT)
    self.assertEqual(report.get("error"), "LegacyKerasError", report)
    self.assertNotIn("ray.init", report["message"])
    self.assertIn("Fix: import harness", report["message"])


if __name__ == "__main__":
  absltest.main()
