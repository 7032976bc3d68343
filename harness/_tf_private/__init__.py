"""Every use of TensorFlow internals in harness, in one place.

TensorFlow 2.21 still ships the v1 distribution strategies harness drives in
graph mode, but a few things the Estimator needs have no public API. Each
function of this package is one such access, with the reason and the
TensorFlow versions it was checked on (2.21.0): `distribute` (the v1
strategies), `training` (hooks, savers, variables), `keras` (tf_keras). If a
TensorFlow upgrade breaks harness, this package is where it breaks.
tests/test_tf_private_guard.py fails on any private TF access (`x._y`,
`getattr(x, "_y")`, `tensorflow.python`) elsewhere.

No `tensorflow.python.*` module is imported: every access is a private
attribute of a public object (or a patch of a public class), which keeps the
surface to what is listed here.
"""

# pylint: disable=unused-import
from harness._tf_private.distribute import collective_communication_options
from harness._tf_private.distribute import collective_num_devices_per_worker
from harness._tf_private.distribute import localize_tf_config_resolver
from harness._tf_private.distribute import loss_scaled_by_optimizer
from harness._tf_private.distribute import mirrored_cross_device_ops
from harness._tf_private.distribute import override_collective_local_devices
from harness._tf_private.distribute import reinitialize_collective_local
from harness._tf_private.distribute import scale_loss_for_estimator
from harness._tf_private.distribute import set_collective_communication_options
from harness._tf_private.distribute import set_collective_key_base
from harness._tf_private.distribute import server_class
from harness._tf_private.distribute import set_ps_gpus_per_worker
from harness._tf_private.distribute import started_in_process_server
from harness._tf_private.keras import is_graph_network
from harness._tf_private.keras import keras_compiled_metrics
from harness._tf_private.keras import keras_loss_and_train_op
from harness._tf_private.keras import keras_restore_subclassed
from harness._tf_private.keras import keras_3_holders
from harness._tf_private.keras import keras_track
from harness._tf_private.keras import keras_weight_compiled_loss
from harness._tf_private.keras import loaded_keras_name
from harness._tf_private.keras import reroute_keras_to_tf_keras
from harness._tf_private.keras import seed_keras_initializers
from harness._tf_private.training import add_saving_listeners
from harness._tf_private.training import moved_modules
from harness._tf_private.training import remove_autograph_files
from harness._tf_private.training import GLOBAL_STEP_READ_KEY
from harness._tf_private.training import global_step_read
from harness._tf_private.training import initializer_ops
from harness._tf_private.training import rebuild_saver
from harness._tf_private.training import RetentionSaver
from harness._tf_private.training import set_hook_steps_per_run
from harness._tf_private.training import SUMMARY_WRITER_INIT_KEY
from harness._tf_private.training import variable_fetch_tensor
