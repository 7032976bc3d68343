"""Makes legacy `tf.estimator` code run on harness, unchanged.

    import harness.compat  # pylint: disable=unused-import
    import tensorflow as tf

    est = tf.estimator.Estimator(model_fn)            # a harness.Estimator
    from tensorflow_estimator.python.estimator import run_config  # harness's

Importing this module (or running a script under `python -m harness.run`)
puts four kinds of aliases in place, and nothing else:

* `tf.estimator`, `tf.compat.v1.estimator` and `tf.compat.v2.estimator` on
  every TensorFlow API module object (the v1 and v2 namespaces are distinct
  objects in TensorFlow, and so are ours);
* `sys.modules` entries for the module paths of tensorflow_estimator 2.15
  that legacy code and libraries import (`tensorflow_estimator.python.
  estimator.estimator`, `.run_config`, `.export.export_lib`, ...), mirrored
  under `tensorflow.python.estimator`;
* a finder that answers any other `tensorflow_estimator.*` module with
  `NotSupportedError` (also a `ModuleNotFoundError`) naming it;
* TensorFlow modules TF 2.16+ keeps at a new path, back at the path
  2.15-era libraries import (`tensorflow.python.training.tracking.
  graph_view`, for AdaNet; `harness._tf_private.moved_modules`).

With tensorflow-estimator 2.15 installed too (TFMA and TFX still require
it), the aliases win in either import order: after `import harness.compat`
every `tensorflow_estimator` path meets an alias; an `import
tensorflow_estimator` before it fails inside the 2.15 package on TF 2.16+,
and `harness.compat` drops what it left. A 2.15 module that imported whole
first raises `EstimatorImportedFirstError` naming the package to uninstall.

Every alias module forwards each attribute access to harness's current
object, so nothing is copied and nothing goes stale. A public name that
harness lacks raises `harness.errors.NotSupportedError` naming it. Importing
twice, or calling `install()` again, changes nothing.

The table of module paths and names and the alias module type are
`harness/compat/aliases.py`; `harness/compat/installer.py` installs them.

Importing harness sets `TF_USE_LEGACY_KERAS=1` before TensorFlow loads; if
Keras 3 was already loaded, the import raises `harness.errors.
LegacyKerasError` unchanged.
"""

# pylint: disable=unused-import
from harness.compat.installer import EstimatorImportedFirstError
from harness.compat.installer import ModuleNotProvidedError
from harness.compat.installer import V1_NAMESPACE
from harness.compat.installer import V2_NAMESPACE
from harness.compat.installer import check_keras_2
from harness.compat.installer import install
from harness.compat.installer import register_module

install()
